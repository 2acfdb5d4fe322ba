package validate

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/calibrate"
	"github.com/servesim/servesim/internal/config"
)

// StepBand picks the deployment's own tables when it has some, the
// transfer band on an accelerator that borrows its calibration, and the
// cross-model band on a calibrated accelerator without tables for the
// model or tp; the cross-model band is the library's, recomputed here.
func TestStepBandKinds(t *testing.T) {
	file, err := calibrate.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	en, _ := file.Entry("RTXPRO6000")
	root, err := fs.Sub(assets.FS(), "profiles")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := calibrate.AcceleratorTables(root, "RTXPRO6000")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, hw, model string
		tp              int
		label, err      string
		crossModel      bool
	}{
		{"own tables", "RTXPRO6000", "meta-llama/Llama-3.1-8B", 1, "", "", false},
		// H100's own calibration is fitted on per-op tables (no step
		// tables to take a band from): the transfer band stands in.
		{"transfer", "H100", "meta-llama/Llama-3.1-8B", 1, "transfer band: calibration of RTXPRO6000 lent to H100, band from tables of RTX4090", "", false},
		{"model without tables", "RTXPRO6000", "meta-llama/Llama-3.1-70B", 2, "cross-model band: RTXPRO6000 calibration, band from tables of Qwen3-30B-A3B-Instruct-2507, Qwen3-32B, Llama-3.1-8B", "", true},
		{"tp without tables", "RTXPRO6000", "Qwen/Qwen3-32B", 4, "cross-model band: RTXPRO6000 calibration, band from tables of Qwen3-30B-A3B-Instruct-2507, Llama-3.1-8B", "", true},
		{"calibrated, no tables at all", "A6000", "meta-llama/Llama-3.1-8B", 1, "", "no measured A6000 tables of another model", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := config.LoadDefault()
			if err != nil {
				t.Fatal(err)
			}
			s.Hardware, s.Model = tc.hw, tc.model
			s.Instances[0].Hardware = ""
			tp := tc.tp
			s.Instances[0].TP = &tp
			s.Predictor.Kind = "roofline"
			b, err := StepBand(s)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Label != tc.label {
				t.Errorf("label %q, want %q", b.Label, tc.label)
			}
			if tc.crossModel {
				want, err := calibrate.CrossModelBand(en.Efficiency(), "RTXPRO6000", tc.model, ts)
				if err != nil {
					t.Fatal(err)
				}
				if *b != want {
					t.Errorf("band %+v, want %+v", *b, want)
				}
			}
		})
	}
}
