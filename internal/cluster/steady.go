package cluster

// Steady runs: an instance's batches of decode-lane members alone
// (engine.SteadyInFlight) advanced back to back, without an event each.
//
// Such a batch's end changes nothing but its instance's lane (tokens,
// gaps, counted blocks) and the run's token and gap counts: no request
// starts, finishes or moves. So when its end comes before every event in
// the queue, processing it at once is what the event loop would do next
// anyway. After a step end the instance's next batch is begun as usual;
// while that batch is a steady one and ends before the queue's next event
// (strictly: an event already queued for the same time comes first), within
// the time RunUntil was asked to reach and within the run's limits, it is
// finished and the next begun right there, with the same observer calls,
// event count and limit checks as through the queue. The first batch that
// is not steady, or that ends later, is queued as usual. Outputs are
// byte-identical with the runs off (Config.NoSteadyRuns), which
// TestSteadyRunsMatchQueue, the runner's TestDecodeLaneOutputsIdentical
// and the random-scenario checks verify.
//
// Steady runs are used where a step end's handling is the engine's, the
// front end's and the observer's alone: no P/D handoffs, fault model,
// data-parallel groups or KV tiers, and no abort waiting for a batch to
// end. The front end's per-step model sees the steps in the same order,
// and its own events are queued events like any other.

// steadyOK reports whether the run's configuration allows steady runs.
func (s *Sim) steadyOK(cfg *Config) bool {
	return !cfg.NoSteadyRuns && s.pd == nil && s.ft == nil && s.groups == nil && s.tiers == nil
}

// kickSteady is kick for an instance whose step just ended, with steady
// runs on: it begins the next batch and runs steady batches back to back
// while each is the next thing to happen (due), then queues the end of the
// batch in flight.
func (s *Sim) kickSteady(inst int, now int64) error {
	st, ok, err := s.beginNext(inst, now)
	if err != nil || !ok {
		return err
	}
	e := s.engines[inst]
	for e.SteadyInFlight() && s.due(st.End) {
		r, err := e.FinishSteady(st.ID, st.End)
		if err != nil {
			return err
		}
		s.cl.gen += int64(r.GenTokens) // as stepEnd
		if s.fe != nil {
			s.feStepped(inst, r, st.End)
		} else if s.obs != nil {
			s.obs.StepDone(inst, r)
		}
		if st, ok, err = e.BeginSteady(st.End); err != nil || !ok {
			return err
		}
	}
	return s.launched(inst, st, st.Start)
}

// due reports whether a steady batch ending at t is the next event of the
// run, and if so counts it as processed, as RunUntil would: t within the
// time RunUntil was asked to reach, before every queued event, within the
// run's limits and not at an interrupt check.
func (s *Sim) due(t int64) bool {
	if next, ok := s.q.NextAt(); ok && next <= t {
		// Tested first: in a cluster another instance's step end nearly
		// always comes first. (NextAt leaves the queue's hole for the
		// step end's push.)
		return false
	}
	if t > s.until || s.pastLimit(t) {
		return false
	}
	if s.interrupt != nil && (s.events+1)&(interruptEvery-1) == 0 {
		return false // RunUntil makes the check
	}
	s.events++
	s.lastEvent = t
	if s.obs != nil {
		s.obs.Advance(t)
	}
	return true
}
