package kv

import (
	"strings"
	"testing"

	_ "github.com/servesim/servesim/internal/testseed"
	"pgregory.net/rapid"
)

// The KV cache groups vLLM forms (kv_cache_utils.py,
// _get_kv_cache_groups_uniform_page_size), by hand.
func TestHybridGroups(t *testing.T) {
	tests := []struct {
		name              string
		full, local       int
		size, fullG, locG int
	}{
		{"gpt-oss-120b: 18 full + 18 sliding", 18, 18, 18, 1, 1},
		{"gpt-oss-20b + EAGLE: 13 full + 12 sliding (13 < 1.5 x 12)", 13, 12, 13, 1, 1},
		{"Gemma 3 27B: 10 full + 52 sliding", 10, 52, 10, 1, 6},
		{"Gemma 3 1B: 4 full + 22 sliding", 4, 22, 4, 1, 6},
		{"Llama 4 Scout: 12 full + 36 chunked", 12, 36, 12, 1, 3},
		{"Gemma 2: 21 + 21", 21, 21, 21, 1, 1},
	}
	for _, tt := range tests {
		h := Hybrid{FullLayers: tt.full, LocalLayers: tt.local}
		f, l := h.Groups()
		if h.GroupSize() != tt.size || f != tt.fullG || l != tt.locG {
			t.Errorf("%s: group size %d, groups %d full + %d local; want %d, %d + %d", tt.name, h.GroupSize(), f, l, tt.size, tt.fullG, tt.locG)
		}
	}
}

// gpt-oss-120b on one GPU in bf16, block 16: a page is 16 tokens x 2 x 8
// KV heads x 64 x 2 B = 32,768 B per layer, a pool block 18 layers of it
// (589,824 B). With 10 GiB free the pool has 10·2^30/589,824 = 18,204
// blocks; a sequence keeps ⌈128/16⌉ + 1 = 9 sliding blocks, 256 sequences
// 2,304, leaving 15,900 engine blocks (254,400 tokens of full-attention
// context; with every layer full it would be 9,102 blocks).
func TestHybridBlocksByHand(t *testing.T) {
	h := Hybrid{FullLayers: 18, LocalLayers: 18, Window: 128, PageBytes: 16 * 2 * 8 * 64 * 2, BlockSize: 16, MaxSeqs: 256}
	mem := Memory{Device: 10 << 30, Utilization: 1, KVPerToken: 1}
	engine, pool, err := h.Blocks(mem)
	if err != nil {
		t.Fatal(err)
	}
	if pool != 18204 || engine != 15900 {
		t.Errorf("pool %d, engine %d; want 18204, 15900", pool, engine)
	}
	if h.LocalBlocksPerRequest() != 9 || h.LocalReserve() != 2304 {
		t.Errorf("local blocks %d, reserve %d; want 9, 2304", h.LocalBlocksPerRequest(), h.LocalReserve())
	}
	all := Memory{Device: 10 << 30, Utilization: 1, KVPerToken: 2 * 8 * 64 * 2 * 36}
	if n, err := all.Blocks(16); err != nil || n != 9102 {
		t.Errorf("all layers full: %d blocks (%v), want 9102", n, err)
	}
	// Gemma 3 27B at tp 1: 6 sliding groups keep ⌈1024/16⌉ + 1 = 65
	// blocks per sequence each; 1,000 sequences could hold 390,000 blocks,
	// more than the pool of 10·2^30/(10 x 16 x 2 x 16 x 128 x 2 B) =
	// 8,192 blocks: the second bound applies, (8,192 − 6 x 1,000)/7 = 313
	// engine blocks.
	g := Hybrid{FullLayers: 10, LocalLayers: 52, Window: 1024, PageBytes: 16 * 2 * 16 * 128 * 2, BlockSize: 16, MaxSeqs: 1000}
	if g.LocalReserve() != 390000 {
		t.Errorf("gemma reserve %d, want 390000", g.LocalReserve())
	}
	if e, p, err := g.Blocks(mem); err != nil || p != 8192 || e != 313 {
		t.Errorf("gemma: engine %d, pool %d, %v; want 313, 8192", e, p, err)
	}
	g.MaxSeqs = 2000
	if _, _, err := g.Blocks(mem); err == nil || !strings.Contains(err.Error(), "lower engine.max_num_seqs") {
		t.Errorf("gemma with 10 GiB and 2000 sequences: %v, want an error", err)
	}
	if _, _, err := (Hybrid{}).Blocks(mem); err == nil {
		t.Error("empty layout: no error")
	}
}

// Properties of the hybrid sizing: the full groups' blocks plus the local
// groups' bound fit the pool, and the full groups never get fewer blocks
// than if every group took a block per engine block (all layers sized as
// full attention, less the one partial block per sequence).
func TestHybridBlocksProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := Hybrid{
			FullLayers:  rapid.IntRange(1, 64).Draw(t, "full"),
			LocalLayers: rapid.IntRange(1, 64).Draw(t, "local"),
			Window:      rapid.IntRange(1, 1<<14).Draw(t, "window"),
			PageBytes:   int64(rapid.IntRange(1, 1<<16).Draw(t, "page")),
			BlockSize:   rapid.SampledFrom([]int{1, 16, 32, 64}).Draw(t, "bs"),
			MaxSeqs:     rapid.IntRange(0, 1024).Draw(t, "seqs"),
		}
		mem := Memory{Device: int64(rapid.IntRange(1, 1<<20).Draw(t, "mib")) << 20, Utilization: 1, KVPerToken: 1}
		e, p, err := h.Blocks(mem)
		if err != nil {
			return
		}
		full, local := h.Groups()
		bound := min(h.LocalReserve(), int64(local)*int64(e+h.MaxSeqs))
		if int64(e)*int64(full)+bound > int64(p) {
			t.Fatalf("engine %d x %d full groups + local bound %d > pool %d", e, full, bound, p)
		}
		if allFull := (int64(p) - int64(local)*int64(h.MaxSeqs)) / int64(full+local); int64(e) < allFull {
			t.Fatalf("engine %d < all-full sizing %d", e, allFull)
		}
	})
}
