// The tier hierarchy's configuration and its validation.

package kvtier

import "fmt"

// Tier indices, as Lookup returns them and metrics report them.
const (
	GPU  = 0 // the instance's own GPU pool (not managed here)
	Host = 1 // the node's host DRAM
	Disk = 2 // the node's local disk
)

// TierName returns the name of tier index t.
func TierName(t int) string {
	switch t {
	case Host:
		return "host"
	case Disk:
		return "disk"
	}
	return "gpu"
}

// LoadPolicy says when a prefix found in a lower tier is loaded.
type LoadPolicy uint8

// Load policies.
const (
	// Always loads every lower-tier hit (vLLM's offloading connector and
	// LMCache).
	Always LoadPolicy = iota
	// CostBased loads a hit only when the load, on an idle path, takes no
	// longer than prefilling those tokens would; otherwise it recomputes.
	CostBased
)

// Spec is one tier of one node: capacity, bandwidths and per-operation
// latency.
type Spec struct {
	CapacityBytes int64
	ReadBW        float64 // bytes/s out of the tier
	WriteBW       float64 // bytes/s into the tier
	LatencyNs     int64   // per operation
}

// Node is one node's tiers and its GPUs' host links.
type Node struct {
	Host Spec
	Disk *Spec // nil: no disk tier
	// PCIeBW is the host<->device bandwidth of one GPU, per direction,
	// bytes/s; PCIeLatencyNs the latency of one copy.
	PCIeBW        float64
	PCIeLatencyNs int64
}

// Instance is one serving instance as the tiers see it.
type Instance struct {
	Node int
	GPUs int // its KV is split evenly over this many GPUs, each with its own PCIe link
	// PrefillTokensPerSec is its prefill throughput, for CostBased.
	PrefillTokensPerSec float64
}

// Config is the resolved configuration of the tier hierarchy.
type Config struct {
	BlockSize       int   // tokens per GPU block
	ChunkTokens     int   // tokens per stored chunk (a multiple of BlockSize)
	BlockBytes      int64 // KV bytes of one block of one instance (all GPUs)
	SaveDecodeCache bool  // store blocks of output tokens too
	// WriteBufferBytes bounds the bytes of stores to a node's host tier in
	// flight at once (the pinned staging buffer the copies go through);
	// chunks that do not fit are dropped (counted in Stats.Dropped).
	// 0: unbounded.
	WriteBufferBytes int64
	LoadPolicy       LoadPolicy
	Nodes            []Node
	Instances        []Instance
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.BlockSize <= 0:
		return fmt.Errorf("engine.block_size: must be > 0 (got %d)", c.BlockSize)
	case c.ChunkTokens <= 0 || c.ChunkTokens%c.BlockSize != 0:
		return fmt.Errorf("kv_tiers.chunk_tokens: must be a positive multiple of block_size %d (got %d)", c.BlockSize, c.ChunkTokens)
	case c.BlockBytes <= 0:
		return fmt.Errorf("KV bytes per block must be > 0 (got %d)", c.BlockBytes)
	case c.WriteBufferBytes < 0 || (c.WriteBufferBytes > 0 && c.WriteBufferBytes < c.BlockBytes*int64(c.ChunkTokens/c.BlockSize)):
		return fmt.Errorf("kv_tiers.write_buffer_mb: %d bytes cannot hold one %d-byte chunk; set at least the chunk's size, or 0 for unbounded",
			c.WriteBufferBytes, c.BlockBytes*int64(c.ChunkTokens/c.BlockSize))
	}
	for i, n := range c.Nodes {
		if err := n.Host.validate(fmt.Sprintf("kv_tiers.host: node %d", i)); err != nil {
			return err
		}
		if n.Disk != nil {
			if err := n.Disk.validate(fmt.Sprintf("kv_tiers.disk: node %d", i)); err != nil {
				return err
			}
		}
		if !(n.PCIeBW > 0) || n.PCIeLatencyNs < 0 {
			return fmt.Errorf("kv_tiers.pcie_gbps: node %d: host link bandwidth must be > 0 and latency (pcie_latency_us) >= 0 (got %g B/s, %d ns)", i, n.PCIeBW, n.PCIeLatencyNs)
		}
	}
	for i, in := range c.Instances {
		if in.Node < 0 || in.Node >= len(c.Nodes) || in.GPUs <= 0 {
			return fmt.Errorf("instance %d: node %d of %d, %d GPUs", i, in.Node, len(c.Nodes), in.GPUs)
		}
	}
	return nil
}

func (s *Spec) validate(what string) error {
	if s.CapacityBytes <= 0 || !(s.ReadBW > 0) || !(s.WriteBW > 0) || s.LatencyNs < 0 {
		return fmt.Errorf("%s: capacity and bandwidths must be > 0 and latency >= 0 (got %d B, read %g B/s, write %g B/s, %d ns)",
			what, s.CapacityBytes, s.ReadBW, s.WriteBW, s.LatencyNs)
	}
	return nil
}
