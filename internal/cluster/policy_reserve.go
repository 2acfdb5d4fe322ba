package cluster

import "github.com/servesim/servesim/internal/engine"

// reservePolicy: the decode instance reserves the prompt's blocks (plus
// the reserved_decode_tokens headroom) and a slot before the prefill
// starts. From that moment the KV streams to it as one flow per
// tensor-parallel rank, starting when the prefill instance first
// schedules the prompt (KV exists from then on) and capped at the rate
// that instance produces KV (its prefill throughput times the KV bytes per
// token), sharing the NICs with every other transfer. The stream cannot
// complete the handoff before the prefill ends (a prefill slowed by a busy
// batch or preempted produces its KV later than the cap assumes): the
// request reaches the decode batch at the later of prefill end and stream
// end.
type reservePolicy struct{}

func (reservePolicy) start(s handoffSim, h *hand, now int64) error {
	d := s.placeDecode(h, -1)
	if err := s.transition(h, hAwaitReserve, d, now); err != nil {
		return err
	}
	s.awaitReserve(h, d, now)
	return s.reserve(d, now)
}

// granted: the decode side holds the blocks; prefill and stream start.
func (s *Sim) granted(h *hand, res engine.Reservation, now int64) error {
	if err := s.transition(h, hReservedPrefill, h.d, now); err != nil {
		return err
	}
	r := s.engines[h.d].Record(res.Slot)
	r.CapacityWait = now - h.queuedAt
	h.bytes = s.transferBytes(h, h.d, res.TransferBlocks)
	return s.enqueuePrefill(h, now)
}

// prefillStarted starts the KV streams of reserve handoffs whose prompts
// the prefill instance has just scheduled for the first time.
func (s *Sim) prefillStarted(ids []int64, now int64) error {
	p := s.pd
	if p.cfg.Policy != Reserve {
		return nil // only the reserve policy's handoffs stream (reserved-prefill)
	}
	for _, id := range ids {
		h := p.hands.get(id)
		if h == nil || h.st != hReservedPrefill || h.holds.has(holdStreaming) || h.holds.has(holdStreamDone) {
			continue // not a reserve handoff
		}
		if err := s.startStream(h, now); err != nil {
			return err
		}
	}
	return nil
}

// startStream puts h's KV stream on the link, capped at the prefill
// instance's KV production rate.
func (s *Sim) startStream(h *hand, now int64) error {
	s.engines[h.d].Record(h.dSlot).TransferStart = now
	node := s.pd.nodes[h.p]
	rate := node.PrefillTokensPerSec * float64(node.KVBytesPerToken)
	h.holds.set(holdStreaming)
	return s.startFlows(h, now, h.bytes, rate)
}

func (reservePolicy) prefilled(s handoffSim, h *hand, now int64) error {
	s.pinPrefill(h, now)
	if h.holds.has(holdStreamDone) {
		return s.transferDone(h, now)
	}
	if !h.holds.has(holdStreaming) {
		// Not seen scheduled (cannot happen with a prefill instance that
		// reports its batches): stream everything now.
		if err := s.startStream(h, now); err != nil {
			return err
		}
	}
	return s.transition(h, hTransfer, h.d, now)
}
