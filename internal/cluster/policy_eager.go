package cluster

// eagerPolicy reproduces the legacy handoff: at prefill end it allocates
// the prompt's blocks on the chosen decode instance at once; when they are
// not free the run stops with a StopReport. Placement never chooses an
// instance the request can never fit, so a stop always means "not now".
// A request that finds every sequence slot of the instance busy waits in
// its admission queue for one, as with pull.
type eagerPolicy struct{}

func (eagerPolicy) start(s handoffSim, h *hand, now int64) error { return s.startPrefill(h, now) }

func (eagerPolicy) prefilled(s handoffSim, h *hand, now int64) error {
	if err := s.enqueueDecode(h, s.placeDecode(h, -1), now); err != nil {
		return err
	}
	if !s.seqSlotFree(h.d) {
		return nil
	}
	res, needed, free, ok, err := s.forceReserve(h, now)
	if err != nil {
		return err
	}
	if !ok {
		return s.stopRun(h, needed, free, now)
	}
	return s.reserved(h, res, now)
}
