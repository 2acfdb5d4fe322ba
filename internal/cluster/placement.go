package cluster

import (
	"fmt"

	"github.com/servesim/servesim/internal/engine"
)

// Placement names how a decode instance is chosen for a handoff.
type Placement uint8

// Decode placements.
const (
	RoundRobinPlacement  Placement = iota // cycle through decode instances
	LeastLoadedPlacement                  // fewest running + reserved + queued
	MostFreeKVPlacement                   // most free KV blocks after queued demand
	RetryPlacement                        // most-free-kv, then move after retry_after
)

// Placements lists the placement names in order.
var Placements = []string{"round-robin", "least-loaded", "most-free-kv", "retry"}

// String returns the placement's name.
func (pl Placement) String() string {
	if int(pl) < len(Placements) {
		return Placements[pl]
	}
	return fmt.Sprintf("placement(%d)", uint8(pl))
}

// placeDecode chooses a decode instance for h, avoiding exclude (-1: none)
// when another one fits. Only instances the request can ever be admitted
// on are candidates (prompt plus output, and prompt plus the decode
// headroom, within their KV pool and max_model_len): in a heterogeneous
// pool no policy sends a request where it would wait forever. Every
// placement costs O(decode instances): the scores read engine counters
// and the coordinator's per-instance queued-block counters, or, for the
// least-loaded placement where every instance fits, the coordinator's
// copy of the engines' counts (decodeLoads).
func (s *Sim) placeDecode(h *hand, exclude int) int {
	p := s.pd
	// Within the bounds every decode instance fits: skip the per-instance
	// test.
	all := s.bounds().fitsAllDecode(&h.req)
	if p.cfg.Placement == LeastLoadedPlacement && all && s.loadsKept() {
		d := p.loads.least(p.decode, exclude)
		if s.checks {
			p.loads.verify(d, s.placeScan(h, exclude, all))
		}
		return d
	}
	return s.placeScan(h, exclude, all)
}

// placeScan is placeDecode reading every decode instance's engine; all
// says that every decode instance fits h.
func (s *Sim) placeScan(h *hand, exclude int, all bool) int {
	p := s.pd
	cands := p.decode
	if p.cfg.Placement == RoundRobinPlacement {
		fallback := -1
		for range cands {
			d := cands[p.rr%len(cands)]
			p.rr++
			if s.isClosed(d) {
				continue
			}
			if !all && !s.engines[d].HandoffFits(&h.req) {
				continue
			}
			if d == exclude {
				fallback = d
				continue
			}
			return d
		}
		return fallback
	}
	best, bestScore, fallback := -1, 0, -1
	for _, d := range cands {
		e := s.engines[d]
		if s.isClosed(d) || !all && !e.HandoffFits(&h.req) {
			continue
		}
		if d == exclude {
			fallback = d
			continue
		}
		var score int
		if p.cfg.Placement == LeastLoadedPlacement {
			score = -s.decodeLoad(d)
		} else { // most free KV, net of queued demand
			score = e.Pool().Free() - p.queuedBlocks[d]
		}
		if best < 0 || score > bestScore {
			best, bestScore = d, score
		}
	}
	if best < 0 {
		return fallback
	}
	return best
}

// decodeLoad is decode instance d's least-loaded score: requests running,
// holding a reservation, or in its admission queue.
func (s *Sim) decodeLoad(d int) int {
	e := s.engines[d]
	return e.Running() + e.Reserved() + e.HandoffQueue()
}

// decodeLoads is the coordinator's copy of every decode instance's
// decodeLoad, in one cache line for 16 instances where reading the
// engines touches two lines of each. An instance's count changes only in
// engine calls on it: the coordinator's own (Enqueue, Reserve, Withdraw,
// ForceReserve, a batch formed after a transfer or a local prefill), each
// followed by noteLoad, and a step's end or an abort, each followed in the
// same event by reserve on that instance, which notes it. Other paths
// (faults and the autoscaler, KV tiers, data-parallel groups, and a
// pipelined decode instance, whose next batch forms when its first stage
// is free) are not followed: with any of them placement reads the
// engines. With the invariant checks on, every placement from the copy is
// compared with the scan of the engines and every count with its engine
// after each event (checkPD).
type decodeLoads struct {
	n  []int32 // per decode instance, in pd.decode order; nil: not kept
	at []int32 // per instance: its index in pd.decode, or -1
	// bad is the first disagreement the checks found.
	bad error
}

// setup sizes the copy for decode instances decode of engines (all zero:
// nothing runs yet), or leaves it off when placement is not least-loaded
// or a decode instance is pipelined.
func (l *decodeLoads) setup(pl Placement, engines []*engine.Engine, decode []int) {
	if pl != LeastLoadedPlacement {
		return
	}
	for _, d := range decode {
		if engines[d].Config().PipelineParallel > 1 {
			return
		}
	}
	l.n, l.at = make([]int32, len(decode)), make([]int32, len(engines))
	for i := range l.at {
		l.at[i] = -1
	}
	for k, d := range decode {
		l.at[d] = int32(k)
	}
}

// loadsKept reports whether the decode loads copy is current (see
// decodeLoads).
func (s *Sim) loadsKept() bool {
	return s.pd.loads.n != nil && s.ft == nil && s.groups == nil && s.tiers == nil
}

// noteLoad refreshes instance d's entry of the decode loads copy after an
// engine call on it (nothing for a prefill instance).
func (s *Sim) noteLoad(d int) {
	l := &s.pd.loads
	if l.n == nil {
		return
	}
	if k := l.at[d]; k >= 0 {
		l.n[k] = int32(s.decodeLoad(d))
	}
}

// least is the least-loaded placement over the copy: the decode instance
// with the smallest count, the first one on a tie, exclude only when no
// other one is left.
func (l *decodeLoads) least(decode []int, exclude int) int {
	if exclude >= 0 && l.at[exclude] >= 0 {
		return l.leastBut(decode, int(l.at[exclude]))
	}
	best, bestN := 0, l.n[0]
	for k, n := range l.n[1:] {
		if n < bestN {
			best, bestN = k+1, n
		}
	}
	return decode[best]
}

// leastBut is least with the decode instance at index ex excluded.
func (l *decodeLoads) leastBut(decode []int, ex int) int {
	best, bestN := -1, int32(0)
	for k, n := range l.n {
		if k != ex && (best < 0 || n < bestN) {
			best, bestN = k, n
		}
	}
	if best < 0 {
		return decode[ex]
	}
	return decode[best]
}

// verify notes a placement from the copy (got) that differs from the scan
// of the engines (want).
func (l *decodeLoads) verify(got, want int) {
	if got != want && l.bad == nil {
		l.bad = fmt.Errorf("cluster: invariant violated: least-loaded placement chose decode instance %d from the coordinator's counts, but the engines' counts choose %d", got, want)
	}
}

// checkLoads compares every count of the copy with its engine.
func (s *Sim) checkLoads() error {
	l := &s.pd.loads
	if l.bad != nil || !s.loadsKept() {
		return l.bad
	}
	for k, d := range s.pd.decode {
		if got := s.decodeLoad(d); int(l.n[k]) != got {
			return fmt.Errorf("cluster: invariant violated: decode instance %d runs, reserves or queues %d requests, but the coordinator counts %d", d, got, l.n[k])
		}
	}
	return nil
}
