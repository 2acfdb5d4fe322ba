package cluster

import "github.com/servesim/servesim/internal/des"

// evAbort: the client of request Arg goes away. (Event kinds: engine
// steps and arrivals below 10, the KV network from 10, tiers 30, the
// front end from 40, aborts 50.)
const evAbort int32 = 50

// AbortedReason is the failure reason of a request whose client went away
// (a disconnect, or a trace's abort_time_ns).
const AbortedReason = "aborted by the client"

// AbortAt schedules the abort of request id at time at (now if at has
// passed), as a client that disconnects does. A request's abort is
// handled as vLLM's engine core handles it, between steps: a request
// waiting leaves the queue at once, one in a batch in flight leaves after
// that batch (its tokens of the batch are emitted), and one in the middle
// of a KV copy or a handoff leaves once it is running on its decode
// instance. It ends with Outcome Failed and AbortedReason, and its KV
// blocks are released. An abort of a request that has already ended (or
// ends first) does nothing.
func (s *Sim) AbortAt(id, at int64) error {
	return s.schedule(des.Event{At: max(at, s.q.Now()), Kind: evAbort, Arg: id})
}

// abort handles an abort event: the request ends now if its instance lets
// it leave, else it is tried again after each step.
func (s *Sim) abort(id, now int64) error {
	gone, err := s.tryAbort(id, now)
	if err != nil {
		return err
	}
	if !gone {
		s.aborting = append(s.aborting, id)
	}
	return nil
}

// retryAborts tries the pending aborts again (after a step ended).
func (s *Sim) retryAborts(now int64) error {
	kept := s.aborting[:0]
	for i, id := range s.aborting {
		gone, err := s.tryAbort(id, now)
		if err != nil {
			s.aborting = append(kept, s.aborting[i+1:]...)
			return err
		}
		if !gone {
			kept = append(kept, id)
		}
	}
	s.aborting = kept
	return nil
}

// tryAbort ends request id now if it can leave its instance, and reports
// whether it is gone (ended now, or earlier).
func (s *Sim) tryAbort(id, now int64) (bool, error) {
	if _, ok := s.live.lookup(id); !ok {
		return true, nil
	}
	inst, slot := -1, int32(-1)
	var h *hand
	if s.pd != nil {
		if h = s.pd.hands.get(id); h != nil {
			if h.st != hDecoding {
				return false, nil // prefilling, queued or on the wire: later
			}
			inst, slot = h.d, h.dSlot
		}
	}
	if inst < 0 {
		for i, e := range s.engines {
			if sl, ok := e.SlotOf(id); ok {
				inst, slot = i, sl
				break
			}
		}
		if inst < 0 {
			return false, nil // loading, swapping or just finishing: later
		}
	}
	rec, ok, err := s.engines[inst].Abort(slot, AbortedReason)
	if err != nil || !ok {
		return false, err
	}
	if h != nil {
		if err := s.transition(h, hDone, h.d, now); err != nil {
			return true, err
		}
		s.pd.hands.del(id)
		s.pd.freeHand(h)
	}
	if err := s.end(&rec, now); err != nil {
		return true, err
	}
	// The blocks released may let waiting requests (or, on a decode
	// instance, handoffs) in.
	if err := s.kick(inst, now); err != nil {
		return true, err
	}
	if s.pd != nil && s.pd.isDecode[inst] {
		if err := s.reserve(inst, now); err != nil {
			return true, err
		}
		return true, s.kick(inst, now)
	}
	return true, nil
}
