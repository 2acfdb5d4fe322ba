package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/calibrate"
)

const crossModelLabel = "cross-model band: RTXPRO6000 calibration, band from tables of Qwen3-30B-A3B-Instruct-2507, Qwen3-32B, Llama-3.1-8B"

// run --error-bars for a model the RTX PRO 6000 has no tables of gives the
// labelled cross-model band in the summary and errorbars.json.
func TestRunErrorBarsCrossModelBand(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := run(t, "run", "-q", "--hardware", "RTXPRO6000", "--model", "meta-llama/Llama-3.1-70B", "--set", "instances[0].tp=2",
		"--predictor", "roofline", "--limit", "20", "--error-bars", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "Error bars (90 % nominal): "+crossModelLabel+": step error -24.8% .. +14.5% (90% nominal, 58548 residuals); no seed variance (a trace workload)") {
		t.Errorf("summary lacks the labelled cross-model band:\n%s", out)
	}
	if bars := readErrorBars(t, dir); !strings.HasPrefix(bars.Band, crossModelLabel+": ") {
		t.Errorf("errorbars.json step_band %q", bars.Band)
	}
}

// calibrate --cross-model prints the library's band and leave-one-model-out
// rows: on the embedded RTX PRO 6000 bundles, and with --use A6000 on the
// v0 excerpts in the calibrate testdata; bundles of another accelerator
// are refused in one line.
func TestCalibrateCrossModelCLI(t *testing.T) {
	v0 := "../../internal/calibrate/testdata/v0/"
	for _, tc := range []struct {
		acc   string
		refs  []string
		label string
	}{
		{"RTXPRO6000", nil, crossModelLabel},
		{"A6000", []string{v0 + "A6000/meta-llama/Llama-3.1-8B/tp1", v0 + "A6000/microsoft/Phi-mini-MoE-instruct/tp1"},
			"cross-model band: A6000 calibration, band from tables of Llama-3.1-8B, Phi-mini-MoE-instruct"},
	} {
		t.Run(tc.acc, func(t *testing.T) {
			args := []string{"calibrate", "--cross-model"}
			if tc.refs != nil {
				args = append(args, "--use", tc.acc)
			}
			for _, r := range tc.refs {
				args = append(args, "--profiles", r)
			}
			code, out, stderr := run(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			en, root := embeddedCalibration(t, tc.acc)
			ts, err := calibrate.AcceleratorTables(root, tc.acc)
			if err != nil {
				t.Fatal(err)
			}
			ts = withProfiles(t, ts, tc.refs)
			b, err := calibrate.CrossModelBand(en.Efficiency(), tc.acc, "", ts)
			if err != nil {
				t.Fatal(err)
			}
			if b.Label != tc.label || !strings.Contains(out, "band of a model without tables: "+b.String()+"\n") {
				t.Errorf("band %q not printed:\n%s", b, out)
			}
			groups, err := calibrate.GroupByModel(en.Efficiency(), tc.acc, "", ts)
			if err != nil {
				t.Fatal(err)
			}
			lomo, err := calibrate.LeaveOneModel(groups)
			if err != nil {
				t.Fatal(err)
			}
			if len(lomo) != len(ts) {
				t.Fatalf("%d held out, want one per model (%d)", len(lomo), len(ts))
			}
			for i, r := range lomo {
				below, above := r.Band.Outside(groups[i].Residuals)
				want := fmt.Sprintf("  %-36s %+6.1f%% .. %+6.1f%%  %.1f%% of %d (%.1f%%, %.1f%%)\n", r.HeldOut, 100*r.Band.Lo, 100*r.Band.Hi, 100*r.Covered, r.Steps, 100*below, 100*above)
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
	code, _, stderr := run(t, "calibrate", "--cross-model", "--profiles", v0+"A6000/meta-llama/Llama-3.1-8B/tp1")
	if code != 2 || !strings.Contains(stderr, "tables of A6000, but --cross-model checks the calibration of RTXPRO6000") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("A6000 bundle for the RTXPRO6000 check: exit %d: %q", code, stderr)
	}
}
