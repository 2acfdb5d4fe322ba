package engine

import (
	"fmt"

	"github.com/servesim/servesim/internal/perf"
)

// Steady batches.
//
// A batch of decode-lane members alone (no explicit request, one batch in
// flight) finishes with nothing its caller must act on but its tokens and
// their gap: no request emits its first or its last token, none is
// preempted or prefilled, no block is freed. A caller that knows such a
// batch's end is the next thing to happen in the whole simulation can
// finish it and begin the next batch at once, without an event per step
// (the cluster's steady runs). SteadyInFlight tells such a batch;
// FinishSteady and BeginSteady are FinishBatch and Begin with short paths
// for such batches.

// SteadyInFlight reports whether the one batch in flight holds decode-lane
// members only.
func (e *Engine) SteadyInFlight() bool {
	if len(e.flights) != 1 || e.noLane {
		return false
	}
	f := &e.cur // (the lane is on: no pipeline parallelism)
	return len(f.sched) == 0 && f.lane > 0
}

// FinishSteady is FinishBatch(id, end), with a short path for a batch
// SteadyInFlight reports when the engine holds no explicit running
// request and no request that ended in an earlier batch; otherwise it is
// FinishBatch itself.
func (e *Engine) FinishSteady(id, end int64) (*StepResult, error) {
	// (A batch holding lane members implies the lane is on.)
	if !e.SteadyInFlight() || e.cur.id != id || len(e.running) > 0 || len(e.zombies) > 0 {
		return e.FinishBatch(id, end)
	}
	f := &e.cur
	e.flights = e.flights[:0] // f stays after it, for reuse (Launch)
	r := &e.result
	// (r.Batch is &e.batch already: FinishBatch set it, the lane being off
	// with pipeline parallelism, or a failed finish left the result dirty.)
	r.Start, r.End = f.start, end
	r.PromptTokens, r.GenTokens = 0, int(f.lane)
	e.tick++
	gap := end - e.prevEnd
	e.gaps.push(e.tick, gap)
	e.prevEnd = end
	r.itl[0] = Gap{NS: gap, Count: int64(f.lane)}
	r.ITL = r.itl[:]
	if e.resultDirty || f.preempted != 0 {
		// The fields a steady step leaves alone, unless an earlier step
		// set them.
		r.Preempted = int(f.preempted)
		r.Finished, r.First, r.Prefilled = r.Finished[:0], r.First[:0], r.Prefilled[:0]
		r.Spec = SpecStats{}
		r.Batch = &e.batch
		e.resultDirty = f.preempted != 0
	}
	e.justEnded = true
	if e.checkInv {
		if err := e.check(0); err != nil {
			e.fail(fmt.Errorf("after the step ending at t=%d ns: %w", end, err))
		}
	}
	return r, e.err
}

// BeginSteady is Begin(now), with a short path when no batch is in
// flight, no explicit request runs and the lane's members alone make the
// next batch (form's lane-only case, laneOnly): that batch is formed
// without Form's general steps, which then all do nothing.
func (e *Engine) BeginSteady(now int64) (Step, bool, error) {
	budget := e.maxBatched
	// (laneOnlyFits asks for lane members, which imply the lane is on.)
	if len(e.flights) > 0 || len(e.running) > 0 || len(e.zombies) > 0 || e.recount {
		return e.Begin(now)
	}
	c := e.laneCount(e.tick + 1)
	if !e.laneOnlyFits(budget, c) {
		return e.Begin(now)
	}
	// Form's and form's resets; nothing else of them applies: no zombie
	// to release, and the batch is not empty.
	// (No first scheduled request to forget: the lane is off on prefill
	// instances.)
	e.justEnded = false
	e.sched = e.sched[:0]
	e.batch = perf.Batch{}
	e.preempted = 0
	left := e.laneOnlyForm(budget, c)
	if e.checkInv {
		e.formBudget = left
	}
	st, err := e.Launch(now, e.Slowed(e.pred.StepTime(&e.batch)))
	return st, true, err
}
