package assemble

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/kvtier"
)

// tierConfig resolves the scenario's kv_tiers section over the built
// instances: one host tier (and disk tier) per node, sized from the
// node's host memory in the accelerator catalog unless overridden, and one
// PCIe link per GPU at the catalog's host bandwidth.
func tierConfig(s *config.Scenario, b *Built) (*kvtier.Config, error) {
	t := s.KVTiers.Resolved()
	cfg := &kvtier.Config{ChunkTokens: t.ChunkTokens, SaveDecodeCache: t.SaveDecodeCache,
		WriteBufferBytes: int64(math.Round(t.WriteBufferMB * 1e6))}
	if t.LoadPolicy == config.LoadPolicyCostBased {
		cfg.LoadPolicy = kvtier.CostBased
	}
	// Nodes that hold instances, numbered densely in order of first use
	// (an instance larger than a node spans several node ids).
	dense := map[int]int{}
	for i := range b.instances {
		in := &b.instances[i]
		if cfg.BlockSize == 0 {
			cfg.BlockSize = in.BlockSize
		} else if in.BlockSize != cfg.BlockSize {
			return nil, fmt.Errorf("kv_tiers: instance groups use block sizes %d and %d; tiers need one engine.block_size for all instances", cfg.BlockSize, in.BlockSize)
		}
		gpus := in.TP * max(in.PP, 1)
		cfg.BlockBytes = max(cfg.BlockBytes, in.kvPerToken*int64(gpus)*int64(in.BlockSize))
		node, seen := dense[in.Node]
		if !seen {
			node = len(cfg.Nodes)
			dense[in.Node] = node
			cfg.Nodes = append(cfg.Nodes, kvtier.Node{})
		}
		cfg.Instances = append(cfg.Instances, kvtier.Instance{Node: node, GPUs: gpus, PrefillTokensPerSec: in.prefillRate})
		if seen {
			continue
		}
		acc, err := b.hw.Lookup(in.Hardware)
		if err != nil {
			return nil, fmt.Errorf("kv_tiers: instance %d: %w", i, err)
		}
		n := &cfg.Nodes[node]
		n.Host = spec(t.Host, t.HostCapacityGB(float64(acc.Node.HostMemoryBytes)/1e9))
		if t.Disk != nil {
			d := spec(*t.Disk, t.Disk.CapacityGB)
			n.Disk = &d
		}
		n.PCIeBW = acc.Node.HostBandwidth
		if t.PCIeGBps > 0 {
			n.PCIeBW = t.PCIeGBps * 1e9
		}
		n.PCIeLatencyNs = int64(math.Round(*t.PCIeLatencyUs * 1000))
	}
	if t.ChunkTokens%cfg.BlockSize != 0 {
		return nil, fmt.Errorf("kv_tiers.chunk_tokens: must be a multiple of block_size %d (got %d)", cfg.BlockSize, t.ChunkTokens)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err // named by its field path
	}
	for i, n := range cfg.Nodes {
		chunk := int64(t.ChunkTokens/cfg.BlockSize) * cfg.BlockBytes
		if n.Host.CapacityBytes < chunk {
			return nil, fmt.Errorf("kv_tiers.host: node %d's host tier of %d bytes holds no chunk of %d bytes; raise capacity_gb or memory_fraction, or lower chunk_tokens", i, n.Host.CapacityBytes, chunk)
		}
		if n.Disk != nil && n.Disk.CapacityBytes < chunk {
			return nil, fmt.Errorf("kv_tiers.disk.capacity_gb: node %d's disk tier of %d bytes holds no chunk of %d bytes; raise it", i, n.Disk.CapacityBytes, chunk)
		}
	}
	return cfg, nil
}

// spec converts a resolved tier section of capacity gb.
func spec(t config.TierSpec, gb float64) kvtier.Spec {
	return kvtier.Spec{CapacityBytes: int64(gb * 1e9), ReadBW: t.ReadGBps * 1e9, WriteBW: t.WriteGBps * 1e9,
		LatencyNs: int64(math.Round(*t.LatencyUs * 1000))}
}
