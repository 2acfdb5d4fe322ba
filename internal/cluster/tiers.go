package cluster

import (
	"fmt"

	"github.com/servesim/servesim/internal/des"
	"github.com/servesim/servesim/internal/kvtier"
)

// evTier: the KV tiers' copies have an event due (Arg = generation).
const evTier int32 = 30

// tierState drives the KV tiers below the GPUs (package kvtier) from the
// event loop: one wake-up armed at the hierarchy's next event, superseded
// (by generation) whenever that moves.
type tierState struct {
	h      *kvtier.Hierarchy
	gen    int64
	at     int64 // time of the armed wake-up; -1: none
	events int64
	// Handoff offloads in flight (handoff_offload.go), by tag.
	offloads    map[int64]pendingOffload
	nextOffload int64
	// Offloads waiting for room under PDConfig.OffloadPinnedMax, per
	// node, FIFO; entries whose request moved on are skipped. nextTicket
	// numbers the entries.
	deferred   [][]deferredOffload
	nextTicket int64
	// offloadDeferred counts the offloads that had to wait.
	offloadDeferred int64
	// onOffloadStart, if set, sees the request of every offload started
	// (tests trace the order).
	onOffloadStart func(id int64)
}

// setTiers connects every prefix-caching engine, and every engine that
// swaps preempted requests' KV to host, to the KV tiers h, whose instances
// are the engines in order.
func (s *Sim) setTiers(h *kvtier.Hierarchy) {
	s.tiers = &tierState{h: h, at: -1}
	for _, e := range s.engines {
		if e.Config().PrefixCaching || e.Config().SwapBlocks > 0 {
			e.SetTiers(h)
		}
	}
}

// Tiers returns the KV tiers (nil when off), for observation.
func (s *Sim) Tiers() *kvtier.Hierarchy {
	if s.tiers == nil {
		return nil
	}
	return s.tiers.h
}

// armTiers schedules a wake-up at the tiers' next event when it moved.
// Called after every event: engines start loads and stores inside steps.
func (s *Sim) armTiers() error {
	t := s.tiers
	at, ok := t.h.NextEvent()
	if !ok || at == t.at {
		return nil
	}
	t.gen++
	t.at = at
	if err := s.schedule(des.Event{At: at, Kind: evTier, Arg: t.gen}); err != nil {
		return fmt.Errorf("kv tiers: %w", err)
	}
	return nil
}

// tierStale reports whether a tier wake-up is superseded, or comes after
// every request has ended (stores still copying then change no outcome
// and must not stretch the run).
func (s *Sim) tierStale(ev des.Event) bool {
	return ev.Arg != s.tiers.gen || (s.srcDone && !s.hasNext && s.terminal == s.total && s.inflight == 0)
}

// tierEvent advances the tiers' copies to now and hands each finished load
// or swap copy to its engine, which may then schedule the request.
func (s *Sim) tierEvent(now int64) error {
	t := s.tiers
	t.at = -1
	done, err := t.h.Advance(now)
	if err != nil {
		return fmt.Errorf("cluster: KV tiers at t=%d ns: %w", now, err)
	}
	for _, d := range done {
		if d.Offload {
			if err := s.offloaded(d, now); err != nil {
				return err
			}
			continue
		}
		var err error
		if d.Swap {
			err = s.engines[d.Inst].SwapDone(d.Slot, d.Out, now)
		} else {
			err = s.engines[d.Inst].LoadDone(d.Slot, now)
		}
		if err == nil {
			err = s.kick(d.Inst, now)
		}
		if err != nil {
			return err
		}
	}
	t.events++
	if s.checks && t.events%64 == 0 {
		if err := t.h.Check(); err != nil {
			return fmt.Errorf("kv tiers: invariant violated at t=%d ns: %w", now, err)
		}
	}
	return nil
}
