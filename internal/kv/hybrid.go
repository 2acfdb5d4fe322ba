package kv

import "fmt"

// Hybrid is vLLM 0.19's hybrid KV cache layout for a model whose layers
// mix full attention with one window-bounded kind (sliding window or
// chunked local attention), as vllm/v1/core/kv_cache_utils.py builds it
// (_get_kv_cache_groups_uniform_page_size, get_kv_cache_config_from_groups):
//
//   - the layers of each kind are split into KV cache groups of GroupSize
//     layers: the smaller kind's layer count, or the larger one's when it
//     is under 1.5 times the smaller (gpt-oss: 18 + 18 layers, two groups
//     of 18; Gemma 3 27B: 10 full + 52 sliding, groups of 10, so one full
//     group and six sliding ones, the last padded);
//   - every group draws blocks from one shared pool of PoolBlocks blocks;
//     a block holds BlockSize tokens of GroupSize layers, so PoolBlocks =
//     available memory / (page bytes per layer · GroupSize);
//   - a full-attention group keeps a block for every BlockSize tokens of a
//     request; a sliding-window group frees the blocks that slide out of
//     the window (single_type_kv_cache_manager.py, SlidingWindowManager:
//     remove_skipped_blocks), a chunked-local group those of earlier chunks
//     (ChunkedLocalAttentionManager), so each keeps at most
//     ⌈Window/BlockSize⌉ + 1 blocks per request.
//
// With one full-attention group (FreesWindows) the simulator's engine
// runs on the whole pool and keeps each local group's blocks per request,
// freeing them as the window slides (engine.LocalKV). Otherwise (several
// full groups, or KV tiers asked to run with the hybrid manager) it
// allocates one block table per request, an engine block standing for one
// block in each full-attention group (FullGroups pool blocks), and sets
// pool blocks aside for the local groups (Blocks). A sequence holds at most LocalBlocksPerRequest blocks in
// each local group, and never more than it holds in a full group plus
// one; so with E engine blocks and MaxSeqs sequences the local groups hold
// at most min(MaxSeqs·LocalGroups·LocalBlocksPerRequest, LocalGroups·(E +
// MaxSeqs)) blocks. Blocks returns the largest E for which the full groups
// and that bound fit in the pool. Where the first bound binds (windows
// short against the contexts, gpt-oss) the full groups get nearly the
// whole pool; where the second does (long windows, Gemma 2's 4,096) the
// model is sized as if every layer were full attention. vLLM allocates
// the local blocks as sequences need them, so the simulator's capacity is
// a lower bound of vLLM's.
type Hybrid struct {
	FullLayers, LocalLayers int
	// Window is the sliding window or the attention chunk, in tokens.
	Window int
	// Chunked marks chunked local attention (else sliding window).
	Chunked bool
	// PageBytes is the KV size of one layer's block (BlockSize tokens) on
	// one GPU.
	PageBytes int64
	BlockSize int
	MaxSeqs   int
}

// GroupSize is the number of layers of one KV cache group.
func (h Hybrid) GroupSize() int {
	lo, hi := min(h.FullLayers, h.LocalLayers), max(h.FullLayers, h.LocalLayers)
	if lo == 0 {
		return hi
	}
	if 2*hi < 3*lo { // hi < 1.5·lo
		return hi
	}
	return lo
}

// Groups is the number of KV cache groups of full and of local attention.
func (h Hybrid) Groups() (full, local int) {
	g := max(h.GroupSize(), 1)
	return (h.FullLayers + g - 1) / g, (h.LocalLayers + g - 1) / g
}

// LocalBlocksPerRequest is the most blocks one local group keeps for one
// request: ⌈Window/BlockSize⌉ + 1 (the window need not start at a block
// boundary).
func (h Hybrid) LocalBlocksPerRequest() int {
	bs := max(h.BlockSize, 1)
	return (h.Window+bs-1)/bs + 1
}

// LocalReserve is the pool blocks the local groups hold with MaxSeqs
// requests each holding a whole window.
func (h Hybrid) LocalReserve() int64 {
	_, local := h.Groups()
	return int64(h.MaxSeqs) * int64(local) * int64(h.LocalBlocksPerRequest())
}

// FreesWindows reports whether the engine models this layout block by
// block, freeing the local groups' blocks as the window slides
// (engine.LocalKV): layouts with one full-attention group, which is every
// catalog model's. With several full groups (full-attention layers over
// 1.5 times the local ones) the engine keeps one block table for them
// and Blocks' static reservation applies.
func (h Hybrid) FreesWindows() bool {
	full, _ := h.Groups()
	return full == 1
}

// PoolBlocks is vLLM's pool for m's free memory: free / (page bytes ·
// GroupSize) blocks, shared by every group.
func (h Hybrid) PoolBlocks(m Memory) (int, error) {
	if h.PageBytes <= 0 || h.GroupSize() < 1 {
		return 0, fmt.Errorf("hybrid KV layout needs a page size and layers > 0 (got %+v)", h)
	}
	m.KVPerToken = h.PageBytes * int64(h.GroupSize())
	return m.Blocks(1)
}

// Blocks returns vLLM's pool size (PoolBlocks) for m's free memory and
// the engine blocks of the full-attention groups: the larger of
// (PoolBlocks − LocalReserve)/FullGroups and (PoolBlocks −
// LocalGroups·MaxSeqs)/(FullGroups + LocalGroups) (see Hybrid).
// m.KVPerToken is not used: the page size and layer counts describe the
// KV here.
func (h Hybrid) Blocks(m Memory) (engine, pool int, err error) {
	if h.BlockSize <= 0 || h.PageBytes <= 0 || h.FullLayers < 1 || h.LocalLayers < 1 || h.Window < 1 || h.MaxSeqs < 0 {
		return 0, 0, fmt.Errorf("hybrid KV layout needs full and local layers, a window, a block size and a page size > 0 (got %+v)", h)
	}
	p, err := h.PoolBlocks(m)
	if err != nil {
		return 0, 0, err
	}
	full, local := h.Groups()
	e1 := (int64(p) - h.LocalReserve()) / int64(full)
	e2 := (int64(p) - int64(local)*int64(h.MaxSeqs)) / int64(full+local)
	e := max(e1, e2)
	if e < 1 {
		return 0, p, fmt.Errorf("the KV pool of %d blocks leaves no block for the full-attention layers once %d sequences hold their %s blocks (%d KV cache groups); lower engine.max_num_seqs or use more memory per GPU",
			p, h.MaxSeqs, h.kind(), local)
	}
	return int(e), p, nil
}

func (h Hybrid) kind() string {
	if h.Chunked {
		return "chunked-local"
	}
	return "sliding-window"
}

// String describes the layout, e.g. "hybrid KV: 2 groups of 18 layers (1
// full, 1 sliding-window 128); pool 40000 blocks".
func (h Hybrid) String() string {
	return fmt.Sprintf("%s, %d local blocks per sequence", h.GroupsString(), h.LocalBlocksPerRequest())
}

// GroupsString describes the groups, e.g. "2 KV cache groups of 18 layers
// (1 full, 1 sliding-window 128)".
func (h Hybrid) GroupsString() string {
	full, local := h.Groups()
	return fmt.Sprintf("%d KV cache groups of %d layers (%d full, %d %s %d)",
		full+local, h.GroupSize(), full, local, h.kind(), h.Window)
}
