package cluster

import (
	"math"
	"math/rand/v2"
)

// dpBalancer is vLLM 0.19's internal data-parallel load balancing, a
// pure state machine of three parties driven by the group's events:
//
//   - each DP engine reports its (waiting, running) counts after a step,
//     only when the pair changed since its last report
//     (DPEngineCoreProc._maybe_publish_request_counts, vllm/v1/engine/core.py);
//   - the coordinator keeps every rank's latest report and publishes all
//     of them to the front end once at least period has passed since its
//     previous publication and some report arrived since, or every
//     heartbeat when nothing changed (the poll loop of
//     CoordinatorProc.process_input_socket, vllm/v1/engine/coordinator.py:
//     min_stats_update_interval_ms = 100, 4,000 ms otherwise);
//   - the front end replaces its counts with each publication and, for
//     every request it sends, picks the rank with the lowest
//     4 × waiting + running (ties to the lowest rank) and adds one waiting
//     request to it locally (DPLBAsyncMPClient.get_core_engine_for_request,
//     vllm/v1/engine/core_client.py).
//
// The counts the front end sees are therefore stale: a request sent after
// a rank's last report but before a publication that does not yet include
// it is forgotten until the next one, and the front end may pick the same
// rank twice. Publications are not events of the simulation: they are
// settled lazily, in time order, at the next report or request.
type dpBalancer struct {
	period, heartbeat int64
	// reported is each rank's last reported pair, packed as
	// waiting<<32 | running (-1 before its first report).
	reported []int64
	// coord and front are the coordinator's and the front end's scores
	// (4 × waiting + running) per rank.
	coord, front []int
	// lastPub is the time of the last publication (math.MinInt64 before
	// the first); pending says a report arrived since, due when the
	// publication it triggers happens.
	lastPub int64
	pending bool
	due     int64
	// ties, when set, breaks ties between ranks of equal score at random
	// instead of to the lowest rank.
	ties *rand.Rand
}

// newDPBalancer returns the balancer of a group of n ranks whose
// coordinator publishes at most every period and every heartbeat
// otherwise (both in ns, positive); ties, if not nil, breaks ties at
// random.
func newDPBalancer(n int, period, heartbeat int64, ties *rand.Rand) *dpBalancer {
	b := &dpBalancer{period: period, heartbeat: heartbeat, ties: ties, reported: make([]int64, n),
		coord: make([]int, n), front: make([]int, n), lastPub: math.MinInt64}
	for i := range b.reported {
		b.reported[i] = -1
	}
	return b
}

// reset forgets every count, as a restarted vLLM instance starts with a
// new coordinator and front end: nothing reported, nothing published.
// The tie-breaking stream goes on.
func (b *dpBalancer) reset() {
	for i := range b.reported {
		b.reported[i], b.coord[i], b.front[i] = -1, 0, 0
	}
	b.lastPub, b.pending, b.due = math.MinInt64, false, 0
}

// addSat is a + d for d ≥ 0, saturating at math.MaxInt64.
func addSat(a, d int64) int64 {
	if a > math.MaxInt64-d {
		return math.MaxInt64
	}
	return a + d
}

// settle carries out the publications due at or before now.
func (b *dpBalancer) settle(now int64) {
	if b.pending {
		if b.due > now {
			return
		}
		b.publish(b.due)
		b.pending = false
	}
	if b.lastPub == math.MinInt64 {
		return
	}
	// Heartbeats: the same counts again, which drops the front end's
	// local additions.
	if next := addSat(b.lastPub, b.heartbeat); next <= now {
		b.publish(next + (now-next)/b.heartbeat*b.heartbeat)
	}
}

// publish hands the coordinator's counts to the front end at time at.
func (b *dpBalancer) publish(at int64) {
	copy(b.front, b.coord)
	b.lastPub = at
}

// report is rank's (waiting, running) after a step at now.
func (b *dpBalancer) report(now int64, rank, waiting, running int) {
	b.settle(now)
	pair := int64(waiting)<<32 | int64(running)
	if pair == b.reported[rank] {
		return
	}
	b.reported[rank] = pair
	b.coord[rank] = 4*waiting + running
	if !b.pending {
		b.pending = true
		b.due = max(addSat(b.lastPub, b.period), now)
	}
}

// pick is the rank the front end sends a request to at now.
func (b *dpBalancer) pick(now int64) int {
	b.settle(now)
	best, tied := 0, 1
	for i, s := range b.front {
		switch {
		case s < b.front[best]:
			best, tied = i, 1
		case i > best && s == b.front[best]:
			// Reservoir choice among the tied ranks: each kept with
			// probability 1/tied.
			tied++
			if b.ties != nil && b.ties.IntN(tied) == 0 {
				best = i
			}
		}
	}
	b.front[best] += 4
	return best
}
