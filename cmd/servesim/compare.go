package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/report"
	"github.com/servesim/servesim/internal/runner"
	"github.com/servesim/servesim/internal/sweep"
	"github.com/servesim/servesim/internal/workpool"
	"github.com/spf13/cobra"
)

// policyResult is one column of a comparison: a handoff policy, or a
// variant (a scenario file or a named set of overrides).
type policyResult struct {
	Policy  string         `json:"policy,omitempty"`
	Variant string         `json:"variant,omitempty"`
	Summary metrics.Result `json:"summary"`
	// Stopped describes the stop of a policy that ends the run (eager).
	Stopped string `json:"stopped,omitempty"`
	// report holds the policy's part of --report (nil without it).
	report *report.Run
}

func newCompareCmd() *cobra.Command {
	var (
		f          scenarioFlags
		asJSON     bool
		reportPath string
		variants   []string
		quiet      bool
	)
	f.handoffList, f.multiFile = true, true
	cmd := &cobra.Command{
		Use:   "compare -c SCENARIO [--handoff pull,reserve,...] | -c A.yaml -c B.yaml ... | --variant 'NAME: PATH=VALUE, ...' ...",
		Short: "Compare variants side by side: handoff policies, scenario files or named overrides",
		Long: `Run variants of a scenario and print them side by side: outcomes, latencies,
throughput, decode-capacity wait, handoff wait and the peak KV pinned on
prefill instances.

With one scenario (-c) and no --variant, the variants are the handoff
policies (--handoff, default all five); the scenario must be disaggregated.
A policy that stops the run (eager, when a decode instance is out of memory
at a handoff) gets a column counting what had happened by the stop.

With several -c files, each file is a variant (named by its name field).
With --variant 'NAME: PATH=VALUE, PATH=VALUE', each variant is the first
scenario (or the default) with those overrides, using the sweep's field
paths, e.g. --variant '4 mixed: instances[0].count=4'. Files and --variant
combine. Flags such as --limit apply to every variant.

The runs are independent and use all cores; each is deterministic.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(f.files) > 1 || len(variants) > 0 {
				vs, err := loadVariants(&f, variants)
				if err != nil {
					return err
				}
				ctx, stop := signalContext()
				defer stop()
				prog := newCountProgress(cmd.ErrOrStderr(), quiet, len(vs), "variants")
				results, err := compareVariants(ctx, vs, reportPath != "", prog.add)
				prog.done()
				if err != nil {
					return err
				}
				return writeComparison(cmd, "Variants", results, asJSON, reportPath)
			}
			names := strings.Split(f.handoff, ",")
			for i, n := range names {
				names[i] = strings.TrimSpace(n)
				if _, err := cluster.ParsePolicy(names[i]); err != nil {
					return badInput(fmt.Errorf("--handoff: %w", err))
				}
			}
			base, src, err := f.load()
			if err != nil {
				return err
			}
			if !base.PD() {
				return badInput(fmt.Errorf("%s: no instance group has role prefill or decode; compare needs a disaggregated scenario", scenarioName(f.file)))
			}
			ctx, stop := signalContext()
			defer stop()
			vs := make([]variant, len(names))
			for i, n := range names {
				s := *base
				s.Handoff.Policy = n
				vs[i] = variant{name: n, policy: true, scenario: &s, src: src}
			}
			prog := newCountProgress(cmd.ErrOrStderr(), quiet, len(vs), "policies")
			results, err := compareVariants(ctx, vs, reportPath != "", prog.add)
			prog.done()
			if err != nil {
				return err
			}
			return writeComparison(cmd, "Handoff policies on "+base.Name, results, asJSON, reportPath)
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr")
	cmd.Flags().StringArrayVar(&variants, "variant", nil, "a variant 'NAME: PATH=VALUE, PATH=VALUE' of the first scenario (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array with one object per policy")
	cmd.Flags().StringVar(&reportPath, "report", "", "write a self-contained HTML report comparing the policies (tables, overlaid latency CDFs, per-instance time series) to FILE")
	return cmd
}

func scenarioName(file string) string {
	if file == "" {
		return "default scenario"
	}
	return file
}

// variant is one column of a comparison.
type variant struct {
	name     string
	policy   bool // the variant is a handoff policy of one scenario
	scenario *config.Scenario
	src      config.Source
}

// loadVariants reads the variants of a file or --variant comparison: each
// scenario file (the default scenario when none is given), then each
// --variant applied to the first scenario.
func loadVariants(f *scenarioFlags, specs []string) ([]variant, error) {
	var vs []variant
	files := f.files
	if len(files) == 0 {
		files = []string{""}
	}
	var base *config.Scenario
	var baseSrc config.Source
	for i, file := range files {
		f.file = file
		s, src, err := f.load()
		if err != nil {
			return nil, err
		}
		if i == 0 {
			base, baseSrc = s, src
		}
		vs = append(vs, variant{name: s.Name, scenario: s, src: src})
	}
	for _, spec := range specs {
		name, sets, ok := strings.Cut(spec, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, badInput(fmt.Errorf("--variant %q: want 'NAME: PATH=VALUE, PATH=VALUE'", spec))
		}
		var as []sweep.Assignment
		for _, kv := range splitTopLevel(sets) {
			if kv = strings.TrimSpace(kv); kv == "" {
				continue
			}
			a, err := parseSet(kv)
			if err != nil {
				return nil, badInput(fmt.Errorf("--variant %s: %w", name, err))
			}
			as = append(as, a)
		}
		s, err := sweep.Apply(base, as...)
		if err != nil {
			return nil, badInput(fmt.Errorf("--variant %s: %w", name, err))
		}
		s.Name = name
		vs = append(vs, variant{name: name, scenario: s, src: baseSrc})
	}
	seen := map[string]bool{}
	for _, v := range vs {
		if seen[v.name] {
			return nil, badInput(fmt.Errorf("two variants are named %q; give each scenario a distinct name", v.name))
		}
		seen[v.name] = true
	}
	return vs, nil
}

// writeComparison prints the results as a table or JSON and writes the
// HTML report.
func writeComparison(cmd *cobra.Command, title string, results []policyResult, asJSON bool, reportPath string) error {
	if reportPath != "" {
		runs := make([]report.Run, len(results))
		for i, r := range results {
			runs[i] = *r.report
		}
		if err := writeReport(reportPath, title, runs); err != nil {
			return err
		}
	}
	if asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	_, err := io.WriteString(cmd.OutOrStdout(), compareTable(title, results))
	return err
}

// compareVariants runs every variant on the worker pool. With withReport
// each result also carries the data of its part of an HTML report. A
// variant whose run fails or panics makes the comparison fail after the
// others completed; ctx cancels the runs.
func compareVariants(ctx context.Context, vs []variant, withReport bool, onDone func()) ([]policyResult, error) {
	results := make([]policyResult, len(vs))
	errs := make([]error, len(vs))
	err := workpool.Run(ctx, 0, workpool.Count(len(vs)),
		func(ctx context.Context, i int) (policyResult, error) {
			v := vs[i]
			built, err := assemble.Build(v.scenario, v.src)
			if err != nil {
				return policyResult{}, badInput(fmt.Errorf("%s: %w", v.name, err))
			}
			opts := runner.Options{Interrupt: workpool.Interrupt(ctx)}
			var col *report.Collector
			if withReport {
				col = report.NewCollector()
				opts.OnRecord, opts.Sampler = col.Record, col
			}
			res, err := runner.Run(built, opts)
			r := policyResult{Summary: res}
			if v.policy {
				r.Policy = v.name
			} else {
				r.Variant = v.name
			}
			if withReport {
				r.report = &report.Run{Name: v.name, Summary: res, Data: col, Instances: reportInstances(built)}
			}
			var stop *cluster.StopReport
			if errors.As(err, &stop) {
				r.Stopped = stop.Error()
				return r, nil
			}
			if err != nil {
				return r, fmt.Errorf("%s: %w", v.name, err)
			}
			return r, nil
		},
		func(i int, r policyResult, err error) error {
			results[i], errs[i] = r, err
			onDone()
			return nil
		})
	if err != nil {
		return nil, err
	}
	return results, errors.Join(errs...)
}

// compareTable renders the variants side by side.
func compareTable(title string, rs []policyResult) string {
	var b strings.Builder
	b.WriteString(title + "\n")
	w := 13
	for i := range rs {
		w = max(w, len(rs[i].name()))
	}
	fmt.Fprintf(&b, "%-32s", "")
	for i := range rs {
		fmt.Fprintf(&b, " %*s", w, rs[i].name())
	}
	b.WriteString("\n")
	// A stopped run shows what had arrived and ended by the stop; its
	// rates and latencies are not comparable with complete runs.
	counts := map[string]bool{"finished": true, "rejected": true, "failed": true, "truncated": true, "simulated time (s)": true}
	row := func(label string, f func(r *policyResult) string) {
		fmt.Fprintf(&b, "%-32s", label)
		for i := range rs {
			v := "stopped"
			if rs[i].Stopped == "" || counts[label] {
				v = f(&rs[i])
			}
			fmt.Fprintf(&b, " %*s", w, v)
		}
		b.WriteString("\n")
	}
	num := func(v int64) string { return fmt.Sprintf("%d", v) }
	fl := func(v float64, p int) string { return fmt.Sprintf("%.*f", p, v) }
	row("finished", func(r *policyResult) string { return num(r.Summary.Finished) })
	row("rejected", func(r *policyResult) string { return num(r.Summary.Rejected) })
	row("failed", func(r *policyResult) string { return num(r.Summary.Failed) })
	row("truncated", func(r *policyResult) string { return num(r.Summary.Truncated) })
	row("simulated time (s)", func(r *policyResult) string { return fl(r.Summary.SimTimeS, 1) })
	row("throughput (req/s)", func(r *policyResult) string { return fl(r.Summary.ThroughputRPS, 3) })
	row("output (tok/s)", func(r *policyResult) string { return fl(r.Summary.OutputTokS, 1) })
	row("TTFT mean (ms)", func(r *policyResult) string { return fl(r.Summary.TTFT.Mean, 1) })
	row("TTFT p99 (ms)", func(r *policyResult) string { return fl(r.Summary.TTFT.P99, 1) })
	row("TPOT mean (ms)", func(r *policyResult) string { return fl(r.Summary.TPOT.Mean, 2) })
	row("TPOT p99 (ms)", func(r *policyResult) string { return fl(r.Summary.TPOT.P99, 2) })
	row("E2E mean (s)", func(r *policyResult) string { return fl(r.Summary.E2E.Mean/1e3, 2) })
	row("E2E p99 (s)", func(r *policyResult) string { return fl(r.Summary.E2E.P99/1e3, 2) })
	row("decode capacity wait mean (ms)", func(r *policyResult) string { return fl(r.Summary.CapacityWait.Mean, 1) })
	row("decode capacity wait p99 (ms)", func(r *policyResult) string { return fl(r.Summary.CapacityWait.P99, 1) })
	row("handoff wait mean (ms)", func(r *policyResult) string { return fl(r.Summary.HandoffWait.Mean, 1) })
	row("handoff wait p99 (ms)", func(r *policyResult) string { return fl(r.Summary.HandoffWait.P99, 1) })
	row("KV transfer mean (ms)", func(r *policyResult) string { return fl(r.Summary.Transfer.Mean, 2) })
	row("pinned KV peak (blocks)", func(r *policyResult) string {
		peak := 0
		for _, p := range r.Summary.PinnedKV {
			peak = max(peak, p.PeakBlocks)
		}
		return num(int64(peak))
	})
	row("preemptions", func(r *policyResult) string { return num(r.Summary.Preemptions) })
	row("re-prefills", func(r *policyResult) string { return num(r.Summary.Reprefills) })
	row("retries", func(r *policyResult) string { return num(r.Summary.Retries) })
	for _, r := range rs {
		if r.Stopped != "" {
			fmt.Fprintf(&b, "\n%s: %s\n", r.name(), r.Stopped)
		}
	}
	return b.String()
}

// name is the column's name.
func (r *policyResult) name() string {
	if r.Policy != "" {
		return r.Policy
	}
	return r.Variant
}

// splitTopLevel splits s at commas outside brackets and braces, so that a
// value may be a YAML flow list or mapping.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
