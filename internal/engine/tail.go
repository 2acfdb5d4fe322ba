package engine

import "fmt"

// Anonymous tails.
//
// A request's blocks from the first one whose content only the request
// itself could ever look up again on (private content, after its shared
// blocks; every block when prefix caching is off) are held as an
// anonymous tail of the pool (kv.Pool.AllocateTail): counted, not named.
// Allocating, committing and releasing them then costs a few counter
// updates instead of a hot word and an id each, and the pool's order of
// evictions and every count it reports are those of named blocks
// (kv.TestTailsMatchNamedBlocks), so nothing the engine reports changes.
// s.blocks names the request's first blocks and s.nblocks counts them
// all; the tail is the rest, its first tailPriv blocks committed.
//
// The tail is named (nameTail) when its blocks must be found by id: when
// the request is preempted, or hands its private blocks over after a
// prefill (notePrivate). A request that remembers private blocks from a
// preemption, and every request of an engine with local KV groups, a swap
// space or KV tiers below the GPU, names all its blocks (tailOK).
// Config.NoAnonymousTails names every block: the reference tails are
// checked against.

// tailOK reports whether the blocks s allocates next may join its
// anonymous tail.
func (e *Engine) tailOK(s *seq) bool {
	if e.tailsRuledOut() {
		return false
	}
	if !e.caching {
		return true
	}
	return s.sharedDone && s.nblocks >= s.shared && len(s.owned) == 0
}

// tailsRuledOut reports whether the engine names every block: by
// configuration, or because its local KV groups, swap space or KV tiers
// find blocks by id.
func (e *Engine) tailsRuledOut() bool {
	return e.cfg.NoAnonymousTails || e.hybrid() || e.cfg.SwapBlocks > 0 || e.tiers != nil
}

// allocBlocks allocates n more blocks for s: to its tail when it has one
// or may start one, else named. It returns false and changes nothing when
// fewer than n blocks are free.
func (e *Engine) allocBlocks(s *seq, n int) bool {
	if n <= 0 {
		return true
	}
	if s.tailed || e.tailOK(s) {
		if !e.pool.AllocateTail(n) {
			return false
		}
		s.tailed = true
	} else {
		var ok bool
		if s.blocks, ok = e.pool.Allocate(s.blocks, n); !ok {
			return false
		}
	}
	s.nblocks += int32(n)
	return true
}

// tailLen is the number of blocks in s's anonymous tail.
func (s *seq) tailLen() int { return int(s.nblocks) - len(s.blocks) }

// tailPriv is the number of blocks of s's tail holding private content:
// those committed (the tail's blocks are committed in order, each as
// private content).
func (e *Engine) tailPriv(s *seq) int {
	if !e.caching {
		return 0
	}
	return max(0, min(int(s.committed), int(s.nblocks))-len(s.blocks))
}

// nameTail gives s's tail ids, appended to s.blocks. A pinned request's
// tail blocks were pinned as a count (pin); named, each is pinned by id.
func (e *Engine) nameTail(s *seq) {
	tail := s.tailLen()
	if tail == 0 {
		return
	}
	head := len(s.blocks)
	var err error
	if s.blocks, err = e.pool.NameTail(s.blocks, e.tailPriv(s), tail); err != nil {
		e.fail(fmt.Errorf("request %d: %w", s.rec.ID, err))
		return
	}
	s.tailed = false
	if s.state == stPrefilled || s.state == stPinned {
		for _, b := range s.blocks[head:] {
			e.pinRefs[b]++ // held by s alone: pinned once, already counted
		}
	}
}
