package engine

import (
	"fmt"
	"slices"

	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/perf"
)

// FinishBatch applies the batch in flight with the given id at time end:
// computed tokens become cached, requests that completed their prompt or a
// decode emit a token, and finished requests release their blocks. The
// returned result is valid until the next FinishBatch. With pipeline
// parallelism batches may finish out of Begin's order.
func (e *Engine) FinishBatch(id int64, end int64) (*StepResult, error) {
	r := &e.result
	i := 0
	if e.ppN == 1 {
		// (The one flight is cur: no read of the backing array.)
		if len(e.flights) == 0 || e.cur.id != id {
			i = len(e.flights)
		}
	} else {
		for i < len(e.flights) && e.flights[i].id != id {
			i++
		}
	}
	if i == len(e.flights) {
		e.fail(fmt.Errorf("batch %d finished at t=%d ns is not in flight", id, end))
		*r = StepResult{Start: end, End: end, ITL: r.ITL[:0], Finished: r.Finished[:0], First: r.First[:0], Prefilled: r.Prefilled[:0]}
		e.resultDirty = true // (no Batch)
		return r, e.err
	}
	f := &e.cur
	if e.ppN > 1 {
		f = e.flights[i]
	}
	if n := len(e.flights); i == 0 && n == 1 {
		e.flights = e.flights[:0] // f stays after it, for reuse
	} else {
		// f joins the finished flights after the ones in flight.
		copy(e.flights[i:], e.flights[i+1:])
		e.flights[n-1] = f
		e.flights = e.flights[:n-1]
	}
	r.Start, r.End = f.start, end
	r.Batch = e.flightBatch(f)
	r.PromptTokens, r.GenTokens = 0, 0
	r.ITL = r.itlBuf[:0]
	if e.resultDirty || f.preempted != 0 {
		// (Else they are zero or empty already.)
		r.Preempted = int(f.preempted)
		r.Finished, r.First, r.Prefilled = r.Finished[:0], r.First[:0], r.Prefilled[:0]
		r.Spec = SpecStats{}
	}
	e.justEnded = true

	lane := e.laneOn()
	if lane {
		// Every lane member emits a token whose gap is this step's.
		e.tick++
		gap := end - e.prevEnd
		e.gaps.push(e.tick, gap)
		e.prevEnd = end
		if f.lane > 0 {
			r.ITL = append(r.ITL, Gap{NS: gap, Count: int64(f.lane)})
		}
	}
	gen := 0
	if len(f.sched) > 0 { // (a batch of lane members alone: nothing to walk)
		gen = e.finishScheduled(f.sched, r, end)
	}
	r.GenTokens = gen + int(f.lane)
	if e.specOn() {
		r.Spec.DraftNs, r.Spec.StepNs = f.draftNs, end-f.start
		e.specTotal.add(&r.Spec)
	}
	r.itlBuf = r.ITL
	// What FinishSteady must reset before its next short path.
	e.resultDirty = r.Preempted != 0 || len(r.Finished) > 0 || len(r.First) > 0 || len(r.Prefilled) > 0 || e.specOn()
	if len(e.zombies) > 0 || len(e.running) > 0 {
		e.pruneRunning(end, lane)
	}
	if !e.async() {
		e.releaseZombies()
	}
	if e.checkInv {
		if err := e.check(0); err != nil {
			e.fail(fmt.Errorf("after the step ending at t=%d ns: %w", end, err))
		}
	}
	return r, e.err
}

// flightBatch is the batch of flight f, in flight: with pipeline
// parallelism the flight's copy, without it Engine.batch, which no Form
// touches while the one batch is in flight.
func (e *Engine) flightBatch(f *flight) *perf.Batch {
	if e.pp() > 1 {
		return &f.batch
	}
	return &e.batch
}

// finishScheduled applies the scheduled part of a finished batch at time
// end: each request's computed tokens, its token if it emits one, the
// gaps since its previous token (run-length encoded into r.ITL) and its
// completion. It returns the tokens generated.
func (e *Engine) finishScheduled(sched []scheduled, r *StepResult, end int64) int {
	gen := 0
	caching, prefill := e.caching, e.prefill
	bs := e.blockSize
	// The run of equal gaps being counted; appended when the gap changes.
	var gapNS, gapCount int64
	for _, sc := range sched {
		s := &e.slots[sc.slot]
		s.inFlight = false
		if sc.spec > 0 {
			// A verification: several tokens arrive at once, streamed as
			// one chunk, so one gap (vLLM's benchmark ITL is per chunk).
			k := e.finishVerify(s, sc.spec, &r.Spec)
			s.generated += k
			gen += int(k)
		}
		if caching && s.computed >= (s.committed+1)*bs {
			e.commitBlocks(s, end) // a block filled since the last commit
		}
		if sc.spec == 0 && s.computed < s.numTokens() {
			continue // partial prompt chunk: no token yet
		}
		if sc.spec == 0 && prefill && s.generated == 0 {
			// The prompt is computed: its KV stays pinned for the handoff;
			// the token sampled here is not streamed (the decode instance
			// produces the first output token).
			s.rec.PrefillEnd = end
			s.state = stPrefilled
			e.pin(sc.slot, s)
			e.zombies = append(e.zombies, sc.slot)
			p := grow(&r.Prefilled)
			p.Record = *s.syncRecord()
			p.Slot, p.Blocks = sc.slot, int(s.nblocks)
			continue
		}
		if sc.spec == 0 {
			s.generated++
			gen++
			s.redo = false
		}
		if !s.started {
			s.started = true
			s.rec.FirstToken = end
			r.PromptTokens += int(s.prompt)
			r.First = append(r.First, s.rec.ID)
		} else {
			gap := end - s.lastToken
			if gap != gapNS || gapCount == 0 {
				if gapCount > 0 {
					r.ITL = append(r.ITL, Gap{NS: gapNS, Count: gapCount})
				}
				gapNS, gapCount = gap, 0
			}
			gapCount++
			if gap > s.maxITL {
				s.maxITL = gap
			}
		}
		s.lastToken = end
		if s.generated >= s.output {
			rec := s.syncRecord()
			rec.Generated = int(s.generated)
			rec.Outcome = metrics.Finished
			r.Finished = append(r.Finished, rec)
			s.state = stDone
			e.zombies = append(e.zombies, sc.slot)
		}
	}
	if gapCount > 0 {
		r.ITL = append(r.ITL, Gap{NS: gapNS, Count: gapCount})
	}
	return gen
}

// pruneRunning drops from the running set the requests that ended in the
// step ending at end and, when the lane is on, the steady decoders that
// join it.
func (e *Engine) pruneRunning(end int64, lane bool) {
	if len(e.zombies) > 0 {
		// They leave the running set now; their slots stay taken until
		// the next batch is formed.
		kept := e.running[:0]
		for _, slot := range e.running {
			if e.slots[slot].state == stRunning {
				kept = append(kept, slot)
			}
		}
		e.running = kept
	}
	if lane {
		// Steady decoders of this batch join the lane.
		kept := e.running[:0]
		for _, slot := range e.running {
			if e.slots[slot].lastToken != end || !e.join(slot) {
				kept = append(kept, slot)
			}
		}
		e.running = kept
	}
}

// grow lengthens *list by one entry and returns it, for the caller to
// fill whole: a large entry is then written once, in place, rather than
// built on the stack and copied.
func grow[T any](list *[]T) *T {
	n := len(*list)
	*list = slices.Grow(*list, 1)[:n+1]
	return &(*list)[n]
}
