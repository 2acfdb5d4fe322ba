package validate

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// fakeRun's statistics are off by |x - best| / 10 percent: the fit must
// find best, and the leave-one-out fit of two runs with different optima
// must take the other run's.
func fakeRun(name string, best float64) MeasuredRun {
	return MeasuredRun{Name: name, Validate: func(x float64) (*Report, error) {
		d := (x - best) / 10
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
	bad := MeasuredRun{Name: "bad", Validate: func(float64) (*Report, error) { return nil, errors.New("boom") }}
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
	run := MeasuredRun{Name: "RTXPRO6000-Llama-3.1-8B", Validate: func(us float64) (*Report, error) {
		return Run(Options{Measured: measured(t, "RTXPRO6000-Llama-3.1-8B"), Name: "run", StepOverheadUs: &us})
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
