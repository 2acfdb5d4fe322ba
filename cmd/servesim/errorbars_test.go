package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/validate"
)

// run --error-bars with an E2E bound: goodput has an interval in the
// summary, errorbars.json and the HTML report, and the JSON's numbers are
// those printed. Without per-request bounds goodput is n/a, as in the
// summary.
func TestRunErrorBarsGoodputCLI(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "r.html")
	code, out, stderr := run(t, "run", "-q", "--predictor", "roofline", "--set", "slo.e2e_ms=20000",
		"--error-bars", "--out", dir, "--report", report)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	bars := readErrorBars(t, dir)
	var g *validate.RunInterval
	for i := range bars.Stats {
		if bars.Stats[i].Metric == "goodput_rps" {
			g = &bars.Stats[i]
		}
	}
	if g == nil || !(g.Lo <= g.Value && g.Value <= g.Hi) || g.Value <= 0 {
		t.Fatalf("goodput interval %+v in %+v", g, bars)
	}
	if !strings.Contains(out, "goodput_rps") {
		t.Errorf("summary lacks goodput's interval:\n%s", out)
	}
	page, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "<td>goodput_rps</td>") || !strings.Contains(string(page), "Error bars (90 % nominal)") {
		t.Errorf("report lacks the error bars")
	}

	sc := write(t, dir, "targets.yaml", "predictor:\n  kind: roofline\nslo:\n  percentiles:\n    - {metric: ttft, percentile: 99, max_ms: 1000}\n")
	code, out, stderr = run(t, "run", "-q", "-c", sc, "--error-bars")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "goodput_rps      n/a") {
		t.Errorf("no n/a goodput:\n%s", out)
	}
}

// readErrorBars reads the errorbars.json that run --error-bars --out dir
// wrote.
func readErrorBars(t *testing.T, dir string) validate.RunBars {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "errorbars.json"))
	if err != nil {
		t.Fatal(err)
	}
	var bars validate.RunBars
	if err := json.Unmarshal(data, &bars); err != nil {
		t.Fatalf("errorbars.json: %v", err)
	}
	return bars
}
