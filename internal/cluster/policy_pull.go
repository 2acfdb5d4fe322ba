package cluster

// pullPolicy: prefill first; at prefill end the KV stays pinned on the
// prefill instance and the request joins a decode admission queue; the
// decode side pulls the KV once it has reserved blocks and a slot.
type pullPolicy struct{}

func (pullPolicy) start(s handoffSim, h *hand, now int64) error { return s.startPrefill(h, now) }

func (pullPolicy) prefilled(s handoffSim, h *hand, now int64) error {
	if err := s.enqueueDecode(h, s.placeDecode(h, -1), now); err != nil {
		return err
	}
	return s.reserve(h.d, now)
}
