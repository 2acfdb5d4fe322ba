package engine

import (
	"fmt"

	"github.com/servesim/servesim/internal/kv"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// This file holds the engine's side of the prefill -> decode handoff. On a
// prefill instance a computed prompt leaves the batch with its KV blocks
// pinned (counted as used, so a congested decode pool throttles prefill
// admission) until ReleasePinned. On a decode instance a handed-off request
// waits in the admission queue (Enqueue) until Reserve finds the blocks for
// its prompt (minus the prefix it already caches, plus the configured
// headroom) and a sequence slot; after the transfer (TransferDone) it joins
// the next batch, which computes its last prompt token and samples the first
// output token.

// PinnedBlocks is the number of KV blocks held by prefilled requests
// awaiting their handoff.
func (e *Engine) PinnedBlocks() int { return e.pinned }

// HandoffQueue is the number of requests in the decode admission queue.
func (e *Engine) HandoffQueue() int { return len(e.handoff) }

// Reserved is the number of requests holding a decode reservation (their
// transfer in flight or their KV arrived and waiting for the next batch).
func (e *Engine) Reserved() int { return e.reservedSeqs }

// ReleasePinned frees the pinned KV blocks of a prefilled request once its
// handoff is over (transfer done, lease expired or request failed).
func (e *Engine) ReleasePinned(slot int32) {
	s := &e.slots[slot]
	if s.state != stPinned && s.state != stPrefilled {
		e.fail(fmt.Errorf("request %d: release of pinned KV in state %d (released twice?)", s.rec.ID, s.state))
		return
	}
	e.pinned -= len(s.blocks)
	if s.state == stPinned {
		e.release(s)
		e.freeSlot(slot)
		return
	}
	// Still holding its slot in the batch set (async scheduling): release
	// the blocks now and let the next formation drop it.
	e.release(s)
	s.computed = 0
	s.state = stDone
}

// Enqueue puts a handed-off request at the back of this decode instance's
// admission queue and returns its slot. rec is the request's record so far.
func (e *Engine) Enqueue(r *workload.Request, rec metrics.Record, now int64) int32 {
	slot, s := e.take(r, rec, now, stHandoff)
	s.rec.DecodeInstance = e.id
	e.handoff = append(e.handoff, slot)
	return slot
}

// Withdraw removes a request from the admission queue (it moves to another
// decode instance, or its lease expired) and frees its slot.
func (e *Engine) Withdraw(slot int32) {
	for i, v := range e.handoff {
		if v == slot {
			e.handoff = append(e.handoff[:i], e.handoff[i+1:]...)
			e.freeSlot(slot)
			return
		}
	}
	e.fail(fmt.Errorf("withdraw of slot %d that is not in the admission queue", slot))
}

// Reservation is one admitted handoff.
type Reservation struct {
	Slot int32
	ID   int64
	// TransferBlocks is how many prompt blocks must cross the link: those
	// this instance does not already cache.
	TransferBlocks int
}

// Reserve admits requests from the head of the admission queue while their
// blocks and a sequence slot are free, appending them to out. In FCFS order
// the first request that does not fit blocks the queue (head-of-line);
// with skipAhead later requests that fit are admitted past it.
func (e *Engine) Reserve(now int64, skipAhead bool, out []Reservation) []Reservation {
	for i := 0; i < len(e.handoff); {
		// Finished requests still in the batch set (async scheduling) give
		// their slots back at the next formation: count them as free.
		if len(e.running)+e.reservedSeqs >= e.cfg.MaxNumSeqs {
			break
		}
		slot := e.handoff[i]
		tb, ok := e.reserve(slot)
		if !ok {
			if !skipAhead {
				break
			}
			i++
			continue
		}
		e.handoff = append(e.handoff[:i], e.handoff[i+1:]...)
		s := &e.slots[slot]
		s.rec.Reserved = now
		out = append(out, Reservation{Slot: slot, ID: s.rec.ID, TransferBlocks: tb})
	}
	return out
}

// ForceReserve reserves blocks for one queued request right now, ignoring
// the sequence limit (the legacy eager handoff). It reports the blocks
// needed and free when they do not fit.
func (e *Engine) ForceReserve(slot int32, now int64) (r Reservation, needed, free int, ok bool) {
	s := &e.slots[slot]
	tb, ok := e.reserve(slot)
	if !ok {
		need := cdiv(int(s.prompt)+e.cfg.ReservedDecodeTokens, e.cfg.BlockSize)
		return Reservation{}, need, e.pool.Free(), false
	}
	for i, v := range e.handoff {
		if v == slot {
			e.handoff = append(e.handoff[:i], e.handoff[i+1:]...)
			break
		}
	}
	s.rec.Reserved = now
	return Reservation{Slot: slot, ID: s.rec.ID, TransferBlocks: tb}, 0, 0, true
}

// reserve allocates a queued request's prompt blocks (prefix hits first)
// plus the decode headroom.
func (e *Engine) reserve(slot int32) (int, bool) {
	s := &e.slots[slot]
	bs := e.cfg.BlockSize
	promptBlocks := cdiv(int(s.prompt), bs)
	need := cdiv(int(s.prompt)+e.cfg.ReservedDecodeTokens, bs)
	hit := 0
	if e.cfg.PrefixCaching {
		hit = e.match(s, int(s.prompt-1)/bs)
	}
	evictable := 0
	if hit > 0 {
		evictable = e.pool.EvictableBlocks(e.hits)
	}
	if need-hit+evictable > e.pool.Free() {
		return 0, false
	}
	if hit > 0 {
		s.blocks = e.pool.AcquireBlocks(s.blocks, e.hits, hit)
	}
	var ok bool
	if s.blocks, ok = e.pool.Allocate(s.blocks, need-hit); !ok {
		e.fail(fmt.Errorf("request %d: %d blocks checked free but allocation failed", s.rec.ID, need-hit))
		return 0, false
	}
	s.committed = int32(hit)
	s.state = stReserved
	e.reservedSeqs++
	return promptBlocks - hit, true
}

// TransferDone marks a reserved request's KV as arrived: it joins the next
// batch, which computes its last prompt token and samples its first output
// token.
func (e *Engine) TransferDone(slot int32, now int64) {
	s := &e.slots[slot]
	if s.state != stReserved {
		e.fail(fmt.Errorf("request %d: transfer done in state %d", s.rec.ID, s.state))
		return
	}
	s.rec.TransferEnd = now
	s.computed = s.prompt - 1
	s.state = stReady
	s.enqueued = now
	e.ready.pushBack(slot)
}

// Cancel drops a reserved request whose handoff failed, releasing its
// decode blocks.
func (e *Engine) Cancel(slot int32) {
	s := &e.slots[slot]
	if s.state != stReserved {
		e.fail(fmt.Errorf("request %d: cancel in state %d", s.rec.ID, s.state))
		return
	}
	e.release(s)
	e.reservedSeqs--
	e.freeSlot(slot)
}

// PrefixHitTokens is how many of r's prompt tokens this instance's prefix
// cache holds right now (full blocks, at most prompt-1 tokens). Requests
// without token ids never hit another request's blocks.
func (e *Engine) PrefixHitTokens(r *workload.Request) int {
	if !e.cfg.PrefixCaching || len(r.InputIDs) < r.InputTokens {
		return 0
	}
	bs := e.cfg.BlockSize
	maxBlocks := (r.InputTokens - 1) / bs
	e.probe = e.probe[:0]
	parent := uint64(0)
	for i := 0; i < maxBlocks; i++ {
		h := kv.Block(hashParent(parent, i), r.InputIDs[i*bs:(i+1)*bs])
		e.probe = append(e.probe, h)
		parent = h
	}
	return e.pool.Match(e.probe) * bs
}

// hashParent is the parent hash of block i given the previous block's hash.
func hashParent(prev uint64, i int) uint64 {
	if i == 0 {
		return kv.Seed
	}
	return prev
}
