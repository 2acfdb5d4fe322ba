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
