package cluster

import "fmt"

// pushPolicy: at prefill end the KV is sent at once into a bounded receive
// buffer on the decode instance. When the buffer lacks room the KV spills
// to the decode host's memory (copied back over PCIe at admission) or,
// with overflow drop, is discarded and the prompt recomputed (at most
// max_reprefills times).
type pushPolicy struct{}

func (pushPolicy) start(s handoffSim, h *hand, now int64) error { return s.startPrefill(h, now) }

// setup sizes the receive buffers: one per instance, in blocks.
func (pushPolicy) setup(p *pd, n int) error {
	if len(p.cfg.PushBufferBlocks) != n {
		return fmt.Errorf("cluster: push policy needs a receive-buffer size for each of the %d instances (got %d)", n, len(p.cfg.PushBufferBlocks))
	}
	p.bufFree = make([]int, n)
	copy(p.bufFree, p.cfg.PushBufferBlocks)
	return nil
}

func (pushPolicy) prefilled(s handoffSim, h *hand, now int64) error {
	cfg := s.config()
	d := s.placeDecode(h, -1)
	blocks := s.promptBlocks(h, d)
	h.bytes = s.transferBytes(h, d, blocks)
	blocks += s.localBlocks(h, d, blocks) // the buffer holds a window's blocks too
	switch {
	case !cfg.PushSpill && blocks > cfg.PushBufferBlocks[d]:
		// It can never fit the receive buffer and may not spill.
		return s.failHand(h, now, fmt.Sprintf("unfit: prompt KV of %d blocks exceeds the push receive buffer of %d blocks on instance %d and overflow is drop", blocks, cfg.PushBufferBlocks[d], d))
	case s.takeBuffer(d, blocks):
		h.bufBlocks = blocks
	case cfg.PushSpill:
		h.holds.set(holdSpilled)
	default:
		// Dropped: the prefill copy is freed and the prompt recomputed.
		return s.reprefill(h, now, "push receive buffer full")
	}
	if err := s.transition(h, hPushing, d, now); err != nil {
		return err
	}
	return s.startFlows(h, now, h.bytes, 0)
}

// pushArrived: the pushed KV is in the receive buffer (or host memory);
// the prefill side frees its copy and the request queues for admission.
func (s *Sim) pushArrived(h *hand, now int64) error {
	if err := s.unpin(h, now); err != nil {
		return err
	}
	if err := s.enqueueDecode(h, h.d, now); err != nil {
		return err
	}
	s.engines[h.d].Record(h.dSlot).TransferEnd = now
	return s.reserve(h.d, now)
}
