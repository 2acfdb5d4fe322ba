package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/compare"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/report"
	"github.com/servesim/servesim/internal/sweep"
	"github.com/spf13/cobra"
)

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
				return runComparison(cmd, "Variants", "variants", vs, quiet, asJSON, reportPath)
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
			vs, err := compare.Policies(base, src, names)
			if err != nil {
				return badInput(fmt.Errorf("%s: %w", scenarioName(f.file), err))
			}
			return runComparison(cmd, "Handoff policies on "+base.Name, "policies", vs, quiet, asJSON, reportPath)
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

// loadVariants reads the variants of a file or --variant comparison: each
// scenario file (the default scenario when none is given), then each
// --variant applied to the first scenario.
func loadVariants(f *scenarioFlags, specs []string) ([]compare.Variant, error) {
	var vs []compare.Variant
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
		vs = append(vs, compare.Variant{Name: s.Name, Scenario: s, Source: src})
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
		vs = append(vs, compare.Variant{Name: name, Scenario: s, Source: baseSrc})
	}
	seen := map[string]bool{}
	for _, v := range vs {
		if seen[v.Name] {
			return nil, badInput(fmt.Errorf("two variants are named %q; give each scenario a distinct name", v.Name))
		}
		seen[v.Name] = true
	}
	return vs, nil
}

// runComparison runs the variants with progress on stderr (what names
// them there), then prints the results as a table or JSON and writes the
// HTML report.
func runComparison(cmd *cobra.Command, title, what string, vs []compare.Variant, quiet, asJSON bool, reportPath string) error {
	ctx, stop := signalContext()
	defer stop()
	prog := newCountProgress(cmd.ErrOrStderr(), quiet, len(vs), what)
	results, err := compare.Run(ctx, vs, compare.Options{WithReport: reportPath != "", OnDone: prog.add})
	prog.done()
	if err != nil {
		var be *compare.BuildError
		if errors.As(err, &be) {
			return badInput(err)
		}
		return err
	}
	if reportPath != "" {
		runs := make([]report.Run, len(results))
		for i, r := range results {
			runs[i] = *r.Report
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
	_, err = io.WriteString(cmd.OutOrStdout(), compare.Table(title, results))
	return err
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
