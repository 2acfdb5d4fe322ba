package cluster

// pullPolicy: prefill first; at prefill end the KV stays pinned on the
// prefill instance and the request joins a decode admission queue; the
// decode side pulls the KV once it has reserved blocks and a slot.
type pullPolicy struct{}

func (pullPolicy) start(s handoffSim, h *hand, now int64) error { return s.startPrefill(h, now) }

func (pullPolicy) prefilled(s handoffSim, h *hand, now int64) error {
	d := s.placeDecode(h, -1)
	if d < 0 {
		return s.failHand(h, now, "instance lost: no live decode instance can admit the request")
	}
	if err := s.enqueueDecode(h, d, now); err != nil {
		return err
	}
	return s.reserve(h.d, now)
}
