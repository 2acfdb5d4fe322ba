package validate

import (
	"strings"
	"testing"
)

// With error bars every simulated statistic lies in its interval, the
// interval is not empty, and the coverage is the share of measured values
// inside (checked row by row). The measured run is not used to form the
// band: it comes from the roofline's residuals on the profile tables.
func TestErrorBarsOnMeasuredRun(t *testing.T) {
	rep, err := Run(Options{Measured: measured(t, "RTXPRO6000-Llama-3.1-8B"), Name: "run", Predictor: "roofline", ErrorBars: true})
	if err != nil {
		t.Fatal(err)
	}
	checkIntervals(t, rep)

	// Off by default: no intervals, no extra runs.
	plain, err := Run(Options{Measured: measured(t, "RTXPRO6000-Llama-3.1-8B"), Name: "run", Predictor: "roofline"})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Band != "" || plain.Stats[0].Lo != nil {
		t.Error("intervals without --error-bars")
	}
	for i := range plain.Stats {
		if plain.Stats[i].Simulated != rep.Stats[i].Simulated {
			t.Errorf("error bars changed the nominal %s %s", plain.Stats[i].Metric, plain.Stats[i].Stat)
		}
	}
}

// checkIntervals requires every statistic of rep to lie in a non-empty
// interval and the coverage to be the share of measured values inside
// (checked row by row).
func checkIntervals(t *testing.T, rep *Report) {
	t.Helper()
	t.Log("\n" + rep.String())
	inside := 0
	for _, r := range rep.Stats {
		if r.Lo == nil || r.Hi == nil || r.Inside == nil {
			t.Fatalf("%s %s: no interval", r.Metric, r.Stat)
		}
		if !(*r.Lo <= r.Simulated && r.Simulated <= *r.Hi && *r.Lo < *r.Hi) {
			t.Errorf("%s %s: simulated %.2f outside [%.2f, %.2f]", r.Metric, r.Stat, r.Simulated, *r.Lo, *r.Hi)
		}
		if in := r.Measured >= *r.Lo && r.Measured <= *r.Hi; in != *r.Inside {
			t.Errorf("%s %s: inside %v, but measured %.2f vs [%.2f, %.2f]", r.Metric, r.Stat, *r.Inside, r.Measured, *r.Lo, *r.Hi)
		} else if in {
			inside++
		}
	}
	if want := float64(inside) / float64(len(rep.Stats)); rep.Coverage != want || rep.Band == "" {
		t.Errorf("coverage %v (band %q), want %v", rep.Coverage, rep.Band, want)
	}
}

// The data-parallel, expert-parallel Qwen3-30B-A3B run steps its ranks in
// lockstep through its own predictor: the band scales those steps too,
// so every interval has width (it had none when only the instances'
// predictors were scaled), and all 15 measured values lie inside.
func TestErrorBarsOnDPRun(t *testing.T) {
	rep, err := Run(Options{Measured: measured(t, "RTXPRO6000-Qwen3-30B-A3B-Instruct-2507"), Name: "run", Predictor: "roofline", ErrorBars: true})
	if err != nil {
		t.Fatal(err)
	}
	checkIntervals(t, rep)
	if rep.Coverage != 1 {
		t.Errorf("coverage %v, measured 1 (15 of 15)", rep.Coverage)
	}
}

func TestErrorBarsNeedRoofline(t *testing.T) {
	_, err := Run(Options{Measured: measured(t, "RTXPRO6000-Llama-3.1-8B"), Name: "run", ErrorBars: true})
	if err == nil || !strings.Contains(err.Error(), "--error-bars needs --predictor roofline") {
		t.Fatalf("error %v", err)
	}
}
