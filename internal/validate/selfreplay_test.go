package validate

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/runner"
	"github.com/servesim/servesim/internal/workload"
)

// measuredFromRecord writes a simulated request's record in the measured
// layout (seconds; the record's own queued time as queued_ts), as a vLLM
// run's requests.jsonl would hold it.
func measuredFromRecord(r *metrics.Record) workload.MeasuredRequest {
	sec := func(ns int64) float64 { return float64(ns) / 1e9 }
	return workload.MeasuredRequest{RequestID: fmt.Sprintf("bench-%d", r.ID), Index: int(r.ID),
		InputToks: r.InputTokens, OutputToks: r.Generated, ArrivalTime: sec(r.Arrival),
		QueuedTS: sec(r.Queued), ScheduledTS: sec(r.Scheduled), FirstTokenTS: sec(r.FirstToken), LastTokenTS: sec(r.LastToken)}
}

// selfReplayScenario is the default scenario (Llama-3.1-8B on one RTX PRO
// 6000) on a synthetic workload heavy enough to queue.
func selfReplayScenario(t *testing.T, async bool) *config.Scenario {
	t.Helper()
	s, err := config.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	s.Engine.AsyncScheduling = &async
	s.Workload = config.Workload{TimeScale: 1, Format: "jsonl", Synthetic: &workload.Synthetic{Requests: 300,
		Arrival: workload.ArrivalProcess{Kind: "poisson", Rate: 8},
		Input:   workload.LengthDist{Kind: "lognormal", Mean: 1000, Sigma: 0.6},
		Output:  workload.LengthDist{Kind: "lognormal", Mean: 200, Sigma: 0.6}}}
	return s
}

// recordRun simulates s on its own workload and returns its records in
// the measured layout, by request id.
func recordRun(t *testing.T, s *config.Scenario) []workload.MeasuredRequest {
	t.Helper()
	built, err := assemble.Build(s, config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	var reqs []workload.MeasuredRequest
	if _, err := runner.Run(built, runner.Options{OnRecord: func(r *metrics.Record) {
		if r.Outcome != metrics.Finished {
			t.Errorf("request %d: %v", r.ID, r.Outcome)
		}
		reqs = append(reqs, measuredFromRecord(r))
	}}); err != nil {
		t.Fatal(err)
	}
	return reqs
}

// Replaying a run's own per-request records through the measured-replay
// source (the path validate --measured takes) reproduces the run: with
// async scheduling (vLLM's default and the measured runs') every TTFT,
// TPOT and E2E statistic exactly, and every request's timestamps to the
// nanosecond. Each replayed arrival is the run's queued time, which is the
// end of the step in flight when the request arrived, so it lands on a
// step boundary; the engine must take it in there (before the fix it
// recorded the end of the next step, shortening TTFT by one step: TTFT
// p95 -11.8 % on this workload). Without async scheduling the replay is
// close but not exact, see docs/validation.md.
func TestReplayOwnRecords(t *testing.T) {
	for _, c := range []struct {
		async  bool
		maxPct float64 // largest |diff| allowed over the 15 statistics
	}{{true, 0}, {false, 1.5}} {
		t.Run(fmt.Sprintf("async=%v", c.async), func(t *testing.T) {
			s := selfReplayScenario(t, c.async)
			reqs := recordRun(t, s)
			byID := map[int64]workload.MeasuredRequest{}
			for _, m := range reqs {
				byID[int64(m.Index)] = m
			}
			var mismatched int
			replay := *s
			// The trace is replaced by the measured source; Build only
			// needs a file to exist.
			trace := filepath.Join(t.TempDir(), "self.jsonl")
			if err := os.WriteFile(trace, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			replay.Workload = config.Workload{TimeScale: 1, Format: "jsonl", Trace: trace}
			var sim []*metrics.Record
			built, err := assemble.Build(&replay, config.Source{})
			if err != nil {
				t.Fatal(err)
			}
			src, err := workload.MeasuredSource(reqs, nil)
			if err != nil {
				t.Fatal(err)
			}
			built = built.WithSource(func() (workload.Source, io.Closer, error) { return src, io.NopCloser(nil), nil })
			if _, err := runner.Run(built, runner.Options{OnRecord: func(r *metrics.Record) {
				rc := *r
				sim = append(sim, &rc)
			}}); err != nil {
				t.Fatal(err)
			}
			// The replay's clock starts at the first queued time.
			t0 := math.Inf(1)
			for _, m := range reqs {
				t0 = math.Min(t0, m.QueuedTS)
			}
			for _, r := range sim {
				m := byID[r.ID]
				want := [3]int64{ns(m.QueuedTS - t0), ns(m.FirstTokenTS - t0), ns(m.LastTokenTS - t0)}
				if got := [3]int64{r.Queued, r.FirstToken, r.LastToken}; got != want {
					if mismatched++; c.async && mismatched <= 3 {
						t.Errorf("request %d: queued, first, last %v, want %v", r.ID, got, want)
					}
				}
			}
			rep, err := compare(&replay, config.Source{}, reqs, func() (workload.Source, error) { return workload.MeasuredSource(reqs, nil) }, "self", "", 0, nil, true)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d of %d requests differ\n%s", mismatched, len(reqs), rep)
			if rep.MaxAbsDiffPct > c.maxPct {
				t.Fatalf("max |diff| %.3f %%, want <= %g %%\n%s", rep.MaxAbsDiffPct, c.maxPct, rep)
			}
			// With async scheduling every scheduled time is reproduced
			// too: the queue-delay rows agree to the rounding.
			if c.async {
				for _, q := range rep.QueueDelay {
					if math.Abs(q.DiffMs) > 0.001 {
						t.Errorf("queue %s: %.3f ms simulated, %.3f measured", q.Stat, q.Simulated, q.Measured)
					}
				}
			}
		})
	}
}

func ns(sec float64) int64 { return int64(math.Round(sec * 1e9)) }
