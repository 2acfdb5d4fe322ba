package cluster

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/servesim/servesim/internal/des"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// This file holds the fault model (docs/faults.md): instance losses at
// given times or at a seeded mean time between failures, the restart after
// provisioning and weight loading, what a loss does to every request the
// instance held, straggler windows, KV transfers that fail to load and
// link degradation windows.

// Event kinds of the fault model (Target = unit or window index).
const (
	evLose    int32 = 60 + iota // Target = unit, Arg = generation (MTBF) or -1 (scheduled)
	evRestart                   // Target = unit
	evSlow                      // Target = straggler window, Arg = 0 start, 1 end
	evLinkWin                   // Target = link window, Arg = 0 start, 1 end
)

// faultState is the run state of the fault model.
type faultState struct {
	cfg      FaultConfig
	down     []bool  // per engine: not serving
	closed   []bool  // per engine: takes no new requests (down or draining)
	floor    []int64 // per engine: batches at or below this id were lost
	unitOf   []int32 // per engine: its unit, -1 none
	mtbfGen  []int64 // per unit: generation of its pending MTBF loss
	rng      []*rand.Rand
	transfer *rand.Rand
	retries  map[int64]int // request id -> sends after losses (non-handoff requests)
	lostAt   []int64       // per unit: time of the loss (restart pending)
	stats    FaultStats
	// held collects the requests of a lost unit (scratch).
	held []heldReq
	// restoreBW keeps the bandwidth of NICs under a degradation window.
	restoreBW map[int]float64
	// Per unit: its state, and the GPU time it held (billedNs, plus the
	// open interval from billedFrom, -1 when not holding GPUs).
	ustate     []unitState
	billedFrom []int64
	billedNs   []int64
	scale      *scaler // nil: no autoscaler
}

type heldReq struct {
	req workload.Request
	rec metrics.Record
}

// setFaults installs the fault model (Config.Faults), after the P/D
// setup.
func (s *Sim) setFaults(cfg FaultConfig) error {
	n := len(s.engines)
	f := &faultState{cfg: cfg, down: make([]bool, n), closed: make([]bool, n), floor: make([]int64, n), unitOf: make([]int32, n),
		mtbfGen: make([]int64, len(cfg.Units)), lostAt: make([]int64, len(cfg.Units)), retries: map[int64]int{},
		restoreBW: map[int]float64{}, ustate: make([]unitState, len(cfg.Units)), billedFrom: make([]int64, len(cfg.Units)), billedNs: make([]int64, len(cfg.Units))}
	for i := range f.unitOf {
		f.unitOf[i] = -1
	}
	if s.pd != nil && s.pd.cfg.Policy != Pull && s.pd.cfg.Policy != Reject {
		return fmt.Errorf("cluster: faults are modelled with the pull and reject handoff policies only (got %s)", s.pd.cfg.Policy)
	}
	if s.tiers != nil || s.fe != nil {
		return fmt.Errorf("cluster: faults cannot be combined with KV tiers or a front end")
	}
	for u, unit := range cfg.Units {
		if len(unit.Engines) == 0 {
			return fmt.Errorf("cluster: fault unit %s has no engines", unit.Name)
		}
		for _, e := range unit.Engines {
			if e < 0 || e >= n || f.unitOf[e] >= 0 {
				return fmt.Errorf("cluster: fault unit %s: engine %d out of range or in two units", unit.Name, e)
			}
			f.unitOf[e] = int32(u)
		}
		f.rng = append(f.rng, des.Stream(cfg.Seed, fmt.Sprintf("faults/%d", u)))
	}
	s.ft = f
	if cfg.Autoscaler != nil {
		if err := s.setupScaler(*cfg.Autoscaler); err != nil {
			return err
		}
	}
	for _, w := range cfg.Stragglers {
		if w.Engine < 0 || w.Engine >= n || !(w.Factor >= 1) || w.End <= w.Start {
			return fmt.Errorf("cluster: invalid straggler window on engine %d", w.Engine)
		}
	}
	if len(cfg.Links) > 0 && s.pd == nil {
		return fmt.Errorf("cluster: link degradation needs a disaggregated cluster")
	}
	f.transfer = des.Stream(cfg.Seed, "faults/transfers")
	for _, l := range cfg.Losses {
		if l.Unit < 0 || l.Unit >= len(cfg.Units) {
			return fmt.Errorf("cluster: scheduled loss of unknown unit %d", l.Unit)
		}
		if err := s.schedule(des.Event{At: l.At, Kind: evLose, Target: int32(l.Unit), Arg: -1}); err != nil {
			return err
		}
	}
	for u := range cfg.Units {
		if f.ustate[u] != uServing {
			continue // parked: armed when it starts serving
		}
		if err := s.armMTBF(u, 0); err != nil {
			return err
		}
	}
	for i, w := range cfg.Stragglers {
		if err := s.windowEvents(evSlow, i, w.Start, w.End); err != nil {
			return err
		}
	}
	for i, w := range cfg.Links {
		if err := s.windowEvents(evLinkWin, i, w.Start, w.End); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sim) windowEvents(kind int32, i int, start, end int64) error {
	if err := s.schedule(des.Event{At: start, Kind: kind, Target: int32(i), Arg: 0}); err != nil {
		return err
	}
	return s.schedule(des.Event{At: end, Kind: kind, Target: int32(i), Arg: 1})
}

// armMTBF schedules unit u's next random loss after now.
func (s *Sim) armMTBF(u int, now int64) error {
	f := s.ft
	m := f.cfg.Units[u].MTBF
	if m <= 0 {
		return nil
	}
	f.mtbfGen[u]++
	gap := f.rng[u].ExpFloat64() * float64(m)
	at := int64(math.MaxInt64)
	if gap < float64(math.MaxInt64-now) {
		at = now + int64(gap)
	}
	return s.schedule(des.Event{At: at, Kind: evLose, Target: int32(u), Arg: f.mtbfGen[u]})
}

// isDown reports whether engine i is not serving (lost, parked or
// starting).
func (s *Sim) isDown(i int) bool { return s.ft != nil && s.ft.down[i] }

// isClosed reports whether engine i takes no new requests: not serving,
// or draining.
func (s *Sim) isClosed(i int) bool { return s.ft != nil && s.ft.closed[i] }

// faultStale reports whether a fault-model event no longer applies: the
// run has nothing left to serve (so a failure process cannot keep it
// going), or an MTBF loss was superseded.
func (s *Sim) faultStale(ev des.Event) bool {
	if s.idle() {
		return true
	}
	if ev.Kind == evLose && ev.Arg >= 0 && ev.Arg != s.ft.mtbfGen[ev.Target] {
		return true
	}
	return false
}

// idle reports whether every request seen has ended and none can arrive.
func (s *Sim) idle() bool {
	return s.srcDone && !s.hasNext && s.terminal == s.total && len(s.sessions) == 0 && len(s.pending) == len(s.freePend) && !s.blocked
}

// faultEvent dispatches a fault-model event.
func (s *Sim) faultEvent(ev des.Event) error {
	switch ev.Kind {
	case evLose:
		return s.lose(int(ev.Target), ev.At)
	case evRestart:
		return s.restart(int(ev.Target), ev.At)
	case evSlow:
		return s.straggle(int(ev.Target), ev.Arg == 0, ev.At)
	case evLinkWin:
		return s.degrade(int(ev.Target), ev.Arg == 0, ev.At)
	case evScale:
		return s.scaleTick(ev.At)
	case evReady:
		return s.ready(int(ev.Target), ev.At)
	}
	return nil
}

func (s *Sim) logFault(now int64, u int, kind string) {
	unit := &s.ft.cfg.Units[u]
	s.ft.stats.Events = append(s.ft.stats.Events, FaultEvent{At: now, Unit: unit.Name, Pool: unit.Pool, Kind: kind})
}

// lose takes unit u down at now: its engines' state is gone, and every
// request it held is handled as the engines and router do (docs/faults.md).
func (s *Sim) lose(u int, now int64) error {
	f := s.ft
	unit := &f.cfg.Units[u]
	if st := f.ustate[u]; st != uServing && st != uDraining {
		return nil // already down (lost, parked or starting)
	}
	wasDraining := f.ustate[u] == uDraining
	f.ustate[u] = uLost
	f.stats.Losses++
	f.lostAt[u] = now
	s.logFault(now, u, "lost")
	for _, e := range unit.Engines {
		f.down[e], f.closed[e] = true, true
	}
	// What the engines held, outside the handoffs (which carry their own
	// state), and the handoffs touching the unit, in id order.
	f.held = f.held[:0]
	var decodeRecs map[int64]metrics.Record
	for _, e := range unit.Engines {
		s.engines[e].EachHeld(func(req *workload.Request, rec *metrics.Record) {
			if s.pd != nil {
				if h := s.pd.hands.get(rec.ID); h != nil {
					if h.st == hDecoding && h.d == e {
						if decodeRecs == nil {
							decodeRecs = map[int64]metrics.Record{}
						}
						decodeRecs[rec.ID] = *rec
					}
					return
				}
			}
			f.held = append(f.held, heldReq{req: *req, rec: *rec})
		})
	}
	var hands []*hand
	if s.pd != nil {
		for _, h := range s.pd.hands.all {
			if s.touches(h, unit.Engines) {
				hands = append(hands, h)
			}
		}
		slices.SortFunc(hands, func(a, b *hand) int { return compareInt(a.id, b.id) })
		if err := s.stopTransfers(hands, now); err != nil {
			return err
		}
	}
	for _, e := range unit.Engines {
		f.floor[e] = s.engines[e].NextBatchID()
		if err := s.engines[e].Reset(); err != nil {
			return err
		}
		if s.pd != nil {
			s.trackPinned(e, now)
		}
	}
	s.groupsLost(unit.Engines)
	for _, h := range hands {
		if err := s.handLost(h, decodeRecs, now); err != nil {
			return err
		}
	}
	held := f.held
	f.held = nil
	for i := range held {
		if err := s.heldLost(&held[i], unit.Name, now); err != nil {
			return err
		}
	}
	f.held = held[:0]
	if s.pd != nil {
		// Reservations given back on surviving decode instances may admit
		// the next handoffs.
		for _, d := range s.pd.decode {
			if !f.down[d] {
				if err := s.reserve(d, now); err != nil {
					return err
				}
				if err := s.kick(d, now); err != nil {
					return err
				}
			}
		}
		if err := s.wakeNet(); err != nil {
			return err
		}
	}
	if unit.Recovery < 0 || wasDraining {
		// Gone for good, or it was being scaled down anyway.
		f.ustate[u] = uParked
		s.unbill(u, now)
		return nil
	}
	return s.schedule(des.Event{At: satAdd(now, unit.Recovery), Kind: evRestart, Target: int32(u)})
}

// stopTransfers stops the transfers of hands from or to a lost unit; a
// surviving decode instance gives back the reservation of one whose KV
// source died.
func (s *Sim) stopTransfers(hands []*hand, now int64) error {
	f := s.ft
	for _, h := range hands {
		if h.st != hTransfer {
			continue
		}
		if _, err := s.pd.net.Cancel(now, h.id); err != nil {
			return fmt.Errorf("cluster: request %d: cancelling its KV transfer: %w", h.id, err)
		}
		h.holds.drop(holdStreaming)
		if !f.down[h.d] && f.down[h.p] {
			if err := s.engines[h.d].Cancel(h.dSlot); err != nil {
				return err
			}
			h.dSlot = -1
		}
	}
	return nil
}

// touches reports whether handoff h has state on one of engines.
func (s *Sim) touches(h *hand, engines []int) bool {
	for _, e := range engines {
		if h.p == e && (h.st == hPrefilling || h.holds.has(holdPinned)) {
			return true
		}
		if h.d == e && (h.st == hQueued || h.st == hTransfer || h.st == hDecoding) {
			return true
		}
	}
	return false
}

// handLost handles a handoff whose prefill or decode instance was just
// lost (the lost engines are already reset).
func (s *Sim) handLost(h *hand, decodeRecs map[int64]metrics.Record, now int64) error {
	f := s.ft
	pLost, dLost := f.down[h.p], h.d >= 0 && f.down[h.d]
	if pLost && h.holds.has(holdPinned) {
		// The prefilled KV is gone with its instance.
		h.holds.drop(holdPinned)
		h.pSlot = -1
		h.owned = h.owned[:0]
	}
	if dLost {
		h.dSlot = -1 // the decode instance's queue and slots are gone
	}
	switch h.st {
	case hPrefilling:
		// Running (or queued) on the lost prefill instance.
		h.pSlot = -1
		h.owned = h.owned[:0]
		if f.cfg.OnLoss == FailOnLoss {
			return s.failHand(h, now, fmt.Sprintf("instance lost: prefill instance %d failed while the request was there (faults.on_loss fail)", h.p))
		}
		return s.resend(h, now)
	case hQueued, hTransfer:
		if pLost {
			// Its pinned KV is gone: the prompt is computed again on a
			// live prefill instance (a re-prefill).
			if err := s.leaveQueue(h); err != nil {
				return err
			}
			if h.rec.Reprefills >= s.pd.cfg.MaxReprefills {
				return s.failHand(h, now, fmt.Sprintf("re-prefill limit: prefill instance %d lost with the KV after %d re-prefills (handoff.max_reprefills %d)", h.p, h.rec.Reprefills, s.pd.cfg.MaxReprefills))
			}
			f.stats.KVLost++
			h.rec.Reprefills++
			return s.prefillElsewhere(h, now)
		}
		// The decode instance is gone, the KV still pinned: another
		// decode instance takes the handoff.
		d := s.placeDecode(h, -1)
		if d < 0 {
			return s.failHand(h, now, fmt.Sprintf("instance lost: decode instance %d failed and no live decode instance can admit the request", h.d))
		}
		f.stats.Replaced++
		if err := s.enqueueDecode(h, d, now); err != nil {
			return err
		}
		return s.reserve(d, now)
	case hDecoding:
		rec, ok := decodeRecs[h.id]
		if !ok {
			return fmt.Errorf("cluster: invariant violated: request %d decoding on lost instance %d has no record there", h.id, h.d)
		}
		if f.cfg.OnLoss == FailOnLoss {
			return s.endLost(h, rec, now, fmt.Sprintf("instance lost: decode instance %d failed while the request ran there (faults.on_loss fail)", h.d))
		}
		if h.lossRetries >= f.cfg.MaxRetries {
			return s.endLost(h, rec, now, retryLimit(h.lossRetries, f.cfg.MaxRetries))
		}
		return s.resend(h, now)
	}
	return fmt.Errorf("cluster: invariant violated: request %d in handoff state %s on a lost instance", h.id, h.st)
}

// endLost ends a decoding handoff as failed with the decode side's record.
func (s *Sim) endLost(h *hand, rec metrics.Record, now int64, reason string) error {
	if err := s.transition(h, hDone, h.d, now); err != nil {
		return err
	}
	rec.Outcome, rec.Reason = metrics.Failed, reason
	s.pd.hands.del(h.id)
	s.pd.freeHand(h)
	return s.end(&rec, now)
}

// resend sends a handoff whose work was lost with its instance to a live
// prefill instance from scratch (faults.on_loss retry), at most
// max_retries times.
func (s *Sim) resend(h *hand, now int64) error {
	f := s.ft
	if h.lossRetries >= f.cfg.MaxRetries {
		return s.failLostHand(h, now, retryLimit(h.lossRetries, f.cfg.MaxRetries))
	}
	h.lossRetries++
	f.stats.Retried++
	return s.prefillElsewhere(h, now)
}

// retryLimit is the failure reason of a request whose retry budget is
// spent.
func retryLimit(n, limit int) string {
	return fmt.Sprintf("instance lost: retry limit reached after %d retries (faults.max_retries %d)", n, limit)
}

// failLostHand fails a handoff in any state a loss leaves it in.
func (s *Sim) failLostHand(h *hand, now int64, reason string) error {
	if h.st == hDecoding {
		rec := h.rec
		rec.DecodeInstance = int32(h.d)
		return s.endLost(h, rec, now, reason)
	}
	return s.failHand(h, now, reason)
}

// prefillElsewhere queues h's prompt on a live prefill instance the
// router picks (state prefilling), or fails h when none can take it.
func (s *Sim) prefillElsewhere(h *hand, now int64) error {
	if !s.prefillCandidates(&h.req) {
		return s.failLostHand(h, now, "instance lost: no live prefill instance can take the request")
	}
	pi := s.candidates[0]
	s.ph.reset()
	if len(s.candidates) > 1 {
		pi = s.router.Route(&h.req, s.candidates, view{s})
	}
	h.p = pi
	h.owned = h.owned[:0]
	h.gen++
	return s.startPrefill(h, now)
}

// heldLost handles a request served without a handoff (colocated, mixed,
// or prefilled locally on a decode instance) whose instance was lost.
func (s *Sim) heldLost(hr *heldReq, unit string, now int64) error {
	f := s.ft
	id := hr.req.ID
	if f.cfg.OnLoss == FailOnLoss || f.retries[id] >= f.cfg.MaxRetries {
		reason := fmt.Sprintf("instance lost: %s failed while the request ran there (faults.on_loss fail)", unit)
		if f.cfg.OnLoss != FailOnLoss {
			reason = retryLimit(f.retries[id], f.cfg.MaxRetries)
		}
		delete(f.retries, id)
		rec := hr.rec
		rec.Outcome, rec.Reason = metrics.Failed, reason
		return s.end(&rec, now)
	}
	f.retries[id]++
	f.stats.Retried++
	req := hr.req
	s.reArriving, s.reArrival = true, hr.rec.Arrival
	err := s.place(&req, now)
	s.reArriving = false
	return err
}

// restart brings unit u back at now: empty, serving again.
func (s *Sim) restart(u int, now int64) error {
	f := s.ft
	unit := &f.cfg.Units[u]
	if f.ustate[u] != uLost {
		return nil
	}
	f.ustate[u] = uServing
	f.stats.Restarts++
	s.logFault(now, u, "restarted")
	for _, e := range unit.Engines {
		f.down[e], f.closed[e] = false, false
	}
	for _, e := range unit.Engines {
		if err := s.kick(e, now); err != nil {
			return err
		}
		if s.pd != nil && s.pd.isDecode[e] {
			if err := s.reserve(e, now); err != nil {
				return err
			}
		}
	}
	return s.armMTBF(u, now)
}

// straggle starts or ends straggler window i.
func (s *Sim) straggle(i int, start bool, now int64) error {
	w := s.ft.cfg.Stragglers[i]
	// The factor is the product of the windows open on the engine.
	fac := 1.0
	for j, o := range s.ft.cfg.Stragglers {
		open := o.Start <= now && now < o.End
		if j == i {
			open = start
		}
		if o.Engine == w.Engine && open {
			fac *= o.Factor
		}
	}
	s.engines[w.Engine].SetSlowdown(fac)
	kind := "straggler-start"
	if !start {
		kind = "straggler-end"
	}
	if u := s.ft.unitOf[w.Engine]; u >= 0 {
		s.logFault(now, int(u), kind)
	}
	return nil
}

// degrade starts or ends link window i.
func (s *Sim) degrade(i int, start bool, now int64) error {
	f := s.ft
	w := f.cfg.Links[i]
	net := s.pd.net
	for _, e := range w.Engines {
		for _, ep := range s.pd.nodes[e].Endpoints {
			base, ok := f.restoreBW[int(ep)]
			if !ok {
				var err error
				if base, err = net.Bandwidth(ep); err != nil {
					return fmt.Errorf("cluster: link window %d: %w", i, err)
				}
				f.restoreBW[int(ep)] = base
			}
			fac := 1.0
			for j, o := range f.cfg.Links {
				open := o.Start <= now && now < o.End
				if j == i {
					open = start
				}
				if open && slices.Contains(o.Engines, e) {
					fac *= o.Factor
				}
			}
			if err := net.SetBandwidth(now, ep, base*fac); err != nil {
				return fmt.Errorf("cluster: link window %d: %w", i, err)
			}
		}
	}
	kind := "link-degraded"
	if !start {
		kind = "link-restored"
	}
	if len(w.Engines) > 0 {
		if u := f.unitOf[w.Engines[0]]; u >= 0 {
			s.logFault(now, int(u), kind)
		}
	}
	return s.wakeNet()
}

// loadFails draws whether a KV transfer starting now will fail to load.
func (s *Sim) loadFails() bool {
	f := s.ft
	return f != nil && f.cfg.TransferFailure > 0 && f.transfer.Float64() < f.cfg.TransferFailure
}

// loadFailed handles a transfer whose KV failed to load on the decode
// instance, per kv_load_failure_policy: fail ends the request; recompute
// has the decode instance compute the prompt itself.
func (s *Sim) loadFailed(h *hand, now int64) error {
	f := s.ft
	f.stats.LoadFailures++
	e := s.engines[h.d]
	if f.cfg.LoadFailure == FailOnLoadFailure {
		rec := *e.Record(h.dSlot)
		if err := e.Cancel(h.dSlot); err != nil {
			return err
		}
		h.dSlot = -1
		if err := s.unpin(h, now); err != nil {
			return err
		}
		if err := s.transition(h, hDone, h.d, now); err != nil {
			return err
		}
		rec.TransferEnd = now
		rec.Outcome, rec.Reason = metrics.Failed, fmt.Sprintf("kv load failed: transfer from prefill instance %d to decode instance %d (kv_load_failure_policy fail)", h.p, h.d)
		d := h.d
		s.pd.hands.del(h.id)
		s.pd.freeHand(h)
		if err := s.end(&rec, now); err != nil {
			return err
		}
		// The reservation given back may admit the next handoffs.
		if err := s.reserve(d, now); err != nil {
			return err
		}
		return s.kick(d, now)
	}
	f.stats.LoadRecomputed++
	if err := s.transition(h, hDecoding, h.d, now); err != nil {
		return err
	}
	if err := s.unpin(h, now); err != nil {
		return err
	}
	if err := e.LoadFailed(h.dSlot, now); err != nil {
		return err
	}
	return s.kick(h.d, now)
}

// Alive reports whether engine i serves (not lost).
func (s *Sim) Alive(i int) bool { return !s.isDown(i) }

// checkFaults verifies that no handoff keeps state on a lost engine (no
// pinned KV, lease or queue slot outlives its instance) and that every lost
// engine is empty.
func (s *Sim) checkFaults() error {
	f := s.ft
	for i, e := range s.engines {
		if !f.down[i] {
			continue
		}
		if e.HasWork() || e.Pool().Used() != 0 || e.HandoffQueue() != 0 || e.Reserved() != 0 || e.PinnedBlocks() != 0 {
			return fmt.Errorf("cluster: invariant violated: lost instance %d still holds work or KV (running %d waiting %d used %d)", i, e.Running(), e.Waiting(), e.Pool().Used())
		}
	}
	if s.pd == nil {
		return nil
	}
	for id, h := range s.pd.hands.all {
		if (h.holds.has(holdPinned) || h.st == hPrefilling) && f.down[h.p] {
			return fmt.Errorf("cluster: invariant violated: request %d in %s keeps state on lost prefill instance %d", id, h.st, h.p)
		}
		if h.d >= 0 && f.down[h.d] && (h.st == hQueued || h.st == hTransfer || h.st == hDecoding) {
			return fmt.Errorf("cluster: invariant violated: request %d in %s keeps state on lost decode instance %d", id, h.st, h.d)
		}
	}
	return nil
}
