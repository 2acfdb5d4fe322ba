package engine

import "github.com/servesim/servesim/internal/metrics"

// Abort ends the request in slot as vLLM does when its client goes away:
// the engine core handles aborts between steps, so the request leaves the
// waiting queue or the running set, its KV blocks are released (full
// blocks already committed stay in the prefix cache as free cached
// blocks) and its slot is freed. The returned record has the tokens
// generated so far, Outcome Failed and the given reason.
//
// Abort acts only where a request can leave at once: waiting with no
// blocks, or running outside any batch in flight. Elsewhere (in a batch in
// flight, loading a prefix, swapping, in a handoff state, finished) it
// changes nothing and reports false; the caller tries again after the
// instance's next step.
func (e *Engine) Abort(slot int32, reason string) (metrics.Record, bool, error) {
	if slot < 0 || int(slot) >= len(e.slots) {
		return metrics.Record{}, false, e.err
	}
	s := &e.slots[slot]
	switch s.state {
	case stWaiting:
		if !e.waitRemove(slot) {
			return metrics.Record{}, false, e.err
		}
		e.waitingTokens -= int64(s.numTokens())
	case stRunning:
		if s.inFlight || (e.pp() == 1 && len(e.flights) > 0) {
			return metrics.Record{}, false, e.err
		}
		if s.inLane() {
			e.leave(s)
		} else {
			for i, r := range e.running {
				if r == slot {
					e.running = append(e.running[:i], e.running[i+1:]...)
					break
				}
			}
		}
		e.release(slot)
	default:
		return metrics.Record{}, false, e.err
	}
	rec := *s.syncRecord()
	rec.Generated = int(s.generated)
	rec.Outcome, rec.Reason = metrics.Failed, reason
	e.freeSlot(slot)
	return rec, true, e.err
}

// SlotOf returns the slot holding request id in a state Abort may end
// (waiting or running), walking every slot: for rare calls such as aborts.
func (e *Engine) SlotOf(id int64) (int32, bool) {
	for i := range e.slots {
		s := &e.slots[i]
		if s.rec.ID == id && (s.state == stWaiting || s.state == stRunning) {
			return int32(i), true
		}
	}
	return -1, false
}

// EachRunning calls f with the id and the output tokens generated so far
// of every running request (explicit and in the decode lane). Called after
// a step, it tells a streaming driver which tokens that step emitted.
// It costs O(running requests) and changes nothing.
func (e *Engine) EachRunning(f func(id int64, generated int)) {
	for _, slot := range e.running {
		s := &e.slots[slot]
		f(s.rec.ID, int(s.generated))
	}
	for _, slot := range e.lane {
		s := &e.slots[slot]
		f(s.rec.ID, int(s.generated)+int(e.tick-s.joinTick))
	}
}
