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
