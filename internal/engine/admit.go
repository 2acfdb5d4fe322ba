package engine

import (
	"fmt"

	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// Unfit returns why r can never be served by this instance ("" if it can):
// its prompt plus output needs more KV blocks than the instance holds, or
// more tokens than max_model_len.
func (e *Engine) Unfit(r *workload.Request) string {
	total := r.InputTokens + r.OutputTokens
	if e.cfg.MaxModelLen > 0 && total > e.cfg.MaxModelLen {
		return fmt.Sprintf("prompt+output %d tokens exceeds max_model_len %d", total, e.cfg.MaxModelLen)
	}
	need := cdiv(total, int(e.blockSize))
	if need > e.fitBlocks() {
		return fmt.Sprintf("prompt+output %d tokens needs %d KV blocks but instance %d holds %d", total, need, e.id, e.fitBlocks())
	}
	if k := e.cfg.Spec.K; k > 0 {
		// The last verification holds its 1+K tokens and K lookahead
		// slots past the last token's position.
		if need := cdiv(total-1+2*k, int(e.blockSize)); need > e.fitBlocks() {
			return fmt.Sprintf("prompt+output %d tokens and %d speculative slots need %d KV blocks but instance %d holds %d", total, 2*k, need, e.id, e.fitBlocks())
		}
	}
	return ""
}

// take fills a free slot with request r in state st and returns it.
func (e *Engine) take(r *workload.Request, rec metrics.Record, now int64, st state) (int32, *seq) {
	slot := e.newSlot()
	s := &e.slots[slot]
	s.rec = rec
	s.started, s.lastToken, s.maxITL = rec.FirstToken >= 0, rec.LastToken, rec.MaxITL
	s.prompt, s.output = int32(r.InputTokens), int32(r.OutputTokens)
	s.generated, s.computed, s.committed = 0, 0, 0
	s.inputIDs, s.outputIDs = r.InputIDs, r.OutputIDs
	s.alpha = r.SpecAcceptance
	s.prio = r.Priority
	s.salt = uint64(r.ID)*0x2545f4914f6cdd1d + 1
	s.enqueued, s.state = now, st
	s.inFlight, s.redo = false, false
	s.blocks, s.nblocks, s.tailed = s.blocks[:0], 0, false
	s.hashes = s.hashes[:0]
	s.shared, s.sharedDone = 0, false
	s.owned = s.owned[:0]
	s.laneAt, s.laneAlloc, s.laneCommitter, s.laneLateCommitter = -1, 0, false, false
	return slot, s
}

// newSlot takes a free request slot.
func (e *Engine) newSlot() int32 {
	if n := len(e.freeSlots); n > 0 {
		slot := e.freeSlots[n-1]
		e.freeSlots = e.freeSlots[:n-1]
		return slot
	}
	e.slots = append(e.slots, seq{})
	return int32(len(e.slots) - 1)
}

// freeSlot returns a slot whose blocks are already released.
func (e *Engine) freeSlot(slot int32) {
	s := &e.slots[slot]
	s.state = stFree
	s.inputIDs, s.outputIDs = nil, nil
	e.freeSlots = append(e.freeSlots, slot)
}

// Add queues r at the back of the waiting queue and returns its slot. The
// caller must have checked Unfit. now is the arrival time at this instance.
func (e *Engine) Add(r *workload.Request, now int64) int32 {
	rec := metrics.NewRecord(r.ID, now)
	rec.Session, rec.InputTokens, rec.OutputTokens = r.Session, r.InputTokens, r.OutputTokens
	rec.Priority = r.Priority
	return e.AddRecord(r, rec, now)
}

// AddRecord is Add for a request that already has a record (for example
// one re-queued for prefill after its KV was lost); rec keeps its arrival
// and counters.
func (e *Engine) AddRecord(r *workload.Request, rec metrics.Record, now int64) int32 {
	slot, s := e.take(r, rec, now, stWaiting)
	s.rec.PrefillInstance = e.id
	s.rec.DecodeInstance = -1
	if !e.prefill {
		s.rec.DecodeInstance = e.id
	}
	// The engine picks new requests up between steps: now when idle, else
	// when the step in flight ends (vLLM's queued time). A re-prefilled
	// request keeps its first queueing as its queued time.
	if s.rec.Queued < 0 {
		s.rec.Queued = now
		if e.Busy() {
			s.rec.Queued = e.stepEnd
			if e.pp() > 1 {
				s.rec.Queued = max(now, e.flights[0].end)
			} else if e.async() && e.stepStart == now {
				// It arrived at the very step boundary, in time for the
				// batch formed as this step began: taken in there.
				s.rec.Queued = now
			}
		} else if len(e.flights) > 0 && e.stages[0] > now {
			s.rec.Queued = e.stages[0]
		}
	}
	e.waitAdd(e.waitKey(slot))
	e.waitingTokens += int64(s.prompt)
	return slot
}

// WaitingTokens is the number of tokens the waiting queue still has to
// compute (prompts, and prompts plus outputs of preempted requests).
func (e *Engine) WaitingTokens() int64 { return e.waitingTokens }

// Record returns the live record of the request in slot, its output
// tokens produced so far included; it is valid until the request ends or
// leaves this instance.
func (e *Engine) Record(slot int32) *metrics.Record {
	s := &e.slots[slot]
	if s.inLane() {
		e.laneRecord(s)
		s.rec.Generated = int(s.generated) + int(e.tick-s.joinTick)
		return &s.rec
	}
	s.rec.Generated = int(s.generated)
	return s.syncRecord()
}

// EachRecord calls f with the live record of every request this instance
// holds (in any state but ended), in slot order. A run cut off at a limit
// reads them to keep each request's counters in its final record.
func (e *Engine) EachRecord(f func(*metrics.Record)) {
	for slot := range e.slots {
		if st := e.slots[slot].state; st != stFree && st != stDone {
			f(e.Record(int32(slot)))
		}
	}
}
