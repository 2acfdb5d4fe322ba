package sweep

import (
	"bytes"
	"context"
	"encoding/csv"
	"slices"
	"strconv"
	"testing"

	"github.com/servesim/servesim/internal/config"
)

// TestSpecColumns: a sweep with a speculative axis writes the speculative
// decoding columns after the metric columns; a point without speculation
// leaves them empty and a speculating one carries its run's values (the
// Result the CSV row was written from). A sweep that never speculates
// keeps the columns it had.
func TestSpecColumns(t *testing.T) {
	base, err := config.Parse([]byte(`
model: meta-llama/Llama-3.1-8B
hardware: H100
predictor: {kind: roofline}
workload:
  synthetic:
    requests: 40
    arrival: {kind: poisson, rate: 4}
    input: {kind: fixed, mean: 300}
    output: {kind: fixed, mean: 60}
`), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := ParseGrid([]byte("engine.speculative:\n  - null\n  - {method: eagle, num_speculative_tokens: 3, acceptance_per_position: [0.8, 0.6, 0.4]}\n"), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(context.Background(), base, config.Source{}, g)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Speculates() {
		t.Fatal("a speculative axis: Speculates() false")
	}
	var rows []Row
	var buf bytes.Buffer
	w := NewCSVWriter(&buf, p)
	if err := p.Run(t.Context(), Options{Workers: 1}, func(r Row) error {
		if r.Err != "" {
			t.Fatalf("point %d: %s", r.Point, r.Err)
		}
		rows = append(rows, r)
		return w.Write(r)
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := recs[0]
	i := slices.Index(head, "spec_acceptance_rate")
	if i != len(head)-1-len(SpecColumns()) || !slices.Equal(head[i:len(head)-1], SpecColumns()) {
		t.Fatalf("header %v: want the speculative columns just before error", head)
	}
	if len(recs) != 3 || rows[0].Result.Speculative != nil || rows[1].Result.Speculative == nil {
		t.Fatalf("%d records; speculative results %v, %v", len(recs), rows[0].Result.Speculative, rows[1].Result.Speculative)
	}
	for j := range SpecColumns() {
		if recs[1][i+j] != "" {
			t.Errorf("point without speculation: %s = %q, want empty", head[i+j], recs[1][i+j])
		}
	}
	sp := rows[1].Result.Speculative
	for j, want := range []float64{sp.AcceptanceRate, sp.MeanAcceptedLength, sp.TokensPerStep, sp.DraftShare} {
		got, err := strconv.ParseFloat(recs[2][i+j], 64)
		if err != nil || got != want {
			t.Errorf("%s = %q, want %g", head[i+j], recs[2][i+j], want)
		}
	}
	// Mean accepted length 1 + 0.8 + 0.6 + 0.4 = 2.8 within sampling
	// error (40 requests of 60 tokens: about 800 verifications, standard
	// error sqrt(1.36/800) = 0.04).
	if sp.MeanAcceptedLength < 2.6 || sp.MeanAcceptedLength > 3.0 {
		t.Errorf("mean accepted length %g, want 2.8 ± 0.2", sp.MeanAcceptedLength)
	}

	// Without speculation anywhere, the header is the one before.
	g2, err := ParseGrid([]byte("seed: [1, 2]\n"), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p2, err := NewPlan(context.Background(), base, config.Source{}, g2)
	if err != nil {
		t.Fatal(err)
	}
	if p2.Speculates() || slices.Contains(Columns(g2, p2.Extras()), "spec_acceptance_rate") {
		t.Error("a sweep without speculation has speculative columns")
	}
}
