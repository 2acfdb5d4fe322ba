package engine

import (
	"fmt"

	"github.com/servesim/servesim/internal/perf"
)

// preempt frees a running request's blocks and puts it back at the front of
// the waiting queue (behind loaded prefixes, see requeueFront); it will
// recompute its prompt and outputs so far. With
// a swap space (Config.SwapBlocks) it swaps the request's KV out instead
// when the space can take it (swap.go).
func (e *Engine) preempt(slot int32, now int64) {
	s := &e.slots[slot]
	e.preemptions++
	if e.cfg.SwapBlocks > 0 && e.swapOut(slot, s, now) {
		s.rec.Preemptions++
		e.preempted++
		return
	}
	e.notePrivate(s)
	e.release(slot)
	s.computed, s.committed = 0, 0
	s.redo = true
	s.rec.Preemptions++
	s.state = stWaiting
	e.waitingTokens += int64(s.numTokens())
	e.preempted++
	e.requeueFront(slot)
}

// release drops the references of the request in slot to its blocks (its
// local groups' first, so that its full-attention blocks, which may be
// hit again, stay cached longer).
func (e *Engine) release(slot int32) {
	s := &e.slots[slot]
	e.releaseLocal(slot)
	if tail := s.tailLen(); tail > 0 {
		// The tail is the table's end: released first, as Release
		// releases a table last block first.
		priv := e.tailPriv(s)
		if err := e.pool.ReleaseTail(priv, tail-priv); err != nil {
			e.fail(fmt.Errorf("request %d: %w", s.rec.ID, err))
		}
	}
	if err := e.pool.Release(s.blocks); err != nil {
		e.fail(err)
	}
	s.blocks, s.nblocks, s.tailed = s.blocks[:0], 0, false
}

// Preemptions is the number of preemptions (recompute or swap) this
// instance has made so far. Every one is counted in exactly one request's
// final record (metrics.Record.Preemptions).
func (e *Engine) Preemptions() int64 { return e.preemptions }

// victim returns the index in the running list of the request to preempt
// when one is short of KV blocks, among those not in a batch in flight.
// Under fcfs it is the last admitted (vLLM's self.running.pop() in
// Scheduler.schedule, vllm/v1/core/sched/scheduler.py). Under the
// priority policy it is the one with the largest (priority, arrival)
// (vLLM's max(self.running, key=lambda r: (r.priority, r.arrival_time))
// there), ties broken by the largest id: the request the waiting queue
// would serve last. vLLM's arrival times are wall-clock floats that do
// not tie; simulated arrivals do (a burst at t=0), and taking the first
// of equals as Python's max does would preempt the request that has run
// longest, again and again. The victim may have been scheduled earlier in
// the same step, and it may be the request that needs the blocks.
func (e *Engine) victim() int {
	if !e.waiting.prio {
		vi := len(e.running) - 1
		for e.slots[e.running[vi]].inFlight {
			vi--
		}
		return vi
	}
	best := -1
	var bk waitKey
	for i, slot := range e.running {
		if e.slots[slot].inFlight {
			continue
		}
		k := e.waitKey(slot)
		if best < 0 || bk.before(k) {
			best, bk = i, k
		}
	}
	return best
}

// unschedule takes the request in slot out of the batch being formed if
// it was scheduled in it (a priority-policy victim that came before the
// request short of blocks): its tokens go back to the step's budget
// (Engine.refund) and its computed count back to before the step, and the
// batch's aggregates are recounted once the running requests are done
// (rebatch), as vLLM gives the victim's num_scheduled_tokens back.
func (e *Engine) unschedule(slot int32) {
	for i, sc := range e.sched {
		if sc.slot != slot {
			continue
		}
		e.slots[slot].computed -= sc.tokens
		e.refund += sc.tokens
		e.sched = append(e.sched[:i], e.sched[i+1:]...)
		e.recount = true
		return
	}
}

// rebatch recounts the batch's aggregates from the requests scheduled so
// far in this step (the running ones: no lane member is in the batch when
// a preemption happens, see laneFits).
func (e *Engine) rebatch() {
	e.recount = false
	e.batch = perf.Batch{}
	b := &e.batch
	for _, sc := range e.sched {
		ctx := int(e.slots[sc.slot].computed - sc.tokens)
		if sc.tokens == 1 || sc.spec > 0 {
			if b.NumDecode == 0 || ctx < b.DecodeKVMin {
				b.DecodeKVMin = ctx
			}
			b.NumDecode++
			b.DecodeKVSum += int64(ctx)
			b.DecodeKVMax = max(b.DecodeKVMax, ctx)
			b.SpecTokens += int(sc.spec)
			continue
		}
		b.PrefillSeqs++
		b.PrefillTokens += int(sc.tokens)
		b.PrefillKV += ctx
	}
}
