package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/servesim/servesim/internal/compare"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/report"
	"github.com/servesim/servesim/internal/sweep"
	"github.com/servesim/servesim/internal/validate"
	"github.com/spf13/cobra"
)

func newCompareCmd() *cobra.Command {
	var (
		f          scenarioFlags
		asJSON     bool
		reportPath string
		variants   []string
		quiet      bool
		errorBars  bool
		csvPath    string
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

--csv FILE writes the results as CSV instead of the table: a first column
"variant" (or "policy") with the names, then the columns of a sweep's CSV
(docs/outputs.md), so that "servesim table FILE --cols ..." shows any of
them, e.g. per-tier statistics of KV tier variants.

The runs are independent and use all cores; each is deterministic.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stop := interruptible(cmd)
			defer stop()
			if len(f.files) > 1 || len(variants) > 0 {
				vs, err := loadVariants(&f, variants)
				if err != nil {
					return err
				}
				f.printNotes(cmd.ErrOrStderr())
				// Each variant is built once: to describe it here, then
				// to run it.
				seen := map[string]bool{}
				for i := range vs {
					b, err := buildWarn(cmd.ErrOrStderr(), seen, vs[i].Scenario, vs[i].Source)
					if err != nil {
						return badInput(err)
					}
					vs[i].Built = b
				}
				return runComparison(cmd, "Variants", "variants", vs, compareOut{quiet, asJSON, errorBars, reportPath, csvPath})
			}
			names := strings.Split(f.handoff, ",")
			for i, n := range names {
				names[i] = strings.TrimSpace(n)
				if _, err := config.ParseHandoffPolicy(names[i]); err != nil {
					return badInput(fmt.Errorf("--handoff: %w", err))
				}
			}
			base, src, err := f.load()
			if err != nil {
				return err
			}
			f.printNotes(cmd.ErrOrStderr())
			vs, err := compare.Policies(base, src, names)
			if err != nil {
				return badInput(fmt.Errorf("%s: %w", scenarioName(f.file), err))
			}
			// Each policy's variant is built once, to describe it (the
			// policies share their warnings, printed once) and to run it.
			// The first failing build is the scenario's error; a later
			// one, which only the policy can have caused, names it.
			seen := map[string]bool{}
			for i := range vs {
				b, err := buildWarn(cmd.ErrOrStderr(), seen, vs[i].Scenario, vs[i].Source)
				if err != nil && i > 0 {
					err = fmt.Errorf("%s: %w", vs[i].Name, err)
				}
				if err != nil {
					return badInput(err)
				}
				vs[i].Built = b
			}
			return runComparison(cmd, "Handoff policies on "+base.Name, "policies", vs, compareOut{quiet, asJSON, errorBars, reportPath, csvPath})
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr")
	cmd.Flags().StringArrayVar(&variants, "variant", nil, "a variant 'NAME: PATH=VALUE, PATH=VALUE' of the first scenario (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array with one object per policy")
	cmd.Flags().BoolVar(&errorBars, "error-bars", false, "add each variant's 90 % intervals as run --error-bars does (step band with --predictor roofline, seed variance for a generated workload; more runs per variant)")
	cmd.Flags().StringVar(&csvPath, "csv", "", "write one CSV row per variant (its name, then the sweep CSV's result columns, docs/outputs.md) to FILE instead of the table (\"-\": stdout); read it with servesim table")
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
		f.noteSetHardware(s, as, "--variant "+name+": ")
		f.noteSetEngine(s, as, "--variant "+name+": ")
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

// compareOut says how a comparison is shown.
type compareOut struct {
	quiet, asJSON, errorBars bool
	// reportPath, csvPath: files to write ("" none).
	reportPath, csvPath string
}

// runComparison runs the variants with progress on stderr (what names
// them there), then prints the results as a table, JSON or CSV and writes
// the HTML report.
func runComparison(cmd *cobra.Command, title, what string, vs []compare.Variant, o compareOut) error {
	quiet, asJSON, errorBars, reportPath := o.quiet, o.asJSON, o.errorBars, o.reportPath
	if err := checkOutputFile("--report", reportPath); err != nil {
		return err
	}
	if o.csvPath != "" && (asJSON || errorBars) {
		return badInput(fmt.Errorf("--csv: cannot be combined with --json or --error-bars"))
	}
	ctx := cmd.Context() // interruptible (the RunE's first lines)
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
	if o.csvPath != "" {
		return writeComparisonCSV(cmd.OutOrStdout(), o.csvPath, results)
	}
	var bars []*validate.RunBars
	if errorBars {
		if bars, err = comparisonBars(vs, results); err != nil {
			return err
		}
	}
	if asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		if bars == nil {
			return enc.Encode(results)
		}
		out := make([]comparedResult, len(results))
		for i := range results {
			out[i] = comparedResult{results[i], bars[i]}
		}
		return enc.Encode(out)
	}
	text := compare.Table(title, results)
	if bars != nil {
		text += barsTable(results, bars)
	}
	_, err = io.WriteString(cmd.OutOrStdout(), text)
	return err
}

// short formats a statistic: whole numbers from 1000 up, else 4
// significant digits.
func short(v float64) string {
	if math.Abs(v) >= 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// comparedResult is a variant's result with its error bars, for JSON.
type comparedResult struct {
	compare.Result
	ErrorBars *validate.RunBars `json:"error_bars,omitempty"`
}

// comparisonBars computes every variant's error bars (nil for a stopped
// run, whose statistics are not comparable). A variant with neither a
// step band nor a generated workload is an input error.
func comparisonBars(vs []compare.Variant, results []compare.Result) ([]*validate.RunBars, error) {
	bars := make([]*validate.RunBars, len(results))
	for i := range results {
		if results[i].Stopped != "" {
			continue
		}
		b, err := validate.RunErrorBars(vs[i].Scenario, vs[i].Source, &results[i].Summary, 0)
		if err != nil {
			return nil, badInput(fmt.Errorf("%s: %w", vs[i].Name, err))
		}
		bars[i] = b
	}
	return bars, nil
}

// barsTable renders the variants' intervals side by side: value (lo–hi).
func barsTable(results []compare.Result, bars []*validate.RunBars) string {
	var b strings.Builder
	b.WriteString("\nError bars (90 % nominal):\n")
	var stats []string
	for i, br := range bars {
		if br == nil {
			fmt.Fprintf(&b, "  %s: stopped, no intervals\n", results[i].Name())
			continue
		}
		src := br.Band
		if br.Replicas > 0 {
			if src != "" {
				src += "; "
			}
			src += fmt.Sprintf("seed variance over %d more seeds", br.Replicas)
		}
		if br.Note != "" {
			src += " (" + br.Note + ")"
		}
		fmt.Fprintf(&b, "  %s: %s\n", results[i].Name(), src)
		if stats == nil {
			for _, st := range br.Stats {
				stats = append(stats, st.Metric)
			}
		}
	}
	cells := make([][]string, len(stats))
	w := 13
	for k, name := range stats {
		for i, br := range bars {
			c := "stopped"
			if br != nil {
				c = "-"
				for _, st := range br.Stats {
					if st.Metric == name {
						c = fmt.Sprintf("%s (%s–%s)", short(st.Value), short(st.Lo), short(st.Hi))
					}
				}
			}
			cells[k] = append(cells[k], c)
			w = max(w, len(c), len(results[i].Name()))
		}
	}
	b.WriteString("  (the step band moves every variant's steps alike, so differences between\n  variants are more certain than their separate intervals suggest)\n")
	fmt.Fprintf(&b, "%-16s", "statistic")
	for i := range results {
		fmt.Fprintf(&b, " %*s", w, results[i].Name())
	}
	b.WriteString("\n")
	for k, name := range stats {
		fmt.Fprintf(&b, "%-16s", name)
		for _, c := range cells[k] {
			fmt.Fprintf(&b, " %*s", w, c)
		}
		b.WriteString("\n")
	}
	return b.String()
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

// writeComparisonCSV writes one row per result: its name, then the sweep
// CSV's result columns (the optional groups when some result fills them).
func writeComparisonCSV(stdout io.Writer, path string, results []compare.Result) error {
	out, commit, abort, err := openOutput("--csv", path, stdout)
	if err != nil {
		return badInput(err)
	}
	defer abort()
	sums := make([]*metrics.Result, len(results))
	for i := range results {
		sums[i] = &results[i].Summary
	}
	x := sweep.ExtrasOf(sums)
	key := "variant"
	if len(results) > 0 && results[0].Policy != "" {
		key = "policy"
	}
	w := csv.NewWriter(out)
	if err := w.Write(append([]string{key}, sweep.ResultColumns(x)...)); err != nil {
		return fmt.Errorf("--csv: %w", err)
	}
	for i := range results {
		if err := w.Write(append([]string{results[i].Name()}, sweep.MetricRecord(sums[i], x)...)); err != nil {
			return fmt.Errorf("--csv: %w", err)
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("--csv: %w", err)
	}
	return commit()
}
