package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/validate"
)

// printErrorBars computes and prints the intervals of a run's statistics
// (validate.RunErrorBars) and, with --out DIR, writes them to
// DIR/errorbars.json.
func printErrorBars(w io.Writer, s *config.Scenario, src config.Source, res *metrics.Result, outDir string) error {
	bars, err := validate.RunErrorBars(s, src, res, 0)
	if err != nil {
		return badInput(err)
	}
	if _, err := io.WriteString(w, bars.String()); err != nil {
		return err
	}
	if outDir != "" {
		if err := writeJSON(filepath.Join(outDir, "errorbars.json"), bars); err != nil {
			return fmt.Errorf("--error-bars: %w", err)
		}
	}
	return nil
}
