package sweep

import (
	"bytes"
	"context"
	"testing"

	"github.com/servesim/servesim/internal/config"
)

// TestRaceParallelWorkers runs a small sweep with several workers and
// with one and compares the rows. It is short enough for CI to run under
// the race detector (go test -race -run TestRace).
func TestRaceParallelWorkers(t *testing.T) {
	base, err := config.Parse([]byte("workload: {limit: 24}\ninstances: [{role: prefill}, {role: decode}]\n"), "race.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := ParseGrid([]byte("handoff.policy: [pull, reserve, push]\nworkload.time_scale: [1, 0.5]\n"), "race-grid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(context.Background(), base, config.Source{}, g)
	if err != nil {
		t.Fatal(err)
	}
	one := runSweep(t, p, 1, Shard{}, false)
	if got := runSweep(t, p, 4, Shard{}, false); !bytes.Equal(got, one) {
		t.Fatalf("4 workers differ from 1:\n%s\nvs\n%s", got, one)
	}
}
