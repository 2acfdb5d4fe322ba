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
	"github.com/servesim/servesim/internal/config"

	"github.com/servesim/servesim/internal/validate"
	"github.com/spf13/cobra"
)

func newValidateCmd() *cobra.Command {
	var (
		dir, wl, profiles string
		csvOut            string
		predictor, calib  string
		asJSON, invariant bool
		errorBars         bool
		overhead          float64
		bench, scen       string
		bmodel            string
		groups            groupFlags
		offsetMs          float64
		placement         int
		stepsVs           string
		moeDist           string
	)
	cmd := &cobra.Command{
		Use:   "validate --measured DIR",
		Short: "Compare servesim with a measured vLLM run",
		Long: `Rebuild the scenario of a measured vLLM run from its files, simulate it, and
print vLLM vs servesim vs difference for TTFT, TPOT and E2E latency at mean,
p50, p90, p95 and p99, and below them the queue delay (scheduled - queued)
at the same statistics, outside the max |diff| (diff % n/a where the
measured value is below 1 ms; --bench results have no queue rows).

DIR holds meta.json (engine settings, dataset_hash), requests.jsonl
(per-request timestamps) and llmservingsim-cluster.json (hardware, memory).
The replayed workload is --workload FILE, or the embedded workload whose
sha256 equals meta.json's dataset_hash. Arrivals are the measured queued_ts
offsets; request bench-i takes the token ids of line i of the workload.
builtin:NAME names an embedded measured run (servesim catalog lists them),
e.g. builtin:RTXPRO6000-Llama-3.1-8B.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if placement < 0 {
				return usageError{fmt.Errorf("--placement-replicas must be 0 or more (got %d)", placement)}
			}
			if bench != "" {
				if placement > 0 {
					return usageError{fmt.Errorf("--placement-replicas works with --measured DIR; a --bench result has no data-parallel ranks to place")}
				}
				if stepsVs != "" {
					return usageError{fmt.Errorf("--steps-vs works with --measured DIR")}
				}
				if dir != "" {
					return usageError{fmt.Errorf("give --measured DIR or --bench FILE, not both")}
				}
				rep, err := runBenchValidate(cmd, bench, benchOpts{config: scen, model: bmodel, groups: &groups,
					offsetMs: offsetMs, predictor: predictor, calibration: calib,
					profiles: profiles, requestsCSV: csvOut, invariants: invariant, errorBars: errorBars, moeDistribution: moeDist})
				if err != nil {
					return err
				}
				return printReport(cmd, rep, asJSON)
			}
			if dir == "" {
				return usageError{fmt.Errorf("--measured DIR (or --bench FILE) is required")}
			}
			measured, name, err := openMeasured(dir)
			if err != nil {
				return badInput(err)
			}
			o := validate.Options{Measured: measured, Name: name, Workload: wl, Profiles: profiles, CheckInvariants: invariant, RequestsCSV: csvOut,
				Predictor: predictor, Calibration: calib, ErrorBars: errorBars, PlacementReplicas: placement, StepsVs: stepsVs,
				MoEDistribution: moeDist}
			if cmd.Flags().Changed("step-overhead-us") {
				o.StepOverheadUs = &overhead
			}
			rep, err := validate.Run(o)
			if err != nil {
				return badInput(err)
			}
			return printReport(cmd, rep, asJSON)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&bench, "bench", "", "a vllm bench serve result (--save-result --save-detailed JSON) to validate instead of a run directory; engine settings from --config and the flags below")
	fs.StringVarP(&scen, "config", "c", "", "with --bench: scenario YAML describing the measured server (default: the embedded default scenario)")
	fs.StringVar(&bmodel, "model", "", "with --bench: model id org/name (default: the result's model_id, else the scenario's)")
	groups.register(fs, "with --bench: ", false, "hardware", "tp", "max-num-seqs", "max-num-batched-tokens")
	fs.BoolVar(&errorBars, "error-bars", false, "add 90 % intervals from the step model's residuals on the accelerator's tables (two more simulations; needs --predictor roofline) and say whether each measured value lies inside")
	fs.IntVar(&placement, "placement-replicas", 0, "with a data-parallel run: replay it N more times with the DP balancer's ties broken at random and print each statistic's spread (how much the placement of requests on the ranks alone moves it; docs/moe.md)")
	fs.StringVar(&stepsVs, "steps-vs", "", "replay the run once more with every step also timed by this predictor (profile, roofline or perfdb) and print both predictors' step times by kind of step, on the run's own batches (docs/perfdb.md)")
	fs.Float64Var(&offsetMs, "client-offset-ms", 0, "with --bench: client-side time inside each measured TTFT and E2E (HTTP, tokenisation, detokenisation), added to the simulated ones; see docs/validation.md")
	fs.StringVar(&dir, "measured", "", "measured run directory (meta.json, requests.jsonl, llmservingsim-cluster.json), or builtin:NAME for an embedded one")
	fs.StringVar(&wl, "workload", "", "the JSONL trace the run replayed (default: found by dataset_hash among the embedded workloads)")
	fs.StringVar(&profiles, "profiles", "", "root of profile bundles (default: the embedded bundles)")
	fs.StringVar(&csvOut, "requests-csv", "", "also write the simulated per-request records as CSV to FILE")
	fs.StringVar(&predictor, "predictor", "profile", "step-latency predictor: profile (measured tables), roofline (calibrated analytical model) or perfdb (per-op kernel database, docs/perfdb.md)")
	fs.StringVar(&moeDist, "moe-distribution", "", "with --predictor perfdb: the moe_perf routing rows (balanced, power_law_1.01 or power_law_1.2; default: the scenario's predictor.moe_distribution, balanced)")
	fs.StringVar(&calib, "calibration", "", "roofline calibration YAML from servesim calibrate (default: the embedded calibration)")
	fs.BoolVar(&asJSON, "json", false, "print the comparison as one JSON object")
	fs.BoolVar(&invariant, "check-invariants", false, "verify KV-block conservation and scheduler limits after every step (walks over long queues are spread over several steps; docs/performance.md)")
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

func printReport(cmd *cobra.Command, rep *validate.Report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	_, err := fmt.Fprint(cmd.OutOrStdout(), rep.String())
	return err
}

type benchOpts struct {
	config, model          string
	groups                 *groupFlags
	offsetMs               float64
	predictor, calibration string
	profiles, requestsCSV  string
	moeDistribution        string
	invariants, errorBars  bool
}

// runBenchValidate validates a vllm bench serve result file against the
// scenario the flags describe.
func runBenchValidate(cmd *cobra.Command, file string, o benchOpts) (*validate.Report, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, badInput(fmt.Errorf("--bench: %w", err))
	}
	b, err := validate.ReadBench(f, file)
	f.Close()
	if err != nil {
		return nil, badInput(err)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, badInput(fmt.Errorf("--bench: %w", err))
	}
	var (
		s   *config.Scenario
		src config.Source
	)
	if o.config != "" {
		if s, src, err = config.Load(o.config); err != nil {
			return nil, badInput(err)
		}
	} else if s, err = config.LoadDefault(); err != nil {
		return nil, err
	}
	set := cmd.Flags().Changed
	switch {
	case set("model"):
		s.Model = o.model
	case o.config == "" && b.Model != "":
		s.Model = b.Model
	}
	note := func(format string, args ...any) {
		fmt.Fprintf(cmd.ErrOrStderr(), "servesim: note: "+format+"\n", args...)
	}
	if err := o.groups.apply(s, set, note); err != nil {
		return nil, err
	}
	if set("predictor") {
		s.Predictor.Kind = config.PredictorKind(o.predictor)
	}
	if o.calibration != "" {
		s.Predictor.Calibration = o.calibration
	}
	if o.profiles != "" {
		s.Predictor.Profiles = o.profiles
	}
	if o.moeDistribution != "" {
		s.Predictor.MoEDistribution = o.moeDistribution
	}
	s.CheckInvariants = s.CheckInvariants || o.invariants
	s.FillGroups()
	rep, err := validate.RunBench(b, validate.BenchOptions{Scenario: s, Source: src, Name: file, File: abs, RequestsCSV: o.requestsCSV, ClientOffsetMs: o.offsetMs, ErrorBars: o.errorBars})
	if err != nil {
		return nil, badInput(err)
	}
	return rep, nil
}
