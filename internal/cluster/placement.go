package cluster

import "fmt"

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
// and the coordinator's per-instance queued-block counters.
func (s *Sim) placeDecode(h *hand, exclude int) int {
	p := s.pd
	cands := p.decode
	// Within the bounds every decode instance fits: skip the per-instance
	// test.
	all := s.bounds().fitsAllDecode(&h.req)
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
			score = -(e.Running() + e.Reserved() + e.HandoffQueue())
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
