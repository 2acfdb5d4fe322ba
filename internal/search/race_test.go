package search

import (
	"context"
	"testing"

	"github.com/servesim/servesim/internal/config"
)

// TestRacePDRatioWorkers runs a small pd-ratio search with several workers
// and with one and compares the answers. It is short enough for CI to run
// under the race detector (go test -race -run TestRace).
func TestRacePDRatioWorkers(t *testing.T) {
	base, err := config.Parse([]byte(`
instances: [{role: prefill}, {role: decode}]
workload:
  synthetic:
    requests: 60
    arrival: {kind: poisson, rate: 4}
    input: {kind: uniform, min: 100, max: 800}
    output: {kind: uniform, min: 10, max: 60}
`), "race.yaml")
	if err != nil {
		t.Fatal(err)
	}
	par, err := PDRatio(context.Background(), base, config.Source{}, 4, Options{SLO: pdSLO}, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	one, err := PDRatio(context.Background(), base, config.Source{}, 4, Options{SLO: pdSLO}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(par.Splits) != 3 || len(one.Splits) != 3 {
		t.Fatalf("%d and %d splits, want 3", len(par.Splits), len(one.Splits))
	}
	for i := range one.Splits {
		if one.Splits[i].GoodputRPS != par.Splits[i].GoodputRPS || one.Splits[i].Err != par.Splits[i].Err {
			t.Fatalf("split %d: %+v with 1 worker, %+v with 3", i, one.Splits[i], par.Splits[i])
		}
	}
}

// TestMaxRatePercentileTargetsOnly: a scenario with only a percentile
// target is searched against that target, not default per-request bounds:
// the rate found meets it and 5 % more misses it.
func TestMaxRatePercentileTargetsOnly(t *testing.T) {
	base, err := config.Parse([]byte(`
slo: {percentiles: [{metric: ttft, percentile: 90, max_ms: 500}]}
workload:
  synthetic:
    requests: 200
    arrival: {kind: poisson, rate: 4}
    input: {kind: uniform, min: 500, max: 3000}
    output: {kind: uniform, min: 20, max: 100}
`), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := MaxRate(context.Background(), base, config.Source{}, Options{Percentiles: true})
	if err != nil {
		t.Fatal(err)
	}
	best, above := res.Best.Summary, res.Above.Summary
	if !res.Best.Pass || res.Above.Pass || best.TTFT.P90 > 500 || above.TTFT.P90 <= 500 {
		t.Fatalf("best p90 TTFT %.1f ms (pass %v), above %.1f ms (pass %v)", best.TTFT.P90, res.Best.Pass, above.TTFT.P90, res.Above.Pass)
	}
	if best.SLO == nil || best.SLO.Attainment != nil {
		t.Fatalf("no per-request bounds, yet an attainment: %+v", best.SLO)
	}
}
