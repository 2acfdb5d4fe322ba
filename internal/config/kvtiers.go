package config

// KVTiers configures the KV tiers below the GPU (docs/kv-tiers.md). Zero
// values take the defaults documented on each field.
type KVTiers struct {
	// ChunkTokens is the unit stored and looked up, tokens (a multiple of
	// engine.block_size). Default 256 (LMCache's chunk_size).
	ChunkTokens int `yaml:"chunk_tokens" json:"chunk_tokens"`
	// SaveDecodeCache stores the blocks of output tokens too (LMCache's
	// save_decode_cache; default off: prompt blocks only).
	SaveDecodeCache bool `yaml:"save_decode_cache" json:"save_decode_cache"`
	// LoadPolicy is always (load every lower-tier hit, as vLLM and LMCache
	// do; default) or cost_based (recompute when loading would take
	// longer than prefilling those tokens).
	LoadPolicy LoadPolicy `yaml:"load_policy" json:"load_policy"`
	// PCIeGBps overrides the host<->device bandwidth per GPU and
	// direction, GB/s (default: the accelerator catalog's node host_bw_gbps).
	PCIeGBps float64 `yaml:"pcie_gbps" json:"pcie_gbps"`
	// PCIeLatencyUs is the fixed cost of one host<->device copy, us
	// (default 10).
	PCIeLatencyUs *float64 `yaml:"pcie_latency_us" json:"pcie_latency_us"`
	// WriteBufferMB bounds the bytes of stores to a node's host tier in
	// flight at once, MB (the pinned staging buffer the copies go
	// through); chunks beyond it are dropped and counted. Default 0:
	// unbounded.
	WriteBufferMB float64 `yaml:"write_buffer_mb,omitempty" json:"write_buffer_mb,omitempty"`
	// Host is the node's host-DRAM tier (always present).
	Host TierSpec `yaml:"host" json:"host"`
	// Disk is the node's local-disk tier (absent: none).
	Disk *TierSpec `yaml:"disk,omitempty" json:"disk,omitempty"`
}

// TierSpec is one tier of every node.
type TierSpec struct {
	// CapacityGB is the tier's size per node, GB. Host default: the
	// catalog node's host memory x MemoryFraction. Disk: required.
	CapacityGB float64 `yaml:"capacity_gb" json:"capacity_gb"`
	// MemoryFraction (host only) is the share of the node's host memory
	// given to KV when capacity_gb is not set. Default 0.5.
	MemoryFraction float64 `yaml:"memory_fraction,omitempty" json:"memory_fraction,omitempty"`
	// ReadGBps and WriteGBps are the tier's own bandwidths, GB/s, shared
	// by the node's GPUs. Defaults: host 200 and 200 (DDR5 server memory);
	// disk 6.8 and 4.0 (one PCIe Gen4 NVMe data-center SSD).
	ReadGBps  float64 `yaml:"read_gbps" json:"read_gbps"`
	WriteGBps float64 `yaml:"write_gbps" json:"write_gbps"`
	// LatencyUs is the per-operation latency, us. Defaults: host 1, disk
	// 100.
	LatencyUs *float64 `yaml:"latency_us" json:"latency_us"`
}

// Tier defaults (docs/kv-tiers.md gives their sources).
const (
	DefaultChunkTokens       = 256
	DefaultHostFraction      = 0.5
	DefaultHostGBps          = 200
	DefaultHostLatencyUs     = 1
	DefaultDiskReadGBps      = 6.8
	DefaultDiskWriteGBps     = 4.0
	DefaultDiskLatencyUs     = 100
	DefaultPCIeLatencyUs     = 10
	maxPlausibleTierGBps     = 10000
	maxPlausibleTierCapacity = 1e6 // GB
)

// Resolved returns t with every default filled in except the host
// capacity, which depends on the node (HostCapacityGB).
func (t KVTiers) Resolved() KVTiers {
	if t.ChunkTokens == 0 {
		t.ChunkTokens = DefaultChunkTokens
	}
	if t.LoadPolicy == "" {
		t.LoadPolicy = LoadPolicyAlways
	}
	if t.PCIeLatencyUs == nil {
		v := float64(DefaultPCIeLatencyUs)
		t.PCIeLatencyUs = &v
	}
	t.Host = t.Host.resolved(DefaultHostGBps, DefaultHostGBps, DefaultHostLatencyUs)
	if t.Host.CapacityGB == 0 && t.Host.MemoryFraction == 0 {
		t.Host.MemoryFraction = DefaultHostFraction
	}
	if t.Disk != nil {
		d := t.Disk.resolved(DefaultDiskReadGBps, DefaultDiskWriteGBps, DefaultDiskLatencyUs)
		t.Disk = &d
	}
	return t
}

func (s TierSpec) resolved(read, write, lat float64) TierSpec {
	if s.ReadGBps == 0 {
		s.ReadGBps = read
	}
	if s.WriteGBps == 0 {
		s.WriteGBps = write
	}
	if s.LatencyUs == nil {
		s.LatencyUs = &lat
	}
	return s
}

// HostCapacityGB is the host tier's size on a node with hostMemoryGB of
// memory.
func (t KVTiers) HostCapacityGB(hostMemoryGB float64) float64 {
	if t.Host.CapacityGB > 0 {
		return t.Host.CapacityGB
	}
	f := t.Host.MemoryFraction
	if f == 0 {
		f = DefaultHostFraction
	}
	return hostMemoryGB * f
}

func (t *KVTiers) validate(s *Scenario, bad func(field, format string, args ...any)) {
	const p = "kv_tiers"
	if t.ChunkTokens < 0 || (t.ChunkTokens > 0 && s.Engine.BlockSize > 0 && t.ChunkTokens%s.Engine.BlockSize != 0) {
		bad(p+".chunk_tokens", "must be a positive multiple of engine.block_size %d (got %d); LMCache uses 256", s.Engine.BlockSize, t.ChunkTokens)
	}
	switch t.LoadPolicy {
	case "", LoadPolicyAlways, LoadPolicyCostBased:
	default:
		bad(p+".load_policy", "must be %s or %s (got %q)", LoadPolicyAlways, LoadPolicyCostBased, t.LoadPolicy)
	}
	if !(t.PCIeGBps >= 0) || t.PCIeGBps > maxPlausibleTierGBps {
		bad(p+".pcie_gbps", "must be in (0, %d] GB/s, or 0 for the catalog's node host_bw_gbps (got %g)", maxPlausibleTierGBps, t.PCIeGBps)
	}
	if !(t.WriteBufferMB >= 0) || t.WriteBufferMB > maxPlausibleTierCapacity*1000 {
		bad(p+".write_buffer_mb", "must be >= 0 MB (0: unbounded), at most %g (got %g)", maxPlausibleTierCapacity*1000, t.WriteBufferMB)
	}
	if t.PCIeLatencyUs != nil && (!(*t.PCIeLatencyUs >= 0) || *t.PCIeLatencyUs > MaxMicroseconds) {
		bad(p+".pcie_latency_us", "must be >= 0 and at most %g us (got %g)", float64(MaxMicroseconds), *t.PCIeLatencyUs)
	}
	t.Host.validate(p+".host", true, bad)
	if t.Disk != nil {
		t.Disk.validate(p+".disk", false, bad)
		if t.Disk.CapacityGB == 0 {
			bad(p+".disk.capacity_gb", "is required for a disk tier (GB per node), e.g. 1000")
		}
	}
	if s.Engine.PrefixCaching != nil && !*s.Engine.PrefixCaching {
		bad(p, "needs engine.enable_prefix_caching: tiers store and find prefix blocks; remove kv_tiers or enable prefix caching")
	}
}

func (s *TierSpec) validate(p string, host bool, bad func(field, format string, args ...any)) {
	if !(s.CapacityGB >= 0) || s.CapacityGB > maxPlausibleTierCapacity {
		bad(p+".capacity_gb", "must be in (0, %g] GB (got %g)", float64(maxPlausibleTierCapacity), s.CapacityGB)
	}
	if s.MemoryFraction != 0 && (!host || !(s.MemoryFraction > 0) || s.MemoryFraction > 1) {
		if !host {
			bad(p+".memory_fraction", "applies to the host tier only; set capacity_gb")
		} else {
			bad(p+".memory_fraction", "must be in (0, 1] (got %g)", s.MemoryFraction)
		}
	}
	if !(s.ReadGBps >= 0) || s.ReadGBps > maxPlausibleTierGBps {
		bad(p+".read_gbps", "must be in (0, %d] GB/s, or 0 for the default (got %g)", maxPlausibleTierGBps, s.ReadGBps)
	}
	if !(s.WriteGBps >= 0) || s.WriteGBps > maxPlausibleTierGBps {
		bad(p+".write_gbps", "must be in (0, %d] GB/s, or 0 for the default (got %g)", maxPlausibleTierGBps, s.WriteGBps)
	}
	if s.LatencyUs != nil && (!(*s.LatencyUs >= 0) || *s.LatencyUs > MaxMicroseconds) {
		bad(p+".latency_us", "must be >= 0 and at most %g us (got %g)", float64(MaxMicroseconds), *s.LatencyUs)
	}
}
