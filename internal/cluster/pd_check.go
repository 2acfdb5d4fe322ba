package cluster

import (
	"fmt"

	"github.com/servesim/servesim/internal/engine"
)

// checkPD verifies, after an event, that every in-flight handoff is in one
// state and holds exactly the resources that state implies, and that the
// engines and the coordinator's counters agree with the handoffs:
//   - prefilling, await-reserve, reserved-prefill, decoding: no pinned KV
//     (reserved-prefill and decoding hold none yet / any more), no buffer
//     share, nothing spilled; no hand decodes where hands retire;
//   - pushing: pinned KV and either a buffer share or a host spill;
//   - queued: pinned KV, or (push) a buffer share or a spill;
//   - transfer: pinned KV, or (push) spilled KV being copied back;
//   - the slot each handoff names on its decode instance is in the matching
//     engine phase (queued, reserved, ready), and every decode instance's
//     admission queue and reservation count equal the handoffs there (and
//     the retired ones still ready, pd.retired), so a reservation with no
//     handoff behind it (a leak) is caught;
//   - no prefill instance pins more KV blocks than it uses;
//   - every handoff whose offload waits for host memory has one place in
//     its node's deferred queue;
//   - the queued-block and demand counters equal their recomputation,
//     push buffer shares plus free buffer equal the configured buffer, and
//     the least-loaded placement's counts equal the engines' (checkLoads).
//
// It costs O(in-flight requests + instances) and runs only with
// CheckInvariants, through checkPDDue.
func (s *Sim) checkPD() error {
	p := s.pd
	n := len(s.engines)
	queued, reserved, qBlocks, buf := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
	demand := 0
	for id, h := range p.hands.all {
		if err := s.checkHand(id, h); err != nil {
			return fmt.Errorf("cluster: invariant violated: request %d in handoff state %s: %w", id, h.st, err)
		}
		switch h.st {
		case hQueued, hAwaitReserve:
			queued[h.d]++
		case hReservedPrefill, hTransfer:
			reserved[h.d]++
		case hDecoding:
			if _, ph := s.engines[h.d].SlotPhase(h.dSlot); ph == engine.PhaseReady {
				reserved[h.d]++
			}
		}
		if h.qBlocks != 0 {
			qBlocks[h.d] += int(h.qBlocks)
		}
		demand += int(h.demand)
		if h.bufBlocks > 0 {
			buf[h.d] += h.bufBlocks
		}
	}
	// A retired hand's decode slot counts among the reservations while it
	// is ready; once in a batch it never is again.
	kept := p.retired[:0]
	for _, r := range p.retired {
		if id, ph := s.engines[r.d].SlotPhase(r.slot); id == r.id && ph == engine.PhaseReady {
			reserved[r.d]++
			kept = append(kept, r)
		}
	}
	p.retired = kept
	if err := s.checkDeferred(); err != nil {
		return err
	}
	if s.ft != nil {
		if err := s.checkFaults(); err != nil {
			return err
		}
	}
	if demand != p.demand {
		return fmt.Errorf("cluster: invariant violated: decode demand counter is %d blocks but the handoffs add up to %d", p.demand, demand)
	}
	for _, d := range p.decode {
		e := s.engines[d]
		if got := e.HandoffQueue(); got != queued[d] {
			return fmt.Errorf("cluster: invariant violated: decode instance %d has %d requests in its admission queue but %d handoffs are queued there", d, got, queued[d])
		}
		if got := e.Reserved(); got != reserved[d] {
			return fmt.Errorf("cluster: invariant violated: decode instance %d holds %d reservations but %d handoffs hold one there (leaked reservation)", d, got, reserved[d])
		}
		if qBlocks[d] != p.queuedBlocks[d] {
			return fmt.Errorf("cluster: invariant violated: decode instance %d queued-block counter is %d but its queued handoffs add up to %d", d, p.queuedBlocks[d], qBlocks[d])
		}
		if p.bufFree != nil && p.bufFree[d]+buf[d] != p.cfg.PushBufferBlocks[d] {
			return fmt.Errorf("cluster: invariant violated: decode instance %d push buffer: %d free + %d held != %d", d, p.bufFree[d], buf[d], p.cfg.PushBufferBlocks[d])
		}
	}
	for _, i := range p.prefill {
		e := s.engines[i]
		if e.Config().Role == engine.Mixed && e.Reserved() != 0 {
			return fmt.Errorf("cluster: invariant violated: mixed instance %d holds %d decode reservations", i, e.Reserved())
		}
		if pin, used := e.PinnedBlocks(), e.Pool().Used(); pin > used {
			// Pinned blocks are distinct blocks in use (a shared prefix
			// block counts once).
			return fmt.Errorf("cluster: invariant violated: prefill instance %d pins %d KV blocks but uses only %d", i, pin, used)
		}
	}
	return s.checkLoads()
}

// The P/D check (checkPDDue) runs after every event while at most
// checkAlways handoffs are in flight; beyond, it costs checkVisits handoff
// visits per event on average for each handoff above checkAlways.
const (
	checkAlways = 64
	checkVisits = 16
)

// checkPDDue runs checkPD after an event when the checks owe it. With n >
// checkAlways handoffs in flight, each event adds checkVisits to a debt
// and the check runs once the debt covers the n - checkAlways handoffs
// above checkAlways, then clears it: every event with up to checkAlways in
// flight (unit tests, ordinary runs), every ceil((n-checkAlways)/
// checkVisits) events with more, so the check costs at most about
// checkAlways + checkVisits handoff visits per event instead of n: a run
// whose decode instances queue thousands of handoffs no longer checks
// each of them after every event. What it verifies persists until repaired (a leaked
// reservation, a counter that drifted, resources contradicting a state),
// so a violation is reported at most that many events - 1 after the event
// that caused it, and the state the run ends in is always checked
// (checkPDNow).
func (s *Sim) checkPDDue() error {
	if n := s.pd.hands.len(); n > checkAlways {
		s.checkDebt += checkVisits
		if s.checkDebt < n-checkAlways {
			return nil
		}
	}
	s.checkDebt = 0
	return s.checkPD()
}

// checkPDNow runs checkPD, if the checks are on, on the state the last
// event left: the run ended or is about to be cut off at a limit.
func (s *Sim) checkPDNow() error {
	if s.pd == nil || !s.checks {
		return nil
	}
	s.checkDebt = 0
	return s.checkPD()
}

// checkDeferred checks the deferred offload queues: each handoff whose
// offload waits holds exactly one live entry (its place), in the queue of
// its prefill instance's node.
func (s *Sim) checkDeferred() error {
	t := s.tiers
	if t == nil {
		return nil
	}
	live := 0
	for node, q := range t.deferred {
		for _, d := range q {
			h := s.pd.hands.get(d.id)
			if h == nil || !h.holds.has(holdOffWait) || h.offTicket != d.ticket {
				continue
			}
			live++
			if got := t.h.NodeOf(h.p); got != node {
				return fmt.Errorf("cluster: invariant violated: request %d's offload waits on node %d, but its prefill instance %d is on node %d", d.id, node, h.p, got)
			}
		}
	}
	waiting := 0
	for _, h := range s.pd.hands.all {
		if h.holds.has(holdOffWait) {
			waiting++
		}
	}
	if live != waiting {
		return fmt.Errorf("cluster: invariant violated: %d handoffs wait to offload but the deferred queues hold %d live entries", waiting, live)
	}
	return nil
}

// checkHand checks one handoff's resources against its state.
func (s *Sim) checkHand(id int64, h *hand) error {
	if h.id != id {
		return fmt.Errorf("filed under id %d but is request %d", id, h.id)
	}
	if err := h.holds.check(h.st, h.bufBlocks); err != nil {
		return err
	}
	if h.st == hDecoding && s.retires() {
		return fmt.Errorf("decoding, not retired")
	}
	if h.holds.has(holdPinned) {
		if got := s.engines[h.p].SlotState(h.pSlot); got != "pinned" && got != "prefilled" {
			return fmt.Errorf("pinned KV on instance %d, but its slot there is %s", h.p, got)
		}
	}
	want := engine.PhaseOther
	switch h.st {
	case hQueued, hAwaitReserve:
		want = engine.PhaseQueued
	case hReservedPrefill, hTransfer:
		want = engine.PhaseReserved
	}
	if want != engine.PhaseOther {
		if gotID, ph := s.engines[h.d].SlotPhase(h.dSlot); gotID != id || ph != want {
			return fmt.Errorf("decode instance %d slot %d is %s (request %d)", h.d, h.dSlot, s.engines[h.d].SlotState(h.dSlot), gotID)
		}
	}
	return nil
}
