package cluster

import (
	"errors"

	"github.com/servesim/servesim/internal/des"
	"github.com/servesim/servesim/internal/workload"
)

// RunUntil processes every event due at or before t, in order, and
// returns. It reports true when a run limit ended the run (every request
// then has its outcome). Run is RunUntil(∞) then Finish; a real-time
// driver calls it with the simulated time its clock has reached, so the
// simulation is the same whatever the slices it is advanced in.
func (s *Sim) RunUntil(t int64) (bool, error) {
	if s.cut {
		return true, nil
	}
	s.until = t
	settles := s.settles() // set by the configuration: the same for every event
	for {
		front := s.q.Front()
		if front == nil || front.At > t {
			return false, nil
		}
		next := *front // the queue's slot is reused once next is dropped
		// Only the fault model makes a step end moot (stale): the common
		// event skips the call.
		if (next.Kind != evStepEnd || s.ft != nil) && s.stale(next) {
			// A timer made moot (lease, retry, superseded network wake-up):
			// it neither advances the observed time nor the run's end, and
			// does not count against the event budget.
			s.q.Drop()
			continue
		}
		if s.pastLimit(next.At) {
			s.noteLimit(next.At)
			if err := s.checkPDNow(); err != nil {
				return false, err
			}
			if err := s.cutOff(s.lastEvent, "limit"); err != nil { // the summary says which limit
				return true, err
			}
			s.cut = true // nothing more happens
			return true, nil
		}
		s.events++
		if s.interrupt != nil && s.events&(interruptEvery-1) == 0 && s.interrupt() {
			return false, ErrInterrupted
		}
		s.q.Drop() // next, read by Front
		s.lastEvent = next.At
		if s.obs != nil {
			s.obs.Advance(next.At)
		}
		var err error
		if next.Kind == evStepEnd { // most events: no call through dispatch's switch
			err = s.stepEnd(int(next.Target), next.Arg, next.At)
		} else {
			err = s.dispatch(next)
		}
		if err != nil || settles {
			if err := s.settle(err); err != nil {
				return false, err
			}
		}
	}
}

// dispatch handles one due event by its kind.
func (s *Sim) dispatch(ev des.Event) error {
	var err error
	switch ev.Kind {
	case evArrival:
		if s.maxConc > 0 && s.inflight >= s.maxConc {
			s.blocked = true // sent when an entry in flight ends
			return nil
		}
		if s.holdForWarmup() {
			return nil // sent when the warm-up has ended
		}
		entry := s.next
		s.hasNext = false
		if err = s.pull(); err == nil {
			err = s.arrive(entry, ev.At)
		}
	case evStepEnd:
		err = s.stepEnd(int(ev.Target), ev.Arg, ev.At)
	case evStageFree:
		err = s.kick(int(ev.Target), ev.At)
	case evFollowUp:
		slot := int32(ev.Arg)
		req := s.pending[slot]
		s.pending[slot] = workload.Request{}
		s.freePend = append(s.freePend, slot)
		req.Arrival = ev.At
		err = s.send(&req, ev.At)
	case evNet:
		err = s.netEvent(ev.Arg, ev.At)
	case evLease:
		err = s.leaseExpired(ev.Arg, ev.Target, ev.At)
	case evRetry:
		err = s.retry(ev.Arg, ev.Target, ev.At)
	case evHost:
		err = s.hostCopied(ev.Arg, ev.Target, ev.At)
	case evTier:
		err = s.tierEvent(ev.At)
	case evOffload:
		err = s.offloadDue(ev.Arg, ev.Target, ev.At)
	case evFEIngested:
		err = s.feIngested(ev.Arg, ev.At)
	case evFEDelivered:
		err = s.feDelivered(ev.Arg, ev.At)
	case evAbort:
		err = s.abort(ev.Arg, ev.At)
	case evLose, evRestart, evSlow, evLinkWin, evScale, evReady:
		err = s.faultEvent(ev)
	}
	return err
}

// settles reports whether settle has work after an event handled without
// an error (inlined: most events of most runs have none).
func (s *Sim) settles() bool {
	return s.tiers != nil || s.checks && (s.pd != nil || s.ft != nil)
}

// settle completes an event's handling: it picks up an error an engine
// recorded, re-arms the tier timers, runs the due disaggregation checks,
// and, when the eager policy stops the run, cuts off what is left so that
// every request still has one outcome. It returns the error that ends
// the run, if any.
func (s *Sim) settle(err error) error {
	if err == nil && s.tiers != nil {
		err = s.armTiers()
	}
	if err == nil && s.pd != nil && s.checks {
		err = s.checkPDDue()
	}
	if err == nil && s.ft != nil && s.pd == nil && s.checks {
		err = s.checkFaults()
	}
	if err != nil {
		var stop *StopReport
		if errors.As(err, &stop) {
			// The eager policy stops the run: what was in flight fails
			// and what never arrived is truncated, so every request
			// still has one outcome.
			if cerr := s.cutOff(s.lastEvent, StoppedReason); cerr != nil {
				return cerr
			}
		}
		return err
	}
	return nil
}
