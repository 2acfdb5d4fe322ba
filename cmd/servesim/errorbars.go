package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/report"
	"github.com/servesim/servesim/internal/validate"
)

// printErrorBars computes and prints the intervals of a run's statistics
// (validate.RunErrorBars) and, with --out DIR, writes them to
// DIR/errorbars.json. It returns them for the HTML report.
func printErrorBars(w io.Writer, s *config.Scenario, src config.Source, res *metrics.Result, outDir string) (*report.ErrorBars, error) {
	bars, err := validate.RunErrorBars(s, src, res, 0)
	if err != nil {
		return nil, badInput(err)
	}
	if _, err := io.WriteString(w, bars.String()); err != nil {
		return nil, err
	}
	if outDir != "" {
		if err := writeJSON(filepath.Join(outDir, "errorbars.json"), bars); err != nil {
			return nil, fmt.Errorf("--error-bars: %w", err)
		}
	}
	return reportBars(bars), nil
}

// reportBars converts intervals for the HTML report.
func reportBars(b *validate.RunBars) *report.ErrorBars {
	var src []string
	if b.Band != "" {
		src = append(src, b.Band)
	}
	if b.Replicas > 0 {
		src = append(src, fmt.Sprintf("seed variance over %d more seeds", b.Replicas))
	}
	out := &report.ErrorBars{Coverage: b.Coverage, Sources: strings.Join(src, "; ")}
	for _, st := range b.Stats {
		out.Stats = append(out.Stats, report.Interval{Metric: st.Metric, Value: st.Value, Lo: st.Lo, Hi: st.Hi})
	}
	if b.GoodputNA != "" {
		out.NA = append(out.NA, report.Interval{Metric: "goodput_rps", Why: b.GoodputNA})
	}
	return out
}
