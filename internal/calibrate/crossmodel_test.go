package calibrate

import (
	"io/fs"
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/perf"
)

// The cross-model band pools the residuals of the accelerator's tables of
// other models; the deployment's own model and other accelerators' tables
// stay out, and the label names the models it was taken from.
func TestCrossModelBandByHand(t *testing.T) {
	eff := perf.DefaultEfficiency
	table := func(acc, model string, errs ...float64) *Tables { return residualTable(t, acc, model, errs...) }
	// org/P and org/Q give -0.50 .. +0.50 in steps of 0.01 between them
	// and a second org/P table one more 0: 102 residuals, 5th percentile at
	// position 5.05 (-0.45 .. -0.44: -0.4495), 95th at 95.95 (+0.4495).
	p, q := halves()
	ts := []*Tables{
		table("X", "org/D", 5, 5), // the deployment's model at another tp
		table("x", "org/P", p...),
		table("Y", "org/P", -0.9), // another accelerator
		table("X", "org/Q", q...),
		table("X", "org/P", 0),
	}
	b, err := CrossModelBand(eff, "X", "org/D", ts)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(b.Lo+0.4495) > 1e-9 || math.Abs(b.Hi-0.4495) > 1e-9 || b.Rows != 102 {
		t.Fatalf("band %+v, want -0.4495 .. +0.4495 of 102 residuals", b)
	}
	if want := "cross-model band: X calibration, band from tables of P, Q"; b.Label != want || !strings.HasPrefix(b.String(), want+": step error -44.9% .. +44.9% (90% nominal, 102 residuals)") {
		t.Errorf("label %q / %q", b.Label, b.String())
	}
	if _, err := CrossModelBand(eff, "X", "org/D", ts[:1]); err == nil || !strings.Contains(err.Error(), "no measured X tables of another model") {
		t.Errorf("error %v", err)
	}
	groups, err := GroupByModel(eff, "X", "", ts)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 3 || groups[0].Model != "org/D" || groups[1].Model != "org/P" || len(groups[1].Residuals) != 52 || groups[2].Model != "org/Q" || len(groups[2].Residuals) != 50 {
		t.Errorf("groups %+v", groups)
	}
}

// The embedded cross-model band of the RTX PRO 6000 for a model it has no
// tables of (Llama-3.1-70B), recomputed from the three bundles, and its
// leave-one-model-out coverage, which must agree with the band coverage
// calibrate --check prints (one bundle left out of a band on the others).
func TestEmbeddedCrossModelBand(t *testing.T) {
	root, err := fs.Sub(assets.FS(), "profiles")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := AcceleratorTables(root, "RTXPRO6000")
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 3 {
		t.Fatalf("embedded RTXPRO6000 tables: %d", len(ts))
	}
	file, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	en, ok := file.Entry("RTXPRO6000")
	if !ok {
		t.Fatal("no RTXPRO6000 calibration")
	}
	eff := en.Efficiency()
	b, err := CrossModelBand(eff, "RTXPRO6000", "meta-llama/Llama-3.1-70B", ts)
	if err != nil {
		t.Fatal(err)
	}
	var all []float64
	for _, tb := range ts {
		r, err := StepResiduals(eff, tb)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, r...)
	}
	want, _ := NewBand(all, 0.9)
	if b.Lo != want.Lo || b.Hi != want.Hi || b.Rows != want.Rows {
		t.Errorf("band %+v, want %+v", b, want)
	}
	if b.Label != "cross-model band: RTXPRO6000 calibration, band from tables of Qwen3-30B-A3B-Instruct-2507, Qwen3-32B, Llama-3.1-8B" {
		t.Errorf("label %q", b.Label)
	}
	// Qwen3-32B at a tp without tables: its own model's tables stay out.
	b32, err := CrossModelBand(eff, "RTXPRO6000", "Qwen/Qwen3-32B", ts)
	if err != nil {
		t.Fatal(err)
	}
	if b32.Label != "cross-model band: RTXPRO6000 calibration, band from tables of Qwen3-30B-A3B-Instruct-2507, Llama-3.1-8B" || b32.Rows >= b.Rows {
		t.Errorf("Qwen3-32B band %+v", b32)
	}
	groups, err := GroupByModel(eff, "RTXPRO6000", "", ts)
	if err != nil {
		t.Fatal(err)
	}
	lomo, err := LeaveOneModel(groups)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range lomo {
		var train []*Tables
		for j, tb := range ts {
			if j != i {
				train = append(train, tb)
			}
		}
		if ts[i].ModelName != r.HeldOut {
			t.Fatalf("order: %s vs %s", ts[i].ModelName, r.HeldOut)
		}
		wb, covered, steps, err := BandCoverage(eff, train, ts[i])
		if err != nil {
			t.Fatal(err)
		}
		if r.Band.Lo != wb.Lo || r.Band.Hi != wb.Hi || r.Covered != covered || r.Steps != steps {
			t.Errorf("held out %s: %+v, want band %+v inside %v of %d", r.HeldOut, r, wb, covered, steps)
		}
		// measured 88-92 % (docs/calibration.md); a drift past this
		// range means the calibration or the tables changed
		if r.Covered < 0.85 || r.Covered > 0.95 {
			t.Errorf("held out %s: coverage %.3f outside 0.85 .. 0.95", r.HeldOut, r.Covered)
		}
		t.Logf("held out %s: band %+.1f%% .. %+.1f%%, inside %.1f%% of %d", r.HeldOut, 100*r.Band.Lo, 100*r.Band.Hi, 100*r.Covered, r.Steps)
	}
}
