package cluster

import (
	"fmt"

	"github.com/servesim/servesim/internal/des"
	"github.com/servesim/servesim/internal/metrics"
)

// This file holds the handoff's recovery paths: lease expiry, retries on
// another decode instance, bounded re-prefills, failing a handoff and the
// push policy's copy back from host memory.

// leaseExpired frees pinned KV that waited too long for a decode slot.
func (s *Sim) leaseExpired(id int64, gen int32, now int64) error {
	p := s.pd
	h := p.hands.get(id)
	if h == nil || h.gen != gen || h.st != hQueued || !h.holds.has(holdPinned) {
		return nil
	}
	if p.cfg.ExpiryFails {
		return s.failHand(h, now, "lease expired: prefilled KV freed before a decode instance admitted it")
	}
	return s.reprefill(h, now, "lease expired")
}

// reprefill frees h's prefilled KV and recomputes its prompt on the same
// prefill instance, or fails h once it was re-prefilled max_reprefills
// times. h is queued (its queue slot is withdrawn) or prefilling (push
// drop).
func (s *Sim) reprefill(h *hand, now int64, why string) error {
	p := s.pd
	if h.rec.Reprefills >= p.cfg.MaxReprefills {
		return s.failHand(h, now, fmt.Sprintf("re-prefill limit: %s after %d re-prefills (handoff.max_reprefills %d)", why, h.rec.Reprefills, p.cfg.MaxReprefills))
	}
	if err := s.leaveQueue(h); err != nil {
		return err
	}
	if h.holds.has(holdPinned) {
		// Blocks of a request without token ids are private to it: note
		// where they are, so the recompute hits them as a request with
		// known tokens hits its blocks by hash.
		h.owned = s.engines[h.p].PrivateBlocks(h.pSlot, h.owned[:0])
	}
	if err := s.unpin(h, now); err != nil {
		return err
	}
	if err := s.dropOffloaded(h, now); err != nil {
		return err
	}
	h.rec.Reprefills++
	return s.startPrefill(h, now)
}

// leaveQueue withdraws h from its decode admission queue, if it is in one.
func (s *Sim) leaveQueue(h *hand) error {
	if h.st == hQueued && h.dSlot >= 0 {
		if err := s.engines[h.d].Withdraw(h.dSlot); err != nil {
			return err
		}
		s.noteLoad(h.d)
		h.dSlot = -1
	}
	return nil
}

// failHand ends h as failed with reason, releasing what it holds: its
// admission queue slot, its pinned KV and its push buffer share. h is
// queued or prefilling (it holds no decode reservation).
func (s *Sim) failHand(h *hand, now int64, reason string) error {
	p := s.pd
	d := h.d
	if err := s.leaveQueue(h); err != nil {
		return err
	}
	if err := s.unpin(h, now); err != nil {
		return err
	}
	if h.bufBlocks > 0 {
		p.bufFree[d] += h.bufBlocks
		h.bufBlocks = 0
	}
	h.holds.drop(holdSpilled)
	if err := s.dropOffloaded(h, now); err != nil {
		return err
	}
	if err := s.transition(h, hDone, d, now); err != nil {
		return err
	}
	rec := h.rec
	rec.DecodeInstance = int32(d)
	rec.Outcome, rec.Reason = metrics.Failed, reason
	p.hands.del(h.id)
	p.freeHand(h)
	return s.end(&rec, now)
}

// retry moves a request that waited retry_after in one decode queue to
// another decode instance, keeping its pinned KV. When no other instance
// can ever admit it, it keeps its place and the timer is re-armed. KV
// already pushed into d's receive buffer or host memory stays with d.
func (s *Sim) retry(id int64, gen int32, now int64) error {
	p := s.pd
	h := p.hands.get(id)
	if h == nil || h.gen != gen || h.st != hQueued || !h.holds.has(holdPinned) {
		return nil
	}
	old := h.d
	d := s.placeDecode(h, old)
	if d == old {
		return s.schedule(des.Event{At: satAdd(now, p.cfg.RetryAfter), Kind: evRetry, Arg: h.id, Target: h.gen})
	}
	retries := s.engines[old].Record(h.dSlot).Retries
	if err := s.leaveQueue(h); err != nil {
		return err
	}
	h.rec.Retries = retries + 1
	if err := s.enqueueDecode(h, d, now); err != nil {
		return err
	}
	return s.reserve(d, now)
}

// hostCopied: spilled KV is back on the decode device.
func (s *Sim) hostCopied(id int64, gen int32, now int64) error {
	h := s.pd.hands.get(id)
	if h == nil || h.gen != gen || h.st != hTransfer || !h.holds.has(holdSpilled) {
		return fmt.Errorf("cluster: invariant violated: host copy done for request %d, which is not copying spilled KV", id)
	}
	h.holds.drop(holdSpilled)
	return s.transferDone(h, now)
}
