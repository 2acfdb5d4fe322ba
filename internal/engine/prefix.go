package engine

import (
	"fmt"

	"github.com/servesim/servesim/internal/kv"
	"github.com/servesim/servesim/internal/workload"
)

// Prefix caching: the chained block hashes of a request's tokens and the
// offering of its newly full blocks to the pool's prefix cache.

// commitBlocks offers the request's newly full blocks to the prefix cache.
func (e *Engine) commitBlocks(s *seq, now int64) {
	if !e.caching {
		return
	}
	bs := e.blockSize
	if s.computed < (s.committed+1)*bs {
		return // no block filled since the last commit (no division per step)
	}
	full := int(s.computed / bs)
	e.ensureHashes(s, full)
	if e.tiers != nil && int(s.committed) < int(s.shared) {
		if err := e.tiers.Store(int(e.id), s.hashes, int(s.committed), min(full, int(s.shared)), int(s.prompt/bs), now); err != nil {
			e.fail(fmt.Errorf("request %d: %w", s.rec.ID, err))
		}
	}
	for i := int(s.committed); i < full; i++ {
		if i < int(s.shared) {
			e.pool.Commit(s.blocks[i], s.hashes[i])
			continue
		}
		// Private content (this block and every later one): as for a
		// shared block, a copy still cached from before a preemption is
		// kept rather than duplicated. The pool records no tag until the
		// request is preempted (notePrivate).
		if i >= len(s.owned) {
			if head := len(s.blocks); i < head {
				e.pool.CommitPrivateBlocks(s.blocks[i:min(full, head)])
			}
			if n := full - max(i, len(s.blocks)); n > 0 {
				e.pool.CommitTail(n)
			}
			break
		}
		if e.pool.Holds(s.owned[i], kv.Private(s.salt, i)) {
			continue
		}
		e.pool.CommitPrivate(s.blocks[i])
	}
	s.committed = int32(full)
}

// notePrivate records, before s releases its blocks for a preemption,
// which block holds each of its committed private blocks, and tags them in
// the pool, so that it can find them again when it is re-admitted. A block
// already remembered that still holds its content is the one the pool kept
// (the later copy was not committed).
func (e *Engine) notePrivate(s *seq) {
	if e.tailPriv(s) > 0 {
		e.nameTail(s) // its private blocks are looked up by id
	}
	for i := int(s.shared); i < int(s.committed) && i < len(s.blocks); i++ {
		for len(s.owned) <= i {
			s.owned = append(s.owned, -1)
		}
		if tag := kv.Private(s.salt, i); !e.pool.Holds(s.owned[i], tag) {
			s.owned[i] = s.blocks[i]
			e.pool.TagPrivate(s.blocks[i], tag)
		}
	}
}

// match finds the longest cached prefix of the first n full blocks of s
// and leaves its blocks in e.hits: shared blocks through the pool's index,
// private ones through the blocks s held them in (if not evicted since).
// It changes nothing in the pool.
func (e *Engine) match(s *seq, n int) int {
	e.ensureHashes(s, n)
	e.hits = e.hits[:0]
	for i := 0; i < n; i++ {
		if i < int(s.shared) {
			b, ok := e.pool.Lookup(s.hashes[i])
			if !ok {
				break
			}
			e.hits = append(e.hits, b)
			continue
		}
		if i >= len(s.owned) || !e.pool.Holds(s.owned[i], kv.Private(s.salt, i)) {
			break
		}
		e.hits = append(e.hits, s.owned[i])
	}
	return len(e.hits)
}

// ensureHashes extends s.hashes to cover the shared blocks among the first
// n full blocks of the request's tokens (prompt, then outputs): blocks
// whose token ids are all known hash by content, chained from kv.Seed. The
// first block with an unknown id ends the shared blocks.
func (e *Engine) ensureHashes(s *seq, n int) {
	bs := int(e.blockSize)
	for i := len(s.hashes); i < n && !s.sharedDone; i++ {
		ids, ok := e.tokens(s, i*bs, (i+1)*bs)
		if !ok {
			s.sharedDone = true
			break
		}
		parent := kv.Seed
		if i > 0 {
			parent = s.hashes[i-1]
		}
		s.hashes = append(s.hashes, kv.Block(parent, ids))
		s.shared++
	}
}

// tokens returns the token ids at positions [lo, hi) when all are known.
func (e *Engine) tokens(s *seq, lo, hi int) ([]int32, bool) {
	p := int(s.prompt)
	if hi <= p {
		if len(s.inputIDs) < hi {
			return nil, false
		}
		return s.inputIDs[lo:hi], true
	}
	if hi-p > len(s.outputIDs) || (lo < p && len(s.inputIDs) < p) {
		return nil, false
	}
	buf := e.scratch[:0]
	for j := lo; j < hi; j++ {
		if j < p {
			buf = append(buf, s.inputIDs[j])
		} else {
			buf = append(buf, s.outputIDs[j-p])
		}
	}
	return buf, true
}

// PromptHashes extends hashes, the chained block hashes of the first
// len(hashes) full blocks of ids, to the first n full blocks (as the
// engine computes them for a request whose token ids are ids). Callers
// that route one request to several candidates, or whose request's prompt
// extends an earlier one's, hash each block once with it and pass the
// result to PrefixHit, TieredPrefixHit and SeedHashes.
func PromptHashes(hashes []uint64, ids []int32, n, blockSize int) []uint64 {
	for i := len(hashes); i < n; i++ {
		parent := kv.Seed
		if i > 0 {
			parent = hashes[i-1]
		}
		hashes = append(hashes, kv.Block(parent, ids[i*blockSize:(i+1)*blockSize]))
	}
	return hashes
}

// PrefixHit is PrefixHitTokens for a request whose prompt block hashes the
// caller computed (PromptHashes over at least its first
// (InputTokens-1)/BlockSize blocks; more are ignored).
func (e *Engine) PrefixHit(r *workload.Request, hashes []uint64) int {
	if !e.caching || len(r.InputIDs) < r.InputTokens {
		return 0
	}
	n := (r.InputTokens - 1) / int(e.blockSize)
	if len(hashes) < n {
		e.fail(fmt.Errorf("request %d: %d prompt block hashes given, %d needed", r.ID, len(hashes), n))
		return 0
	}
	return e.pool.Match(hashes[:n]) * int(e.blockSize)
}

// SeedHashes gives the request in slot, just added, the chained hashes of
// its first prompt blocks (PromptHashes over its prompt ids), so that the
// engine does not hash them again. Hashes beyond its prompt's full blocks
// are ignored; it does nothing when prefix caching is off, the request has
// no token ids or has already hashed blocks.
func (e *Engine) SeedHashes(slot int32, hashes []uint64) {
	s := &e.slots[slot]
	if !e.caching || len(s.hashes) > 0 || s.sharedDone || len(s.inputIDs) < int(s.prompt) {
		return
	}
	n := min(len(hashes), int(s.prompt)/int(e.blockSize))
	s.hashes = append(s.hashes, hashes[:n]...)
	s.shared = int32(n)
}
