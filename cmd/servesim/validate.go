package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/servesim/servesim/internal/assets"

	"github.com/servesim/servesim/internal/validate"
	"github.com/spf13/cobra"
)

func newValidateCmd() *cobra.Command {
	var (
		dir, wl, profiles string
		csvOut            string
		predictor, calib  string
		asJSON, invariant bool
		overhead          float64
	)
	cmd := &cobra.Command{
		Use:   "validate --measured DIR",
		Short: "Compare servesim with a measured vLLM run",
		Long: `Rebuild the scenario of a measured vLLM run from its files, simulate it, and
print vLLM vs servesim vs difference for TTFT, TPOT and E2E latency at mean,
p50, p90, p95 and p99.

DIR holds meta.json (engine settings, dataset_hash), requests.jsonl
(per-request timestamps) and llmservingsim-cluster.json (hardware, memory).
The replayed workload is --workload FILE, or the embedded workload whose
sha256 equals meta.json's dataset_hash. Arrivals are the measured queued_ts
offsets; request bench-i takes the token ids of line i of the workload.
builtin:NAME names an embedded measured run (servesim catalog lists them),
e.g. builtin:RTXPRO6000-Llama-3.1-8B.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return usageError{fmt.Errorf("--measured DIR is required")}
			}
			measured, name, err := openMeasured(dir)
			if err != nil {
				return badInput(err)
			}
			o := validate.Options{Measured: measured, Name: name, Workload: wl, Profiles: profiles, CheckInvariants: invariant, RequestsCSV: csvOut,
				Predictor: predictor, Calibration: calib}
			if cmd.Flags().Changed("step-overhead-us") {
				o.StepOverheadUs = &overhead
			}
			rep, err := validate.Run(o)
			if err != nil {
				return badInput(err)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), rep.String())
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&dir, "measured", "", "measured run directory (meta.json, requests.jsonl, llmservingsim-cluster.json), or builtin:NAME for an embedded one")
	fs.StringVar(&wl, "workload", "", "the JSONL trace the run replayed (default: found by dataset_hash among the embedded workloads)")
	fs.StringVar(&profiles, "profiles", "", "root of profile bundles (default: the embedded bundles)")
	fs.StringVar(&csvOut, "requests-csv", "", "also write the simulated per-request records as CSV to FILE")
	fs.StringVar(&predictor, "predictor", "profile", "step-latency predictor: profile (measured tables) or roofline (calibrated analytical model)")
	fs.StringVar(&calib, "calibration", "", "roofline calibration YAML from servesim calibrate (default: the embedded calibration)")
	fs.BoolVar(&asJSON, "json", false, "print the comparison as one JSON object")
	fs.BoolVar(&invariant, "check-invariants", false, "verify KV-block conservation and scheduler limits after every step")
	fs.Float64Var(&overhead, "step-overhead-us", 0, "add a fixed cost per step on top of the modelled engine time (for studies; default 0, see docs/engine-time.md)")
	return cmd
}

// openMeasured opens a measured run directory on disk or, as builtin:NAME,
// among the embedded runs.
func openMeasured(dir string) (fs.FS, string, error) {
	if name, ok := strings.CutPrefix(dir, "builtin:"); ok {
		runs := measuredRuns()
		if !slices.Contains(runs, name) {
			return nil, "", fmt.Errorf("--measured: no embedded measured run %q; embedded runs: %s", name, strings.Join(runs, ", "))
		}
		sub, err := fs.Sub(assets.FS(), "vllm-measured/"+name)
		if err != nil {
			return nil, "", fmt.Errorf("--measured: %w", err)
		}
		return sub, dir, nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, "", fmt.Errorf("--measured: %q is not a directory; give a measured run directory or builtin:NAME (servesim catalog lists them)", dir)
	}
	return os.DirFS(dir), filepath.Clean(dir), nil
}

// measuredRuns lists the embedded measured runs.
func measuredRuns() []string {
	entries, err := fs.ReadDir(assets.FS(), "vllm-measured")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}
