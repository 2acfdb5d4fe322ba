package engine

import (
	"fmt"

	"github.com/servesim/servesim/internal/kv"
)

// LocalKV describes the window-bounded KV cache groups of a hybrid model
// served by vLLM's hybrid KV cache manager (Config.Local): one pool of
// blocks shared by one full-attention group and Groups groups of
// sliding-window or chunked-local layers, each group keeping its own block
// table per request. With Groups > 0, Config.NumBlocks is that whole pool
// and a request's block list (seq.blocks) is its full-attention group's
// table; each local group holds a block for each position from the first
// one still inside the window to the end of that table, and frees the
// blocks that fall out of the window whenever the request is scheduled
// (vllm/v1/core/single_type_kv_cache_manager.py: remove_skipped_blocks
// with SlidingWindowManager's and ChunkedLocalAttentionManager's
// get_num_skipped_tokens, called by KVCacheManager.allocate_slots before
// it counts the blocks to allocate).
//
// Simplified: local blocks hold no reusable content. A prefix hit is as
// long as the full-attention group's, and the local groups take fresh
// blocks for the hit positions still inside the window (vLLM finds the hit
// of every group and keeps the shortest; a cached window costs it the same
// free blocks when its blocks are free, none when another running request
// holds them).
type LocalKV struct {
	// Groups is the number of KV cache groups of window-bounded layers;
	// 0: not a hybrid model (every layer full attention, or the
	// static reservation of kv.Hybrid.Blocks).
	Groups int
	// Window is the sliding window or the attention chunk, in tokens.
	Window int
	// Chunked marks chunked local attention (else sliding window).
	Chunked bool
}

func (l LocalKV) validate() error {
	if l.Groups < 0 || (l.Groups > 0 && l.Window < 1) {
		return fmt.Errorf("local KV cache groups need a window of at least one token (got %d groups, window %d)", l.Groups, l.Window)
	}
	return nil
}

// localHold is what the local groups hold for one request slot: Groups
// blocks for each of the n positions lo, lo+1, ... up to the end of the
// request's full-attention table, position-major. Positions before lo
// slid out; next is the computed count at which position lo slides out
// too (nothing to free below it).
type localHold struct {
	lo, n, next int32
	ids         []kv.BlockID
}

// hybrid reports whether the engine keeps local KV cache groups.
func (e *Engine) hybrid() bool { return e.hybridOn }

// hold returns slot's local blocks, growing the table to cover it.
func (e *Engine) hold(slot int32) *localHold {
	for int(slot) >= len(e.loc) {
		e.loc = append(e.loc, localHold{})
	}
	return &e.loc[slot]
}

// end is the first position past the ones h holds.
func (e *Engine) end(h *localHold) int32 { return h.lo + h.n }

// nextSkip is the smallest computed count at which more than lo leading
// positions are skipped (skipBlocks > lo).
func (e *Engine) nextSkip(lo int32) int32 {
	bs, w := e.blockSize, int32(e.cfg.Local.Window)
	if e.cfg.Local.Chunked {
		return ((lo+1)*bs + w - 1) / w * w
	}
	return (lo+1)*bs + w - 1
}

// skipBlocks is the number of leading block positions no token after the
// first c attends to: tokens before c-W+1 for a sliding window of W,
// before the chunk holding token c for chunks of W (vLLM's
// get_num_skipped_tokens), whole blocks of them.
func (e *Engine) skipBlocks(c int32) int32 {
	w := int32(e.cfg.Local.Window)
	t := max(0, c-w+1)
	if e.cfg.Local.Chunked {
		t = c / w * w
	}
	return t / e.blockSize
}

// trimLocal frees slot's local blocks that slid out of the window once c
// tokens are computed (vLLM's remove_skipped_blocks).
func (e *Engine) trimLocal(slot, c int32) {
	h := e.hold(slot)
	k := min(e.skipBlocks(c), e.end(h))
	if k <= h.lo {
		return
	}
	drop := int(k-h.lo) * e.cfg.Local.Groups
	if err := e.pool.Release(h.ids[:drop]); err != nil {
		e.fail(err)
	}
	h.ids = h.ids[:copy(h.ids, h.ids[drop:])]
	h.n -= k - h.lo
	h.lo, h.next = k, e.nextSkip(k)
}

// startLocal starts slot's local tables of a request whose first c tokens
// are computed (prefix hits, or KV about to arrive): the positions before
// the window are never allocated. It holds nothing yet.
func (e *Engine) startLocal(slot, c int32) {
	h := e.hold(slot)
	h.lo = e.skipBlocks(c)
	h.n, h.next = 0, e.nextSkip(h.lo)
	h.ids = h.ids[:0]
}

// localNeed is the blocks slot's local groups must take to reach n
// positions.
func (e *Engine) localNeed(slot int32, n int) int {
	return e.cfg.Local.Groups * max(0, n-int(e.end(e.hold(slot))))
}

// extendLocal allocates slot's local blocks up to n positions; the caller
// checked that they are free.
func (e *Engine) extendLocal(slot int32, n int) {
	h := e.hold(slot)
	need := e.localNeed(slot, n)
	var ok bool
	if h.ids, ok = e.pool.Allocate(h.ids, need); !ok {
		e.fail(fmt.Errorf("slot %d: %d local blocks checked free but allocation failed", slot, need))
		return
	}
	h.n += int32(need / e.cfg.Local.Groups)
}

// steadyLocal reports whether slot's local groups free nothing when it
// is scheduled with c tokens computed (the window has not reached the
// next position).
func (e *Engine) steadyLocal(slot, c int32) bool {
	return int(slot) < len(e.loc) && c < e.loc[slot].next
}

// growHybrid is grow for a hybrid model: the local groups first free what
// slid out (vLLM does so even when the allocation then fails), then every
// group takes blocks up to computed+n tokens.
func (e *Engine) growHybrid(slot int32, s *seq, n int32) bool {
	if h := e.hold(slot); s.computed < h.next && s.computed+n <= int32(len(s.blocks))*e.blockSize {
		return true // nothing slid out, room in the last block
	}
	e.trimLocal(slot, s.computed)
	want := max(len(s.blocks), cdiv(int(s.computed+n), int(e.blockSize)))
	need := want - len(s.blocks)
	if need+e.localNeed(slot, want) > e.pool.Free() {
		return false
	}
	if !e.allocBlocks(s, need) {
		return false
	}
	e.extendLocal(slot, want)
	return true
}

// releaseLocal drops slot's local blocks.
func (e *Engine) releaseLocal(slot int32) {
	if !e.hybrid() {
		return
	}
	h := e.hold(slot)
	if err := e.pool.Release(h.ids); err != nil {
		e.fail(err)
	}
	h.ids, h.lo, h.n, h.next = h.ids[:0], 0, 0, 0
}

// localPeak bounds the positions one request's local groups hold at once:
// a window (or chunk) of W tokens before the computed ones plus a step's
// new tokens (the token budget, the speculative slots, or a decode
// reservation's headroom), rounded out to whole blocks.
func (e *Engine) localPeak() int {
	n := max(e.cfg.MaxNumBatchedTokens+2*e.cfg.Spec.K, e.cfg.ReservedDecodeTokens+1)
	return cdiv(e.cfg.Local.Window+n, int(e.blockSize)) + 1
}

// fitBlocks is the blocks one request's full-attention table may reach
// and still find room alone: the pool, less the local groups' peak for a
// hybrid model.
func (e *Engine) fitBlocks() int {
	if !e.hybrid() {
		return e.cfg.NumBlocks
	}
	return e.cfg.NumBlocks - e.cfg.Local.Groups*e.localPeak()
}

// LocalBlocks is the number of pool blocks the local KV cache groups hold
// for all requests (0 without local groups).
func (e *Engine) LocalBlocks() int {
	n := 0
	for i := range e.loc {
		n += len(e.loc[i].ids)
	}
	return n
}

// LocalTransferBlocks is how many block positions of each local group the
// KV handoff of a prompt of prompt tokens moves when blocks of its
// full-attention table cross the link (the last ones). vLLM's NixlConnector
// clips a sliding-window group's blocks to the last ⌈W/block_size⌉ + 1
// (NixlConnectorScheduler.get_sw_clipped_blocks); a chunked group holds
// only the blocks of the prompt's last chunk, the rest being null blocks.
// 0 without local groups.
func (e *Engine) LocalTransferBlocks(prompt, blocks int) int {
	if !e.hybrid() {
		return 0
	}
	keep := cdiv(e.cfg.Local.Window, int(e.blockSize)) + 1
	if e.cfg.Local.Chunked {
		keep = cdiv(prompt, int(e.blockSize)) - int(e.skipBlocks(int32(prompt-1)))
	}
	return min(blocks, keep)
}

// checkLocal verifies slot's local blocks against its full-attention
// table: none without one, else exactly the positions from lo to its end.
func (e *Engine) checkLocal(slot int, s *seq) error {
	if slot >= len(e.loc) {
		if len(s.blocks) != 0 {
			return fmt.Errorf("request %d holds %d full-attention blocks and no local table", s.rec.ID, len(s.blocks))
		}
		return nil
	}
	h := &e.loc[slot]
	if len(s.blocks) == 0 {
		if len(h.ids) != 0 {
			return fmt.Errorf("request %d in state %s holds %d local blocks and no full-attention block", s.rec.ID, s.state, len(h.ids))
		}
		return nil
	}
	if len(h.ids) != int(h.n)*e.cfg.Local.Groups || h.lo < 0 || e.end(h) != int32(len(s.blocks)) || h.next != e.nextSkip(h.lo) {
		return fmt.Errorf("request %d holds %d local blocks from position %d (%d groups) for %d full-attention blocks", s.rec.ID, len(h.ids), h.lo, e.cfg.Local.Groups, len(s.blocks))
	}
	return nil
}
