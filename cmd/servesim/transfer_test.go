package main

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/calibrate"
)

const transferLabel = "transfer band: calibration of RTXPRO6000 lent to H100, band from tables of RTX4090"

// run --error-bars on an accelerator without measured tables (H100) gives
// a step band, the labelled transfer band, in the summary and in
// errorbars.json; a trace workload, which has no seed variance, now gets
// intervals too. An accelerator with a calibration of its own but no
// tables for the deployment gives a clear error.
func TestRunErrorBarsTransferBand(t *testing.T) {
	dir := t.TempDir()
	sc := write(t, dir, "h100.yaml", "hardware: H100\npredictor: {kind: roofline}\nworkload:\n  synthetic:\n    requests: 60\n    arrival: {kind: poisson, rate: 5}\n    input: {kind: fixed, mean: 500}\n    output: {kind: fixed, mean: 100}\n")
	code, out, stderr := run(t, "run", "-q", "-c", sc, "--error-bars", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "Error bars (90 % nominal): "+transferLabel+": step error ") || !strings.Contains(out, "seed variance over 10 more seeds") {
		t.Errorf("summary lacks the labelled transfer band:\n%s", out)
	}
	bars := readErrorBars(t, dir)
	if !strings.HasPrefix(bars.Band, transferLabel) {
		t.Errorf("errorbars.json step_band %q", bars.Band)
	}
	// The TPOT of a lightly loaded run moves with the step time: with the
	// band -21.6 % .. +96.4 % the steps are scaled by 1/1.964 = 0.509 and
	// 1/0.784 = 1.276, so the interval reaches below 0.6x and above 1.2x
	// the nominal value (seed spread of fixed lengths aside).
	for _, st := range bars.Stats {
		if st.Metric == "tpot_ms.p50" && !(st.Lo < 0.6*st.Value && st.Hi > 1.2*st.Value) {
			t.Errorf("tpot_ms.p50 interval %.3f .. %.3f around %.3f: not the transfer band's width", st.Lo, st.Hi, st.Value)
		}
	}

	code, out, stderr = run(t, "run", "-q", "--hardware", "H100", "--predictor", "roofline", "--limit", "40", "--error-bars")
	if code != 0 {
		t.Fatalf("trace on H100: exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, transferLabel) || !strings.Contains(out, "no seed variance (a trace workload)") {
		t.Errorf("trace on H100:\n%s", out)
	}

	code, _, stderr = run(t, "run", "-q", "--hardware", "A6000", "--predictor", "roofline", "--limit", "40", "--error-bars")
	if code != 2 || !strings.Contains(stderr, "A6000 has a calibration of its own, so its band would come from its tables of other models: cross-model band for meta-llama/Llama-3.1-8B on A6000: no measured A6000 tables of another model") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("A6000 without tables: exit %d: %q", code, stderr)
	}
}

// validate --bench --hardware H100 --error-bars shows the transfer band's
// intervals with its label.
func TestValidateBenchTransferBand(t *testing.T) {
	code, out, stderr := run(t, "validate", "--bench", "../../internal/validate/testdata/bench-serve-llama-3.1-8b.json.gz",
		"--hardware", "H100", "--predictor", "roofline", "--error-bars", "--max-num-seqs", "128", "--max-num-batched-tokens", "2048")
	if code != 0 && code != 2 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "intervals from the "+transferLabel+": step error -21.6% .. +96.4%") || !strings.Contains(out, "90% interval (ms) inside") {
		t.Errorf("output:\n%s", out)
	}
}

// calibrate --transfer prints the library's transfer band and the
// leave-one-accelerator-out coverage, here on the embedded RTX 4090 tables
// and the v0 excerpts of A6000 and RTX 3090 in the calibrate testdata.
func TestCalibrateTransferCLI(t *testing.T) {
	v0 := "../../internal/calibrate/testdata/v0/"
	refs := []string{v0 + "A6000/meta-llama/Llama-3.1-8B/tp1", v0 + "A6000/microsoft/Phi-mini-MoE-instruct/tp1", v0 + "RTX3090/meta-llama/Llama-3.1-8B/tp2"}
	args := []string{"calibrate", "--transfer"}
	for _, r := range refs {
		args = append(args, "--profiles", r)
	}
	code, out, stderr := run(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	en, root := embeddedCalibration(t, "RTXPRO6000")
	ts, err := calibrate.EmbeddedTables(root, "RTXPRO6000")
	if err != nil {
		t.Fatal(err)
	}
	ts = withProfiles(t, ts, refs)
	groups, err := calibrate.GroupResiduals(en.Efficiency(), "RTXPRO6000", ts)
	if err != nil {
		t.Fatal(err)
	}
	loao, err := calibrate.LeaveOneAccelerator(groups)
	if err != nil {
		t.Fatal(err)
	}
	if len(loao) != 3 || loao[0].HeldOut != "RTX4090" || loao[1].HeldOut != "A6000" || loao[2].HeldOut != "RTX3090" {
		t.Fatalf("held out %+v", loao)
	}
	for i, r := range loao {
		below, above := r.Band.Outside(groups[i].Residuals)
		if math.Abs(below+above+r.Covered-1) > 1e-12 {
			t.Errorf("%s: below %v + inside %v + above %v != 1", r.HeldOut, below, r.Covered, above)
		}
		want := fmt.Sprintf("  %-10s %-24s %+6.1f%% .. %+6.1f%%  %.1f%% of %d (%.1f%%, %.1f%%)\n", r.HeldOut, strings.Join(r.From, ", "), 100*r.Band.Lo, 100*r.Band.Hi, 100*r.Covered, r.Steps, 100*below, 100*above)
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, w := range []string{
		"calibration RTXPRO6000 of embedded calibration (the one an uncalibrated accelerator borrows)\n",
		"the band a run uses (embedded tables only): transfer band: calibration of RTXPRO6000 lent to an accelerator without tables, band from tables of RTX4090: step error -21.6% .. +96.4%",
		"  A6000 steps inside it: ", "  RTX3090 steps inside it: ",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	// Without tables of a second other accelerator there is no hold-out.
	code, out, _ = run(t, "calibrate", "--transfer")
	if code != 0 || !strings.Contains(out, "leave-one-accelerator-out: needs the tables of two accelerators other than RTXPRO6000 (have RTX4090)") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	// A PyTorch-derived calibration may be checked when asked by name.
	if code, _, stderr = run(t, "calibrate", "--transfer", "--use", "NOPE"); code != 2 || !strings.Contains(stderr, "--use NOPE") {
		t.Errorf("--use NOPE: exit %d: %s", code, stderr)
	}
}
