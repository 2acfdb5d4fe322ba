package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run on an accelerator whose embedded calibration is PyTorch-derived
// (A6000, RTX 3090) says so in every output that describes the run: the
// summary, summary.json and the HTML report. An uncalibrated accelerator
// borrows the vLLM-kernel calibration (RTX PRO 6000), never a
// PyTorch-derived one, and warns. A calibration fitted on the per-op
// performance database says so and what it kept from the RTX PRO 6000's.
func TestCalibrationLabelInEveryOutput(t *testing.T) {
	for _, c := range []struct {
		hw, want, not string
	}{
		{"A6000", "A6000 calibrated (embedded calibration); PyTorch-derived", ""},
		{"RTX3090", "RTX3090 calibrated (embedded calibration); PyTorch-derived", ""},
		{"H100", "H100 calibrated (embedded calibration); fitted on per-op kernel tables perfdb:h100_sxm/vllm/0.19.0; kept from RTXPRO6000", ""},
		{"RTX4090", "borrowed calibration", "PyTorch"},
	} {
		t.Run(c.hw, func(t *testing.T) {
			dir := t.TempDir()
			rep := filepath.Join(dir, "report.html")
			code, stdout, stderr := run(t, "run", "-q", "--hardware", c.hw, "--predictor", "roofline", "--limit", "5",
				"--out", dir, "--report", rep)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			js, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			html, err := os.ReadFile(rep)
			if err != nil {
				t.Fatal(err)
			}
			for name, out := range map[string]string{"summary": stdout, "summary.json": string(js), "report": string(html)} {
				if !strings.Contains(out, c.want) {
					t.Errorf("%s lacks %q", name, c.want)
				}
				if c.not != "" && strings.Contains(out, c.not) {
					t.Errorf("%s mentions %q", name, c.not)
				}
			}
			if c.not != "" && !strings.Contains(stderr, "borrowed from RTXPRO6000") {
				t.Errorf("no borrowing warning naming RTXPRO6000: %s", stderr)
			}
		})
	}
}

// Commands without a run summary (search, compare, sweep) say the same on
// stderr: a PyTorch-derived calibration in a note, a borrowed one in a
// warning, each once.
func TestCalibrationNoteWithoutSummary(t *testing.T) {
	dir := t.TempDir()
	grid := write(t, dir, "grid.yaml", "engine.max_num_seqs: [32, 64]\n")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"max-rate", []string{"search", "max-rate", "-q", "--hardware", "A6000", "--predictor", "roofline", "--limit", "20"},
			"servesim: note: instance group g0: step latency roofline, A6000 calibrated (embedded calibration); PyTorch-derived"},
		{"compare", []string{"compare", "-q", "--hardware", "RTX4090", "--predictor", "roofline", "--limit", "5",
			"--variant", "a: engine.max_num_seqs=32", "--variant", "b: engine.max_num_seqs=64"},
			"servesim: warning: roofline: RTX4090 is not calibrated: efficiencies borrowed from RTXPRO6000"},
		{"sweep", []string{"sweep", "-q", "--grid", grid, "--hardware", "RTX3090", "--predictor", "roofline", "--limit", "5", "-o", filepath.Join(dir, "out.csv")},
			"servesim: note: instance group g0: step latency roofline, RTX3090 calibrated (embedded calibration); PyTorch-derived"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := run(t, c.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if n := strings.Count(stderr, c.want); n != 1 {
				t.Errorf("stderr has %q %d times, want once:\n%s", c.want, n, stderr)
			}
		})
	}
}
