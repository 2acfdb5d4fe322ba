package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/compare"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/report"
	"github.com/servesim/servesim/internal/runner"
	"github.com/servesim/servesim/internal/workload"
	"github.com/spf13/cobra"
)

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

type runFlags struct {
	scenario    scenarioFlags
	out         string
	csv         string
	jsonl       string
	series      string
	summaryJSON string
	report      string
	printConfig bool
	quiet       bool
	errorBars   bool
	timeline    int64
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Simulate a scenario and print its summary",
		Long: `Simulate a scenario and print its summary on stdout.

With no arguments it runs the embedded default scenario: Llama-3.1-8B on one
RTX PRO 6000, the 300-request ShareGPT trace at 10 req/s, the engine settings
of the measured vLLM run (max_num_seqs 128, max_num_batched_tokens 2048).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRun(cmd, &f) },
	}
	fs := cmd.Flags()
	f.scenario.register(fs)
	fs.StringVar(&f.out, "out", "", "write every output into DIR: requests.csv, requests.jsonl, timeseries.csv, summary.json, scenario.yaml")
	fs.StringVar(&f.csv, "requests-csv", "", "write per-request records as CSV to FILE")
	fs.StringVar(&f.jsonl, "requests-jsonl", "", "write per-request records as JSONL to FILE")
	fs.StringVar(&f.series, "timeseries", "", "write the per-instance 1 s time series CSV to FILE")
	fs.StringVar(&f.summaryJSON, "summary-json", "", "write the summary as JSON to FILE")
	fs.StringVar(&f.report, "report", "", "write a self-contained HTML report (summary, outcomes, latency CDFs, per-instance time series) to FILE")
	fs.BoolVar(&f.printConfig, "print-config", false, "print the fully resolved scenario as YAML and exit")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "no progress indicator")
	fs.Int64Var(&f.timeline, "timeline", -1, "after the summary, chart the life of request ID: front end, queue, prefill, decode and output path, with client-side times when a front end is simulated (docs/client.md)")
	fs.BoolVar(&f.errorBars, "error-bars", false, "add 90 % intervals (step-model residuals for the roofline, seed variance for synthetic workloads; costs extra simulations) after the summary, and errorbars.json with --out")
	return cmd
}

func runRun(cmd *cobra.Command, f *runFlags) error {
	s, src, err := f.scenario.load()
	if err != nil {
		return err
	}
	f.scenario.printNotes(cmd.ErrOrStderr())
	built, err := assemble.Build(s, src)
	if err != nil {
		return badInput(err)
	}
	if f.printConfig {
		return printResolved(cmd.OutOrStdout(), built)
	}
	for _, w := range built.Describe().Warnings {
		fmt.Fprintln(cmd.ErrOrStderr(), "servesim: warning: "+w)
	}
	for _, o := range []struct{ flag, path string }{{"--requests-csv", f.csv}, {"--requests-jsonl", f.jsonl},
		{"--timeseries", f.series}, {"--summary-json", f.summaryJSON}, {"--report", f.report}} {
		if err := checkOutputFile(o.flag, o.path); err != nil {
			return err
		}
	}
	opts := runner.Options{RequestsCSV: f.csv, RequestsJSONL: f.jsonl, Series: f.series}
	summaryPath := f.summaryJSON
	if f.out != "" {
		if err := os.MkdirAll(f.out, 0o755); err != nil {
			return badInput(fmt.Errorf("--out: %w", err))
		}
		set := func(p *string, name string) {
			if *p == "" {
				*p = filepath.Join(f.out, name)
			}
		}
		set(&opts.RequestsCSV, "requests.csv")
		set(&opts.RequestsJSONL, "requests.jsonl")
		set(&opts.Series, "timeseries.csv")
		set(&summaryPath, "summary.json")
		portable, err := withAbsolutePaths(built.Resolved(), src)
		if err != nil {
			return badInput(fmt.Errorf("--out: %w", err))
		}
		y, err := config.Marshal(portable)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(f.out, "scenario.yaml"), y, 0o644); err != nil {
			return fmt.Errorf("output: %w", err)
		}
	}
	var col *report.Collector
	if f.report != "" {
		col = report.NewCollector()
		opts.OnRecord, opts.Sampler = col.Record, col
	}
	var traced *metrics.Record
	if f.timeline >= 0 {
		prev := opts.OnRecord
		opts.OnRecord = func(r *metrics.Record) {
			if r.ID == f.timeline {
				c := *r
				traced = &c
			}
			if prev != nil {
				prev(r)
			}
		}
	}
	prog := newProgress(cmd.ErrOrStderr(), f.quiet, func() int64 { return workloadRequests(built) })
	opts.Progress, opts.ProgressEvery = prog.update, 64
	res, err := runner.Run(built, opts)
	prog.done(res.RequestsTotal)
	for _, n := range f.scenario.notes {
		res.Simulated = append(res.Simulated, "Note: "+n)
	}
	var bars *report.ErrorBars
	writeRunReport := func() error {
		if f.report == "" {
			return nil
		}
		return writeReport(f.report, "servesim run: "+s.Name, []report.Run{{Name: s.Name, Summary: res, Data: col, Instances: compare.Instances(built), ErrorBars: bars}})
	}
	var stop *cluster.StopReport
	if errors.As(err, &stop) {
		// Print what happened up to the stop, then the report (exit 3).
		io.WriteString(cmd.OutOrStdout(), res.String())
		if summaryPath != "" {
			if werr := writeJSON(summaryPath, res); werr != nil {
				return werr
			}
		}
		if werr := writeRunReport(); werr != nil {
			return werr
		}
		return err
	}
	if err != nil {
		var le *workload.LineError
		var we *workload.InputError
		if errors.As(err, &le) || errors.As(err, &we) {
			return badInput(err)
		}
		return err
	}
	if res.RequestsTotal == 0 {
		// Only a trace can be empty (generated workloads need at least one
		// request): nothing was simulated, which is never what was meant.
		return badInput(fmt.Errorf("workload.trace %s: the trace holds no requests (empty, or blank lines only); give one JSON request per line", s.Workload.Trace))
	}
	if _, err := io.WriteString(cmd.OutOrStdout(), res.String()); err != nil {
		return err
	}
	if f.timeline >= 0 {
		if traced == nil {
			return badInput(fmt.Errorf("--timeline %d: no request with that id in the run (ids run from 0 to %d)", f.timeline, res.RequestsTotal+res.WarmupRequests-1))
		}
		if _, err := io.WriteString(cmd.OutOrStdout(), metrics.Timeline(traced)); err != nil {
			return err
		}
	}
	if f.errorBars {
		if bars, err = printErrorBars(cmd.OutOrStdout(), s, src, &res, f.out); err != nil {
			return err
		}
	}
	if summaryPath != "" {
		if err := writeJSON(summaryPath, res); err != nil {
			return err
		}
	}
	return writeRunReport()
}

// writeReport writes the HTML report of runs to path.
func writeReport(path, title string, runs []report.Run) error {
	f, err := os.Create(path)
	if err != nil {
		return badInput(fmt.Errorf("--report: %w", err))
	}
	if err := report.Write(f, title, runs); err != nil {
		f.Close()
		return fmt.Errorf("--report %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--report %s: %w", path, err)
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	return nil
}

// withAbsolutePaths returns a copy of s whose file references (trace,
// models, accelerators_file, profiles, calibration) are absolute, so that the scenario.yaml
// written into an output directory runs from anywhere.
func withAbsolutePaths(s *config.Scenario, src config.Source) (*config.Scenario, error) {
	c := *s
	for _, p := range []*string{&c.Workload.Trace, &c.Models, &c.AcceleratorsFile, &c.Predictor.Profiles, &c.Predictor.Calibration} {
		if *p == "" || strings.HasPrefix(*p, "builtin:") || filepath.IsAbs(*p) {
			continue
		}
		abs, err := filepath.Abs(filepath.Join(src.Dir, *p))
		if err != nil {
			return nil, err
		}
		*p = abs
	}
	return &c, nil
}

// printResolved writes the scenario with every default resolved: each
// instance group's engine block holds its effective settings, preceded by
// comment lines saying where the batch limits come from.
func printResolved(w io.Writer, b *assemble.Built) error {
	y, err := config.Marshal(b.Resolved())
	if err != nil {
		return err
	}
	var head strings.Builder
	head.WriteString("# Resolved scenario: every instance group's engine block holds its effective settings.\n")
	for _, g := range b.Describe().Groups {
		fmt.Fprintf(&head, "# %s: max_num_seqs %d from %s; max_num_batched_tokens %d from %s\n",
			g.Name, g.MaxNumSeqs, g.MaxNumSeqsFrom, g.MaxNumBatchedTokens, g.MaxNumBatchedTokensFrom)
	}
	if _, err := io.WriteString(w, head.String()); err != nil {
		return err
	}
	_, err = w.Write(y)
	return err
}
