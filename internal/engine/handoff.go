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

// PinnedBlocks is the number of distinct KV blocks held by prefilled
// requests awaiting their handoff: a prefix block shared by several of
// them counts once.
func (e *Engine) PinnedBlocks() int { return e.pinned }

// pin counts the blocks of the just prefilled s in slot as pinned: its
// full-attention blocks and, for a hybrid model, the local groups' blocks
// still in the window of its last token.
func (e *Engine) pin(slot int32, s *seq) {
	if e.hybrid() {
		e.trimLocal(slot, s.computed)
		e.pinned += len(e.hold(slot).ids)
	}
	if e.pinRefs == nil {
		e.pinRefs = make([]int32, e.pool.Capacity())
	}
	for _, b := range s.blocks {
		if e.pinRefs[b] == 0 {
			e.pinned++
		}
		e.pinRefs[b]++
	}
	e.pinned += s.tailLen() // held by s alone
}

// unpin undoes pin for s in slot, whose pinned blocks are being released.
func (e *Engine) unpin(slot int32, s *seq) {
	if e.hybrid() {
		e.pinned -= len(e.hold(slot).ids)
	}
	for _, b := range s.blocks {
		e.pinRefs[b]--
		if e.pinRefs[b] == 0 {
			e.pinned--
		}
	}
	e.pinned -= s.tailLen()
}

// HandoffQueue is the number of requests in the decode admission queue.
func (e *Engine) HandoffQueue() int { return int(e.hqLen) }

// hqPush appends slot to the admission queue.
func (e *Engine) hqPush(slot int32) {
	s := &e.slots[slot]
	s.qPrev, s.qNext = e.hqTail, -1
	if e.hqTail >= 0 {
		e.slots[e.hqTail].qNext = slot
	} else {
		e.hqHead = slot
	}
	e.hqTail = slot
	e.hqLen++
}

// hqRemove unlinks slot from the admission queue.
func (e *Engine) hqRemove(slot int32) {
	s := &e.slots[slot]
	if s.qPrev >= 0 {
		e.slots[s.qPrev].qNext = s.qNext
	} else {
		e.hqHead = s.qNext
	}
	if s.qNext >= 0 {
		e.slots[s.qNext].qPrev = s.qPrev
	} else {
		e.hqTail = s.qPrev
	}
	s.qPrev, s.qNext = -1, -1
	e.hqLen--
}

// Reserved is the number of requests holding a decode reservation (their
// transfer in flight or their KV arrived and waiting for the next batch).
func (e *Engine) Reserved() int { return int(e.reservedSeqs) }

// ReleasePinned frees the pinned KV blocks of a prefilled request once its
// handoff is over (transfer done, lease expired or request failed).
func (e *Engine) ReleasePinned(slot int32) error {
	s := &e.slots[slot]
	if s.state != stPinned && s.state != stPrefilled {
		e.fail(fmt.Errorf("request %d: release of pinned KV in state %s (released twice?)", s.rec.ID, s.state))
		return e.err
	}
	e.unpin(slot, s)
	if s.state == stPinned {
		e.release(slot)
		e.freeSlot(slot)
		return e.err
	}
	// Still holding its slot in the batch set (async scheduling): release
	// the blocks now and let the next formation drop it.
	e.release(slot)
	s.computed = 0
	s.state = stDone
	return e.err
}

// PrivateBlocks appends to out, for the prefilled request in slot, the
// block that holds each of its committed private blocks (content only this
// request can hit: its token ids are unknown), so that a re-prefill on
// this instance finds them again through RestorePrivate while they are not
// evicted, as a re-prefill of known tokens finds them by hash. Call it
// before ReleasePinned.
func (e *Engine) PrivateBlocks(slot int32, out []kv.BlockID) []kv.BlockID {
	s := &e.slots[slot]
	e.notePrivate(s)
	return append(out, s.owned...)
}

// RestorePrivate gives the request just added in slot (AddRecord) the
// private blocks PrivateBlocks reported for its earlier attempt here.
func (e *Engine) RestorePrivate(slot int32, owned []kv.BlockID) {
	s := &e.slots[slot]
	s.owned = append(s.owned[:0], owned...)
}

// Enqueue puts a handed-off request at the back of this decode instance's
// admission queue and returns its slot. rec is the request's record so far.
func (e *Engine) Enqueue(r *workload.Request, rec metrics.Record, now int64) int32 {
	slot, s := e.take(r, rec, now, stHandoff)
	s.rec.DecodeInstance = e.id
	e.hqPush(slot)
	return slot
}

// Withdraw removes a request from the admission queue (it moves to another
// decode instance, or its lease expired) and frees its slot.
func (e *Engine) Withdraw(slot int32) error {
	if slot < 0 || int(slot) >= len(e.slots) || e.slots[slot].state != stHandoff {
		e.fail(fmt.Errorf("withdraw of slot %d that is not in the admission queue", slot))
		return e.err
	}
	e.hqRemove(slot)
	e.freeSlot(slot)
	return e.err
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
//
// Requests waiting on this instance (preempted ones waiting to resume, or
// prompts prefilled locally) come first, as in vLLM, where requests whose
// KV is remote queue behind them in the one waiting queue: while any
// wait, nothing is admitted. Otherwise a steady stream of handoffs takes
// every block freed and a preempted request starves.
func (e *Engine) Reserve(now int64, skipAhead bool, out []Reservation) ([]Reservation, error) {
	if e.waiting.len() > 0 {
		return out, e.err
	}
	for slot := e.hqHead; slot >= 0; {
		// Finished requests still in the batch set (async scheduling) give
		// their slots back at the next formation: count them as free.
		if e.numRunning()+int(e.reservedSeqs) >= e.cfg.MaxNumSeqs {
			break
		}
		next := e.slots[slot].qNext
		tb, ok := e.reserve(slot)
		if !ok {
			if !skipAhead {
				break
			}
			slot = next
			continue
		}
		e.hqRemove(slot)
		s := &e.slots[slot]
		s.rec.Reserved = now
		out = append(out, Reservation{Slot: slot, ID: s.rec.ID, TransferBlocks: tb})
		slot = next
	}
	return out, e.err
}

// ForceReserve reserves blocks for one queued request right now, ignoring
// the sequence limit (the legacy eager handoff). It reports the blocks
// needed and free when they do not fit.
func (e *Engine) ForceReserve(slot int32, now int64) (r Reservation, needed, free int, ok bool, err error) {
	s := &e.slots[slot]
	if s.state != stHandoff {
		e.fail(fmt.Errorf("request %d: forced reservation in state %s", s.rec.ID, s.state))
		return Reservation{}, 0, 0, false, e.err
	}
	e.hqRemove(slot)
	tb, ok := e.reserve(slot)
	if !ok {
		e.hqPush(slot) // still queued: the caller stops the run
		need := cdiv(int(s.prompt)+e.cfg.ReservedDecodeTokens, int(e.blockSize))
		return Reservation{}, need, e.pool.Free(), false, e.err
	}
	s.rec.Reserved = now
	return Reservation{Slot: slot, ID: s.rec.ID, TransferBlocks: tb}, 0, 0, true, e.err
}

// reserve allocates a queued request's prompt blocks (prefix hits first)
// plus the decode headroom.
func (e *Engine) reserve(slot int32) (int, bool) {
	s := &e.slots[slot]
	bs := int(e.blockSize)
	promptBlocks := cdiv(int(s.prompt), bs)
	need := cdiv(int(s.prompt)+e.cfg.ReservedDecodeTokens, bs)
	hit := 0
	if e.caching {
		hit = e.match(s, int(s.prompt-1)/bs)
	}
	evictable := 0
	if hit > 0 {
		evictable = e.pool.EvictableBlocks(e.hits)
	}
	local := 0
	if e.hybrid() {
		local = e.cfg.Local.Groups * (need - int(e.skipBlocks(s.prompt-1)))
	}
	if need-hit+evictable+local > e.pool.Free() {
		return 0, false
	}
	if hit > 0 {
		s.blocks = e.pool.AcquireBlocks(s.blocks, e.hits, hit)
		s.nblocks = int32(len(s.blocks))
	}
	if !e.allocBlocks(s, need-hit) {
		e.fail(fmt.Errorf("request %d: %d blocks checked free but allocation failed", s.rec.ID, need-hit))
		return 0, false
	}
	if e.hybrid() {
		// The KV arrives for the first prompt-1 tokens (TransferDone).
		e.startLocal(slot, s.prompt-1)
		e.extendLocal(slot, int(s.nblocks))
	}
	s.committed = int32(hit)
	s.state = stReserved
	e.reservedSeqs++
	return promptBlocks - hit, true
}

// TransferDone marks a reserved request's KV as arrived: it joins the next
// batch, which computes its last prompt token and samples its first output
// token.
func (e *Engine) TransferDone(slot int32, now int64) error {
	s := &e.slots[slot]
	if s.state != stReserved {
		e.fail(fmt.Errorf("request %d: transfer done in state %s", s.rec.ID, s.state))
		return e.err
	}
	s.rec.TransferEnd = now
	s.computed = s.prompt - 1
	s.state = stReady
	s.enqueued = now
	e.ready.pushBack(slot)
	e.queued++
	return e.err
}

// Cancel drops a reserved request whose handoff failed, releasing its
// decode blocks.
func (e *Engine) Cancel(slot int32) error {
	s := &e.slots[slot]
	if s.state != stReserved {
		e.fail(fmt.Errorf("request %d: cancel in state %s", s.rec.ID, s.state))
		return e.err
	}
	e.release(slot)
	e.reservedSeqs--
	e.freeSlot(slot)
	return e.err
}

// PrefixHitTokens is how many of r's prompt tokens this instance's prefix
// cache holds right now (full blocks, at most prompt-1 tokens). Requests
// without token ids never hit another request's blocks.
func (e *Engine) PrefixHitTokens(r *workload.Request) int {
	if !e.caching || len(r.InputIDs) < r.InputTokens {
		return 0
	}
	e.probe = PromptHashes(e.probe[:0], r.InputIDs, (r.InputTokens-1)/int(e.blockSize), int(e.blockSize))
	return e.PrefixHit(r, e.probe)
}

// HandoffUnfit returns why a request handed off to this decode instance
// could never be admitted ("" when it can): Unfit, or its prompt plus the
// configured decode headroom exceeding the whole KV pool (the reservation
// Reserve would wait for forever).
func (e *Engine) HandoffUnfit(r *workload.Request) string {
	if why := e.Unfit(r); why != "" {
		return why
	}
	if need := cdiv(r.InputTokens+e.cfg.ReservedDecodeTokens, int(e.blockSize)); need > e.fitBlocks() {
		return fmt.Sprintf("prompt %d tokens plus reserved_decode_tokens %d needs %d KV blocks but instance %d holds %d",
			r.InputTokens, e.cfg.ReservedDecodeTokens, need, e.id, e.fitBlocks())
	}
	return ""
}

// SlotPhase is where a handed-off request stands on a decode instance, as
// the cluster's consistency check sees it.
type SlotPhase uint8

// Slot phases.
const (
	PhaseOther    SlotPhase = iota // not a handoff state (free, waiting, running, ...)
	PhaseQueued                    // in the admission queue
	PhaseReserved                  // blocks reserved, KV not arrived
	PhaseReady                     // KV arrived, waiting for the next batch
)

// SlotPhase returns the request id held by slot and its handoff phase.
func (e *Engine) SlotPhase(slot int32) (id int64, ph SlotPhase) {
	if slot < 0 || int(slot) >= len(e.slots) {
		return -1, PhaseOther
	}
	s := &e.slots[slot]
	switch s.state {
	case stHandoff:
		ph = PhaseQueued
	case stReserved:
		ph = PhaseReserved
	case stReady:
		ph = PhaseReady
	}
	return s.rec.ID, ph
}

// SlotState returns the name of the engine state of slot, for reports.
func (e *Engine) SlotState(slot int32) string {
	if slot < 0 || int(slot) >= len(e.slots) {
		return "none"
	}
	return e.slots[slot].state.String()
}

// HandoffFits reports whether HandoffUnfit(r) is "", without building the
// reason: placement calls it for every candidate.
func (e *Engine) HandoffFits(r *workload.Request) bool {
	// FitTokens covers max_model_len, the pool and the speculative
	// lookahead, exactly as Unfit does.
	return r.InputTokens+r.OutputTokens <= e.FitTokens() && cdiv(r.InputTokens+e.cfg.ReservedDecodeTokens, int(e.blockSize)) <= e.fitBlocks()
}

// SeqSlotFree reports whether a reservation would find a sequence slot
// (max_num_seqs counts running and reserved requests).
func (e *Engine) SeqSlotFree() bool { return e.numRunning()+int(e.reservedSeqs) < e.cfg.MaxNumSeqs }
