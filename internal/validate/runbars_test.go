package validate

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/workload"
)

func nominal(t *testing.T, s *config.Scenario) *RunBars {
	t.Helper()
	res, err := simulate(s, config.Source{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	bars, err := RunErrorBars(s, config.Source{}, res, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range bars.Stats {
		if !(st.Lo <= st.Value && st.Value <= st.Hi) {
			t.Errorf("%s: %v outside [%v, %v]", st.Metric, st.Value, st.Lo, st.Hi)
		}
	}
	return bars
}

// The default scenario with the roofline: a trace, so only the step band;
// every interval is a real one around its value.
func TestRunErrorBarsRoofline(t *testing.T) {
	s, err := config.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	s.Predictor.Kind = "roofline"
	bars := nominal(t, s)
	if bars.Band == "" || bars.Replicas != 0 {
		t.Fatalf("band %q, replicas %d", bars.Band, bars.Replicas)
	}
	for _, st := range bars.Stats {
		if !(st.Lo < st.Hi) {
			t.Errorf("%s: empty interval [%v, %v]", st.Metric, st.Lo, st.Hi)
		}
	}
}

// A synthetic workload with fixed lengths arriving at once has nothing
// random: the seed replicas agree and, without a band (profile
// predictor), every interval is the value itself. Poisson arrivals of
// lognormal lengths do vary with the seed.
func TestRunErrorBarsSeedVariance(t *testing.T) {
	s, err := config.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	s.Workload = config.Workload{TimeScale: 1, Format: "jsonl", Synthetic: &workload.Synthetic{Requests: 50,
		Arrival: workload.ArrivalProcess{Kind: "burst"},
		Input:   workload.LengthDist{Kind: "fixed", Mean: 512}, Output: workload.LengthDist{Kind: "fixed", Mean: 64}}}
	bars := nominal(t, s)
	if bars.Replicas != 4 || !strings.Contains(bars.Note, "roofline") {
		t.Fatalf("replicas %d, note %q", bars.Replicas, bars.Note)
	}
	for _, st := range bars.Stats {
		if st.Lo != st.Value || st.Hi != st.Value {
			t.Errorf("%s: deterministic workload, interval [%v, %v] around %v", st.Metric, st.Lo, st.Hi, st.Value)
		}
	}
	s.Workload.Synthetic.Arrival = workload.ArrivalProcess{Kind: "poisson", Rate: 5}
	s.Workload.Synthetic.Input = workload.LengthDist{Kind: "lognormal", Mean: 512, Sigma: 0.5}
	bars = nominal(t, s)
	if st := bars.Stats[0]; !(st.Lo < st.Hi) {
		t.Errorf("throughput over seeds: empty interval %+v", st)
	}
}

func TestRunErrorBarsNeedASource(t *testing.T) {
	s, err := config.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	res, err := simulate(s, config.Source{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RunErrorBars(s, config.Source{}, res, 0); err == nil || !strings.Contains(err.Error(), "nothing to take an interval from") {
		t.Fatalf("error %v", err)
	}
}

// Goodput gets an interval when the run has per-request SLO bounds. With a
// bound every request meets in all three runs, goodput = met / duration =
// finished / duration is throughput, interval included. With a tight E2E
// bound the slow and fast runs meet it for different numbers of requests:
// the interval is exactly the span of the three runs' goodputs (a trace
// has no seed variance), and it is a real one.
func TestRunErrorBarsGoodput(t *testing.T) {
	s, err := config.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	s.Predictor.Kind = "roofline"
	s.SLO = config.SLO{E2EMs: 1e9}
	bars := nominal(t, s)
	get := func(b *RunBars, m string) RunInterval {
		for _, st := range b.Stats {
			if st.Metric == m {
				return st
			}
		}
		t.Fatalf("no %s in %+v", m, b.Stats)
		return RunInterval{}
	}
	if g, th := get(bars, "goodput_rps"), get(bars, "throughput_rps"); g.Value != th.Value || g.Lo != th.Lo || g.Hi != th.Hi {
		t.Errorf("all requests meet the SLO: goodput %+v != throughput %+v", g, th)
	}

	nom, err := simulate(s, config.Source{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	s.SLO.E2EMs = nom.E2E.P50 // about half the requests meet it
	nom, err = simulate(s, config.Source{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	band, err := errorBand(true, s)
	if err != nil {
		t.Fatal(err)
	}
	fast, slow := band.StepScales()
	want := []float64{*nom.SLO.GoodputRPS}
	for _, f := range []float64{fast, slow} {
		r, err := simulate(s, config.Source{}, f)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, *r.SLO.GoodputRPS)
	}
	bars = nominal(t, s)
	g := get(bars, "goodput_rps")
	lo, hi := round3(min(want[0], want[1], want[2])), round3(max(want[0], want[1], want[2]))
	if g.Value != round3(want[0]) || g.Lo != lo || g.Hi != hi || !(lo < hi) {
		t.Errorf("goodput %+v, want %v in [%v, %v]", g, round3(want[0]), lo, hi)
	}
	if bars.GoodputNA != "" {
		t.Errorf("goodput n/a with bounds: %q", bars.GoodputNA)
	}

	// Percentile targets only: goodput does not exist, as in the summary.
	s.SLO = config.SLO{Percentiles: []config.PercentileTarget{{Metric: "ttft", Percentile: 99, MaxMs: 1000}}}
	bars = nominal(t, s)
	for _, st := range bars.Stats {
		if st.Metric == "goodput_rps" {
			t.Errorf("goodput without per-request bounds: %+v", st)
		}
	}
	if !strings.Contains(bars.GoodputNA, "n/a") || !strings.Contains(bars.String(), "goodput_rps      n/a") {
		t.Errorf("n/a missing: %q\n%s", bars.GoodputNA, bars)
	}
}
