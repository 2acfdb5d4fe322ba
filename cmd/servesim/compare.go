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
	"github.com/servesim/servesim/internal/workpool"
	"github.com/spf13/cobra"
)

// policyResult is one column of a comparison.
type policyResult struct {
	Policy  string         `json:"policy"`
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
	)
	f.handoffList = true
	cmd := &cobra.Command{
		Use:   "compare -c SCENARIO [--handoff pull,reserve,reject,push,eager]",
		Short: "Run one disaggregated scenario under several handoff policies, side by side",
		Long: `Run the same prefill/decode scenario under each handoff policy and print a
side-by-side table: outcomes, latencies, throughput, decode-capacity wait,
handoff wait and the peak KV pinned on prefill instances. A policy that stops
the run (eager, when a decode instance is out of memory at a handoff) gets a
column saying when and on which request it stopped. The runs are independent
and use all cores; each is deterministic.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
			results, err := compare(ctx, base, src, names, reportPath != "")
			if err != nil {
				return err
			}
			if reportPath != "" {
				runs := make([]report.Run, len(results))
				for i, r := range results {
					runs[i] = *r.report
				}
				if err := writeReport(reportPath, "Handoff policies on "+base.Name, runs); err != nil {
					return err
				}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(results)
			}
			_, err = io.WriteString(cmd.OutOrStdout(), compareTable(base.Name, results))
			return err
		},
	}
	f.register(cmd.Flags())
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

// compare runs the scenario once per policy on the worker pool. With
// withReport each result also carries the data of its part of an HTML
// report. A policy whose run fails or panics makes compare fail after the
// others completed; ctx cancels the runs.
func compare(ctx context.Context, base *config.Scenario, src config.Source, names []string, withReport bool) ([]policyResult, error) {
	results := make([]policyResult, len(names))
	errs := make([]error, len(names))
	err := workpool.Run(ctx, 0, workpool.Count(len(names)),
		func(ctx context.Context, i int) (policyResult, error) {
			name := names[i]
			s := *base
			s.Handoff.Policy = name
			built, err := assemble.Build(&s, src)
			if err != nil {
				return policyResult{}, badInput(err)
			}
			opts := runner.Options{Interrupt: workpool.Interrupt(ctx)}
			var col *report.Collector
			if withReport {
				col = report.NewCollector()
				opts.OnRecord, opts.Sampler = col.Record, col
			}
			res, err := runner.Run(built, opts)
			r := policyResult{Policy: name, Summary: res}
			if withReport {
				r.report = &report.Run{Name: name, Summary: res, Data: col, Instances: reportInstances(built)}
			}
			var stop *cluster.StopReport
			if errors.As(err, &stop) {
				r.Stopped = stop.Error()
				return r, nil
			}
			if err != nil {
				return r, fmt.Errorf("policy %s: %w", name, err)
			}
			return r, nil
		},
		func(i int, r policyResult, err error) error {
			results[i], errs[i] = r, err
			return nil
		})
	if err != nil {
		return nil, err
	}
	return results, errors.Join(errs...)
}

// compareTable renders the policies side by side.
func compareTable(name string, rs []policyResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Handoff policies on %s\n", name)
	fmt.Fprintf(&b, "%-32s", "")
	for _, r := range rs {
		fmt.Fprintf(&b, "%14s", r.Policy)
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
			fmt.Fprintf(&b, "%14s", v)
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
			fmt.Fprintf(&b, "\n%s: %s\n", r.Policy, r.Stopped)
		}
	}
	return b.String()
}
