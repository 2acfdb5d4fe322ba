package runner

import (
	"fmt"
	"slices"
	"testing"

	_ "github.com/servesim/servesim/internal/testseed"
	"pgregory.net/rapid"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
)

// closedLoopRun runs n closed-loop clients sending rounds x n fixed-length
// requests (burst, as vllm bench serve --request-rate inf) with the given
// frontend section ("" for none) and returns the records by id.
func closedLoopRun(t interface {
	Fatalf(string, ...any)
}, n, rounds, input, output int, fe string) []metrics.Record {
	return closedLoopSeed(t, n, rounds, input, output, fe, 42)
}

// closedLoopSeed is closedLoopRun with the scenario's seed.
func closedLoopSeed(t interface {
	Fatalf(string, ...any)
}, n, rounds, input, output int, fe string, seed uint64) []metrics.Record {
	y := fmt.Sprintf(`
seed: %d
engine: {max_num_seqs: 128, max_num_batched_tokens: 2048}
workload:
  max_concurrency: %d
  synthetic:
    requests: %d
    arrival: {kind: burst}
    input: {kind: fixed, mean: %d}
    output: {kind: fixed, mean: %d}
%s
`, seed, n, n*rounds, input, output, fe)
	s, err := config.Parse([]byte(y), "drift.yaml")
	if err != nil {
		t.Fatalf("%v", err)
	}
	b, err := assemble.Build(s, config.Source{})
	if err != nil {
		t.Fatalf("%v", err)
	}
	recs := make([]metrics.Record, n*rounds)
	if _, err := Run(b, Options{OnRecord: func(r *metrics.Record) { recs[r.ID] = *r }}); err != nil {
		t.Fatalf("%v", err)
	}
	return recs
}

// roundTTFTs returns the sorted TTFTs of round r (requests r*n to
// r*n+n-1: the r-th request of each client).
func roundTTFTs(recs []metrics.Record, n, r int) []int64 {
	var v []int64
	for _, rec := range recs[r*n : (r+1)*n] {
		v = append(v, rec.TTFT())
	}
	slices.Sort(v)
	return v
}

// TestClosedLoopDrift: n fixed-length closed-loop clients. Without drift
// (no front end, or a front end with jitter_us 0) nothing random is left:
// the run is the same whatever the seed, and the clients' phases follow a
// deterministic course (TestClosedLoopLockstep shows it settling into
// lockstep). With the front end's drift no round from the third on
// repeats the one before: the clients no longer move in lockstep. Either
// way at most n requests are in flight (from the client's send to its
// last chunk), and every request finishes.
func TestClosedLoopDrift(t *testing.T) {
	const rounds = 12
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, 8).Draw(rt, "clients")
		input := rapid.IntRange(128, 1024).Draw(rt, "input")
		output := rapid.IntRange(16, 64).Draw(rt, "output")
		seed := rapid.Uint64Range(1, 1<<40).Draw(rt, "seed")
		for _, c := range []struct {
			fe    string
			drift bool
		}{{"", false}, {"frontend: {jitter_us: 0}", false}, {"frontend: {}", true}} {
			recs := closedLoopRun(rt, n, rounds, input, output, c.fe)
			for _, r := range recs {
				if r.Outcome != metrics.Finished {
					rt.Fatalf("%q: request %d %s", c.fe, r.ID, r.Outcome)
				}
				inflight := 0
				for _, o := range recs {
					if o.Arrival <= r.Arrival && o.LastToken > r.Arrival {
						inflight++
					}
				}
				if inflight > n {
					rt.Fatalf("%q: %d requests in flight after request %d was sent, limit %d", c.fe, inflight, r.ID, n)
				}
			}
			if !c.drift {
				other := closedLoopSeed(rt, n, rounds, input, output, c.fe, seed)
				for r := range rounds {
					if a, b := roundTTFTs(recs, n, r), roundTTFTs(other, n, r); !slices.Equal(a, b) {
						rt.Fatalf("%q: without drift round %d depends on the seed: %v (seed 42) vs %v (seed %d)", c.fe, r, a, b, seed)
					}
				}
				continue
			}
			for r := 3; r < rounds; r++ {
				if slices.Equal(roundTTFTs(recs, n, r), roundTTFTs(recs, n, r-1)) {
					rt.Fatalf("%q: round %d repeats round %d (TTFTs %v): still in lockstep", c.fe, r, r-1, roundTTFTs(recs, n, r))
				}
			}
		}
	})
}

// TestClosedLoopLockstep: without drift, 7 clients of 1,023-token prompts
// and 56-token outputs start together, spread over a few rounds, then
// settle: from round 7 on every round repeats the one before to the ns
// (each client sees the TTFT some client saw the round before). With the
// front end's drift, no round from the third on repeats.
func TestClosedLoopLockstep(t *testing.T) {
	const n, rounds = 7, 16
	recs := closedLoopRun(t, n, rounds, 1023, 56, "")
	for r := 7; r < rounds; r++ {
		if a, b := roundTTFTs(recs, n, r), roundTTFTs(recs, n, r-1); !slices.Equal(a, b) {
			t.Errorf("without drift round %d differs from round %d: %v vs %v", r, r-1, a, b)
		}
	}
	drift := closedLoopRun(t, n, rounds, 1023, 56, "frontend: {}")
	for r := 3; r < rounds; r++ {
		if a := roundTTFTs(drift, n, r); slices.Equal(a, roundTTFTs(drift, n, r-1)) {
			t.Errorf("with drift round %d repeats round %d: %v", r, r-1, a)
		}
	}
}
