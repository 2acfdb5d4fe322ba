package engine

import (
	"fmt"

	"github.com/servesim/servesim/internal/kv"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// This file holds what the cluster's fault model needs of an engine: the
// loss of the instance (its requests read out, then its state wiped), a
// slowdown factor on its step time (a straggler rank), and the recompute
// of a prompt whose KV failed to load on a decode instance.

// EachHeld calls f with every request this instance holds (in any state
// but ended), in slot order: the request as it was admitted and its live
// record. An instance that is lost reports what it held through it
// before Reset; f must not retain the pointers.
func (e *Engine) EachHeld(f func(req *workload.Request, rec *metrics.Record)) {
	var r workload.Request
	for slot := range e.slots {
		s := &e.slots[slot]
		if s.state == stFree || s.state == stDone {
			continue
		}
		rec := e.Record(int32(slot))
		r = workload.Request{ID: rec.ID, Session: rec.Session, Arrival: rec.Arrival, InputTokens: int(s.prompt),
			OutputTokens: int(s.output), InputIDs: s.inputIDs, OutputIDs: s.outputIDs, SpecAcceptance: s.alpha}
		f(&r, rec)
	}
}

// Reset empties the instance as a crash and restart do: every request,
// block, queue and batch in flight is gone, the KV pool is new and empty.
// It keeps the configuration, the identity, the batch counter (so a batch
// of the lost state is never mistaken for a new one, see NextBatchID),
// the first invariant violation, the run totals and the slowdown factor. Callers read
// what the instance held (EachHeld) first.
func (e *Engine) Reset() error {
	pool, err := kv.NewPool(e.cfg.NumBlocks, e.cfg.PrefixCaching)
	if err != nil {
		return fmt.Errorf("engine: instance %d restart: %w", e.id, err)
	}
	*e = Engine{cfg: e.cfg, id: e.id, pred: e.pred, pool: pool, scratch: make([]int32, e.cfg.BlockSize),
		hqHead: -1, hqTail: -1, nextID: e.nextID, tiers: e.tiers, noLane: e.noLane,
		specRand: e.specRand, specTotal: e.specTotal, preemptions: e.preemptions, slow: e.slow, slowOn: e.slowOn, err: e.err,
		swap: swapState{stats: e.swap.stats}}
	e.initHot()
	return nil
}

// NextBatchID is the id of the latest batch started: every batch started
// later has a larger id. After Reset, a step-end event naming a batch id
// at or below the value read at the reset belongs to the lost state.
func (e *Engine) NextBatchID() int64 { return e.nextID }

// SetSlowdown makes every step of this instance last f times its
// predicted time (f >= 1; 1 or 0: normal speed), as a straggling GPU
// does. It applies to batches started from now on.
func (e *Engine) SetSlowdown(f float64) { e.slow, e.slowOn = f, f != 0 && f != 1 }

// Slowdown is the factor set by SetSlowdown (0 when never set).
func (e *Engine) Slowdown() float64 { return e.slow }

// Slowed returns d scaled by the instance's slowdown factor.
func (e *Engine) Slowed(d int64) int64 {
	if !e.slowOn { // (slow is 0 or 1)
		return d
	}
	return int64(float64(d) * e.slow)
}

// LoadFailed handles a reserved request whose KV failed to load (vLLM's
// kv_load_failure_policy recompute): its reserved blocks are released and
// it joins the front of the waiting queue to compute its prompt on this
// instance, as a preempted request recomputes. It keeps its sequence
// record; the transfer's end is stamped now. An invariant violation is
// returned.
func (e *Engine) LoadFailed(slot int32, now int64) error {
	s := &e.slots[slot]
	if s.state != stReserved {
		e.fail(fmt.Errorf("request %d: KV load failure in state %s", s.rec.ID, s.state))
		return e.err
	}
	e.release(slot)
	e.reservedSeqs--
	s.rec.TransferEnd = now
	s.computed, s.committed = 0, 0
	s.state = stWaiting
	s.enqueued = now
	e.waitingTokens += int64(s.numTokens())
	e.requeueFront(slot)
	return e.err
}
