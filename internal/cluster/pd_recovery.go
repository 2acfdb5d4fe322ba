package cluster

import (
	"fmt"

	"github.com/servesim/servesim/internal/metrics"
)

// This file holds the handoff's recovery paths and checks: lease expiry,
// retries on another decode instance, the push policy's buffer and spill,
// admission control (reject) and the per-event consistency check.

// leaseExpired frees pinned KV that waited too long for a decode slot.
func (s *Sim) leaseExpired(id int64, gen int32, now int64) {
	p := s.pd
	h := p.hands[id]
	if h == nil || h.gen != gen || h.st != hQueued || !h.pinned {
		return
	}
	s.engines[h.d].Withdraw(h.dSlot)
	h.dSlot = -1
	s.unpin(h, now)
	if p.cfg.ExpiryFails {
		delete(p.hands, id)
		rec := h.rec
		rec.DecodeInstance = int32(h.d)
		rec.Outcome, rec.Reason = metrics.Failed, "lease expired: prefilled KV freed before a decode instance admitted it"
		s.end(&rec, now)
		return
	}
	h.rec.Reprefills++
	s.startPrefill(h, now)
}

// retry moves a request that waited retry_after in one decode queue to
// another decode instance, keeping its pinned KV.
func (s *Sim) retry(id int64, gen int32, now int64) {
	p := s.pd
	h := p.hands[id]
	if h == nil || h.gen != gen || h.st != hQueued {
		return
	}
	old := h.d
	rec := *s.engines[old].Record(h.dSlot)
	s.engines[old].Withdraw(h.dSlot)
	h.d = s.placeDecode(h, old)
	h.rec.Retries = rec.Retries + 1
	s.enqueueDecode(h, now)
	s.reserve(h.d, now)
}

// push sends prefilled KV towards the decode instance right away.
func (s *Sim) push(h *hand, now int64) error {
	p := s.pd
	h.d = s.placeDecode(h, -1)
	bs := s.engines[h.d].Config().BlockSize
	blocks := (h.req.InputTokens + bs - 1) / bs
	h.bytes = s.transferBytes(h, blocks)
	switch {
	case !p.cfg.PushSpill && blocks > p.cfg.PushBufferBlocks[h.d]:
		// It can never fit the receive buffer and may not spill.
		s.unpin(h, now)
		delete(p.hands, h.req.ID)
		rec := h.rec
		rec.Outcome = metrics.Failed
		rec.Reason = fmt.Sprintf("unfit: prompt KV of %d blocks exceeds the push receive buffer of %d blocks and overflow is drop", blocks, p.cfg.PushBufferBlocks[h.d])
		s.end(&rec, now)
		return nil
	case p.bufFree[h.d] >= blocks:
		p.bufFree[h.d] -= blocks
		h.bufBlocks = blocks
	case p.cfg.PushSpill:
		h.spilled = true
	default:
		// Dropped: the prefill copy is freed and the prompt recomputed.
		s.unpin(h, now)
		h.rec.Reprefills++
		s.startPrefill(h, now)
		return nil
	}
	h.st = hPushing
	from, to := p.nodes[h.p].Endpoints, p.nodes[h.d].Endpoints
	n := min(len(from), len(to))
	p.net.StartParallel(now, from[:n], to[:n], h.bytes, h.req.ID)
	s.wakeNet()
	return nil
}

// pushArrived: the pushed KV is in the receive buffer (or host memory);
// the prefill side frees its copy and the request queues for admission.
func (s *Sim) pushArrived(h *hand, now int64) {
	s.unpin(h, now)
	s.enqueueDecode(h, now)
	s.engines[h.d].Record(h.dSlot).TransferEnd = now
	s.reserve(h.d, now)
}

// hostCopied: spilled KV is back on the decode device.
func (s *Sim) hostCopied(id int64, now int64) {
	h := s.pd.hands[id]
	if h == nil {
		return
	}
	h.spilled = false
	s.transferDone(h, now)
}

// checkPD verifies that every in-flight P/D request is in exactly one
// handoff state consistent with the engines' queues.
func (s *Sim) checkPD() error {
	p := s.pd
	queued := make([]int, len(s.engines))
	for id, h := range p.hands {
		switch h.st {
		case hQueued, hPreReserve:
			queued[h.d]++
		case hTransfer, hPushing:
			if h.st == hTransfer && !h.pinned && h.bufBlocks == 0 && !h.spilled && p.cfg.Policy != Reserve && p.cfg.Policy != Push {
				return fmt.Errorf("request %d: transferring without pinned KV", id)
			}
		}
	}
	for _, d := range p.decode {
		if got := s.engines[d].HandoffQueue(); got != queued[d] {
			return fmt.Errorf("decode instance %d has %d queued requests but %d handoffs are queued there", d, got, queued[d])
		}
	}
	return nil
}

// rejectReason applies the reject policy's admission control.
func (s *Sim) rejectReason(h *hand, now int64) string {
	p := s.pd
	if p.cfg.MaxPrefillQueue > 0 {
		node := p.nodes[h.p]
		if node.PrefillTokensPerSec > 0 {
			q := float64(s.engines[h.p].WaitingTokens()) / node.PrefillTokensPerSec * 1e9
			if int64(q) > p.cfg.MaxPrefillQueue {
				return fmt.Sprintf("admission: predicted prefill queueing %.0f ms exceeds %.0f ms", q/1e6, float64(p.cfg.MaxPrefillQueue)/1e6)
			}
		}
	}
	if p.cfg.MaxDecodeKVFraction > 0 {
		var demand, capacity float64
		for _, d := range p.decode {
			e := s.engines[d]
			capacity += float64(e.Pool().Capacity())
			demand += float64(e.Pool().Used())
		}
		bs := s.engines[p.decode[0]].Config().BlockSize
		for _, o := range p.hands {
			if o.st == hQueued || o.st == hPrefill || o.st == hPushing {
				demand += float64((o.req.InputTokens + bs - 1) / bs)
			}
		}
		demand += float64((h.req.InputTokens + bs - 1) / bs)
		if demand > p.cfg.MaxDecodeKVFraction*capacity {
			return fmt.Sprintf("admission: decode KV demand %.0f blocks exceeds %.0f %% of the decode pool (%.0f blocks)", demand, p.cfg.MaxDecodeKVFraction*100, capacity)
		}
	}
	return ""
}
