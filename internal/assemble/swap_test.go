package assemble

import "testing"

// TestSwapBlocks: the swap space is swap_space GiB per GPU over the bytes
// of one block on one GPU, as vLLM v0 sizes its CPU cache. Llama-3.1-8B in
// bf16 keeps 2 x 32 layers x 8 KV heads x 128 x 2 B = 128 KiB per token,
// 2 MiB per 16-token block on one GPU: 4 GiB holds 2048 blocks; with tp 2
// each GPU holds half of every block, so 4 GiB per GPU holds 4096 blocks.
func TestSwapBlocks(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       int
	}{
		{"recompute", "instances: [{count: 1}]\nkv_tiers: {}\n", 0},
		{"swap, default 4 GiB", "engine: {preemption_mode: swap}\ninstances: [{count: 1}]\nkv_tiers: {}\n", 2048},
		{"swap, 1 GiB", "engine: {preemption_mode: swap, swap_space: 1}\ninstances: [{count: 1}]\nkv_tiers: {}\n", 512},
		{"swap, tp 2", "engine: {preemption_mode: swap}\ninstances: [{count: 1, tp: 2}]\nkv_tiers: {}\n", 4096},
		{"group override", "instances: [{count: 1, engine: {preemption_mode: swap, swap_space: 2}}]\nkv_tiers: {}\n", 1024},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := buildYAML(t, tt.yaml)
			if err != nil {
				t.Fatal(err)
			}
			if got := b.instances[0].Engine.SwapBlocks; got != tt.want {
				t.Errorf("swap space %d blocks, want %d", got, tt.want)
			}
		})
	}
}
