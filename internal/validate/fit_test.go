package validate

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/runner"
	"github.com/servesim/servesim/internal/workload"
)

// fakeRun's statistics are off by |x - best| / 10 percent: the fit must
// find best, and the leave-one-out fit of two runs with different optima
// must take the other run's.
func fakeRun(name string, best float64) MeasuredRun {
	return MeasuredRun{Name: name, Validate: func(t Terms) (*Report, error) {
		d := (t.OverheadUs - best) / 10
		rep := &Report{Run: name}
		for range 15 {
			rep.Stats = append(rep.Stats, Row{Metric: "TTFT", Stat: "mean", Measured: 100, Simulated: 100 + d, DiffPct: d})
		}
		rep.MaxAbsDiffPct = math.Abs(d)
		return rep, nil
	}}
}

func TestFitOverheadByHand(t *testing.T) {
	res, err := FitOverhead([]MeasuredRun{fakeRun("a", 120)})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(res.OverheadUs-120) > 1 || res.InSample > 0.1 || res.LOO != nil {
		t.Fatalf("fit %+v, want 120 us, ~0 error, no leave-one-out", res)
	}
	// Two runs, optima 100 and 300: in sample anything between minimises the
	// summed |error|; held out, each run gets the other's optimum: 20 % off.
	res, err = FitOverhead([]MeasuredRun{fakeRun("a", 100), fakeRun("b", 300)})
	if err != nil {
		t.Fatal(err)
	}
	if res.OverheadUs < 99 || res.OverheadUs > 301 || math.Abs(res.InSample-10) > 0.1 {
		t.Fatalf("in sample %+v, want an overhead in [100, 300] with mean error 10 %%", res)
	}
	for i, want := range []float64{300, 100} {
		l := res.LOO[i]
		if math.Abs(l.OverheadUs-want) > 1 || math.Abs(l.MeanAbsPct-20) > 0.15 || math.Abs(l.MaxAbsPct-20) > 0.15 {
			t.Errorf("leave-one-out %s: %+v, want overhead %v and 20 %% off", l.Run, l, want)
		}
	}
	if !strings.Contains(res.String(), "leave-one-out") {
		t.Errorf("report:\n%s", res)
	}
	// Optimum at 0: the range's end is taken, not an interior point.
	if res, err := FitOverhead([]MeasuredRun{fakeRun("z", -50)}); err != nil || res.OverheadUs != 0 {
		t.Fatalf("optimum below 0: %+v, %v", res, err)
	}
	bad := MeasuredRun{Name: "bad", Validate: func(Terms) (*Report, error) { return nil, errors.New("boom") }}
	if _, err := FitOverhead([]MeasuredRun{bad}); err == nil || !strings.Contains(err.Error(), "bad: boom") {
		t.Fatalf("error %v", err)
	}
}

// On the shipped run the fitted extra host time is small: the engine-time
// model already accounts for the host (docs/engine-time.md).
func TestFitOverheadOnShippedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("about 25 validations")
	}
	run := MeasuredRun{Name: "RTXPRO6000-Llama-3.1-8B", TP: 1, Validate: func(tm Terms) (*Report, error) {
		return Run(Options{Measured: measured(t, "RTXPRO6000-Llama-3.1-8B"), Name: "run", StepOverheadUs: &tm.OverheadUs, CollectiveScale: &tm.CollectiveScale})
	}}
	res, err := FitOverhead([]MeasuredRun{run})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if res.OverheadUs > 500 || res.InSample > 3 {
		t.Fatalf("fit %+v: more than 0.5 ms a step or 3 %% mean error", res)
	}
}

// Self-consistency of the collective fit: a tp = 2 run simulated with a
// known collective scale (1.6) and no extra overhead is fed back as the
// "measured" run; the fit must recover the scale within 1 % (the search
// resolves 0.5 %), the overhead within 50 µs and match the run to within
// 0.2 % mean error (measured: x1.601, 0 µs, 0.03 %).
func TestFitCollectiveScaleRecovered(t *testing.T) {
	if testing.Short() {
		t.Skip("about 100 validations")
	}
	const truth = 1.6
	s, err := config.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	*s.Instances[0].TP = 2
	off := false
	s.Engine.PrefixCaching = &off // the replay has no token ids
	s.Workload = config.Workload{TimeScale: 1, Format: "jsonl", Synthetic: &workload.Synthetic{Requests: 200,
		Arrival: workload.ArrivalProcess{Kind: "poisson", Rate: 6},
		Input:   workload.LengthDist{Kind: "lognormal", Mean: 1000, Sigma: 0.6},
		Output:  workload.LengthDist{Kind: "lognormal", Mean: 200, Sigma: 0.6}}}
	// The "measured" run: the synthetic workload simulated with the true
	// scale, its records written as a bench result would hold them.
	// Replaying a run's own records reproduces it exactly
	// (TestReplayOwnRecords), so one run is the whole measurement.
	truthRun := *s
	truthRun.Predictor.CollectiveScale = truth
	built, err := assemble.Build(&truthRun, config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	var b Bench
	if _, err := runner.Run(built, runner.Options{OnRecord: func(r *metrics.Record) {
		if r.Outcome != metrics.Finished {
			t.Errorf("request %d did not finish", r.ID)
			return
		}
		q := float64(r.Queued) / 1e9
		b.Requests = append(b.Requests, workload.MeasuredRequest{RequestID: fmt.Sprintf("bench-%d", r.ID), Index: int(r.ID),
			InputToks: r.InputTokens, OutputToks: r.Generated, ArrivalTime: float64(r.Arrival) / 1e9, QueuedTS: q, ScheduledTS: q,
			FirstTokenTS: float64(r.FirstToken) / 1e9, LastTokenTS: float64(r.LastToken) / 1e9})
	}}); err != nil {
		t.Fatal(err)
	}
	// RunBench names the result file as the run's trace: it must exist.
	file := filepath.Join(t.TempDir(), "bench.json")
	if err := os.WriteFile(file, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := MeasuredRun{Name: "tp2", TP: 2, Validate: func(tm Terms) (*Report, error) {
		v := *s
		v.Predictor.StepOverheadUs, v.Predictor.CollectiveScale = tm.OverheadUs, tm.CollectiveScale
		return RunBench(&b, BenchOptions{Scenario: &v, Name: "tp2", File: file})
	}}
	// The replay at the true terms reproduces the run exactly; at scale 1
	// it is far off.
	for _, c := range []struct {
		tm     Terms
		lo, hi float64
	}{{Terms{0, truth}, 0, 0}, {Terms{0, 1}, 10, 100}} {
		rep, err := run.Validate(c.tm)
		if err != nil {
			t.Fatal(err)
		}
		if m := meanAbs(rep); m < c.lo || m > c.hi {
			t.Fatalf("%+v: mean |diff| %.3f %%, want in [%g, %g]\n%s", c.tm, m, c.lo, c.hi, rep)
		}
	}
	res, err := FitOverhead([]MeasuredRun{run})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if !res.Collective || math.Abs(res.CollectiveScale/truth-1) > 0.01 || res.OverheadUs > 50 || res.InSample > 0.2 {
		t.Fatalf("fit %+v: want collective x%g within 1 %%, overhead <= 50 us, mean error <= 0.2 %%", res, truth)
	}
}
