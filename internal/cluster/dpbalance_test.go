package cluster

import (
	"math"
	"slices"
	"testing"

	"github.com/servesim/servesim/internal/des"
)

// TestDPBalancerStateMachine drives the balancer with a hand-built sequence
// of engine reports and requests (times in ns, period 100, heartbeat 4,000)
// and checks every pick against the hand computation in the comments.
func TestDPBalancerStateMachine(t *testing.T) {
	type ev struct {
		at            int64
		rank          int // report from rank (pick when want >= 0)
		waiting, runs int
		want          int // expected pick; -1 for a report
	}
	seq := []ev{
		{at: 0, want: 0},                                   // front [0 0]: tie, rank 0 → [4 0]
		{at: 1, rank: 0, runs: 1, want: -1},                // coordinator [1 0]; publication due at 1
		{at: 1, rank: 1, want: -1},                         // first report of rank 1 (0, 0)
		{at: 50, want: 1},                                  // published at 1: [1 0] → rank 1 → [1 4]
		{at: 51, rank: 1, runs: 1, want: -1},               // coordinator [1 1]; due max(1+100, 51) = 101
		{at: 100, want: 0},                                 // nothing published yet: [1 4] → rank 0 → [5 4]
		{at: 102, want: 0},                                 // published at 101: [1 1], the 100 ns request forgotten → rank 0 → [5 1]
		{at: 103, rank: 0, runs: 3, want: -1},              // coordinator [3 1]; due max(101+100, 103) = 201
		{at: 150, want: 1},                                 // [5 1] → rank 1 → [5 5]
		{at: 4500, want: 1},                                // published at 201 ([3 1]), heartbeat at 4,201 ([3 1]) → rank 1 → [3 5]
		{at: 4600, rank: 0, runs: 3, want: -1},             // unchanged pair: no report, nothing due
		{at: 4700, want: 0},                                // [3 5] → rank 0 → [7 5]
		{at: 4800, want: 1},                                // [7 5] → rank 1 → [7 9]
		{at: 8300, want: 1},                                // heartbeat at 8,201: [3 1] → rank 1 → [3 5]
		{at: 8400, rank: 1, waiting: 2, runs: 1, want: -1}, // coordinator [3 9]; due max(8201+100, 8400) = 8400
		{at: 8400, want: 0},                                // published at 8,400: [3 9] → rank 0
	}
	b := newDPBalancer(2, 100, 4000, nil)
	for i, e := range seq {
		if e.want < 0 {
			b.report(e.at, e.rank, e.waiting, e.runs)
			continue
		}
		if got := b.pick(e.at); got != e.want {
			t.Fatalf("event %d (pick at %d): rank %d, want %d (front %v)", i, e.at, got, e.want, b.front)
		}
	}
}

// TestDPBalancerSeededTies: with a tie stream, a tie among three ranks
// goes to each with probability 1/3 (30,000 draws, each count within four
// standard deviations of 10,000), and the same seed repeats the same picks.
func TestDPBalancerSeededTies(t *testing.T) {
	draws := func(seed uint64, n int) []int {
		b := newDPBalancer(3, 100, 4000, des.Stream(seed, "dp-balance-ties"))
		out := make([]int, n)
		for i := range out {
			clear(b.front)
			out[i] = b.pick(int64(i))
		}
		return out
	}
	got := draws(7, 30_000)
	count := make([]int, 3)
	for _, r := range got {
		count[r]++
	}
	sd := math.Sqrt(30_000 * (1.0 / 3) * (2.0 / 3))
	for r, c := range count {
		if math.Abs(float64(c)-10_000) > 4*sd {
			t.Errorf("rank %d picked %d times of 30,000, want 10,000 ± %.0f", r, c, 4*sd)
		}
	}
	if !slices.Equal(got[:100], draws(7, 100)) {
		t.Error("the same seed gave different picks")
	}
	// A strictly lower score still wins, whatever the stream.
	b := newDPBalancer(3, 100, 4000, des.Stream(1, "dp-balance-ties"))
	copy(b.front, []int{5, 3, 2})
	if r := b.pick(0); r != 2 {
		t.Errorf("picked rank %d with scores [5 3 2], want 2", r)
	}
}
