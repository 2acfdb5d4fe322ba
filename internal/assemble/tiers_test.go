package assemble

import (
	"strings"
	"testing"
)

// TestTierConfig: the host tier is sized from the catalog node (512 GB x
// 0.5 on the RTX PRO 6000 server) unless set, PCIe comes from the
// catalog's host_bw_gbps, one node's instances share one tier, and an
// instance wider than a node (tp 16 on 8-GPU nodes, two node ids) gets
// one tier.
func TestTierConfig(t *testing.T) {
	tests := []struct {
		name, yaml    string
		nodes         int
		hostBytes     int64
		pcie          float64
		instanceNodes []int
		blockBytes    int64
		wantErr       string
	}{
		{"default host, two instances on one node", "instances: [{count: 2}]\nkv_tiers: {}\n",
			1, 256e9, 63e9, []int{0, 0}, 16 * 131072, ""},
		{"override", "instances: [{count: 1}]\nkv_tiers: {pcie_gbps: 25, host: {capacity_gb: 64}}\n",
			1, 64e9, 25e9, []int{0}, 16 * 131072, ""},
		{"nine 1-GPU instances need two nodes", "instances: [{count: 9}]\nkv_tiers: {}\n",
			2, 256e9, 63e9, []int{0, 0, 0, 0, 0, 0, 0, 0, 1}, 16 * 131072, ""},
		{"tp 16 spans two node ids", "predictor: {kind: roofline}\nmodel: meta-llama/Llama-3.1-70B\nhardware: H100\ninstances: [{count: 2, tp: 16}]\nkv_tiers: {}\n",
			2, 1000e9, 63e9, []int{0, 1}, 0, ""},
		{"host smaller than a chunk", "instances: [{count: 1}]\nkv_tiers: {host: {capacity_gb: 0.01}}\n",
			0, 0, 0, nil, 0, "kv_tiers.host: node 0's host tier of 10000000 bytes holds no chunk of 33554432 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := buildYAML(t, tt.yaml)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := b.tiers
			if len(c.Nodes) != tt.nodes {
				t.Fatalf("%d nodes, want %d", len(c.Nodes), tt.nodes)
			}
			for i, n := range c.Nodes {
				if n.Host.CapacityBytes != tt.hostBytes || n.PCIeBW != tt.pcie || n.PCIeLatencyNs != 10000 || n.Disk != nil {
					t.Errorf("node %d: %+v", i, n)
				}
			}
			for i, in := range c.Instances {
				if in.Node != tt.instanceNodes[i] {
					t.Errorf("instance %d on tier node %d, want %d", i, in.Node, tt.instanceNodes[i])
				}
			}
			if tt.blockBytes > 0 && c.BlockBytes != tt.blockBytes {
				t.Errorf("block bytes %d, want %d", c.BlockBytes, tt.blockBytes)
			}
			if c.ChunkTokens != 256 || c.BlockSize != 16 {
				t.Errorf("chunk %d tokens, block %d", c.ChunkTokens, c.BlockSize)
			}
		})
	}
}
