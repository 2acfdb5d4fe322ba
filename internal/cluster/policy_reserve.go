package cluster

import "github.com/servesim/servesim/internal/engine"

// reservePolicy: the decode instance reserves the prompt's blocks (plus
// the reserved_decode_tokens headroom) and a slot before the prefill
// starts. From that moment the KV streams to it as one flow per
// tensor-parallel rank, capped at the rate the prefill instance produces
// KV (its prefill throughput times the KV bytes per token), sharing the
// NICs with every other transfer. The stream cannot complete the handoff
// before the prefill ends: the request reaches the decode batch at the
// later of prefill end and stream end.
type reservePolicy struct{}

func (reservePolicy) start(s *Sim, h *hand, now int64) error {
	d := s.placeDecode(h, -1)
	if err := s.transition(h, hAwaitReserve, d, now); err != nil {
		return err
	}
	h.dSlot = s.engines[d].Enqueue(&h.req, h.rec, now)
	h.queuedAt = now
	return s.reserve(d, now)
}

// granted: the decode side holds the blocks; prefill and stream start.
func (s *Sim) granted(h *hand, res engine.Reservation, now int64) error {
	p := s.pd
	if err := s.transition(h, hReservedPrefill, h.d, now); err != nil {
		return err
	}
	r := s.engines[h.d].Record(res.Slot)
	r.CapacityWait = now - h.queuedAt
	r.TransferStart = now
	h.bytes = s.transferBytes(h, h.d, res.TransferBlocks)
	node := p.nodes[h.p]
	rate := node.PrefillTokensPerSec * float64(node.KVBytesPerToken)
	h.streaming = true
	if err := s.startFlows(h, now, h.bytes, rate); err != nil {
		return err
	}
	return s.enqueuePrefill(h, now)
}

func (reservePolicy) prefilled(s *Sim, h *hand, now int64) error {
	h.pinned = true
	s.trackPinned(h.p, now)
	s.mergePrefill(s.engines[h.d].Record(h.dSlot), h)
	if h.streaming {
		return s.transition(h, hTransfer, h.d, now)
	}
	return s.transferDone(h, now)
}
