package compare

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/report"
	"github.com/servesim/servesim/internal/runner"
	"github.com/servesim/servesim/internal/workpool"
)

// Variant is one column of a comparison.
type Variant struct {
	// Name labels the column.
	Name string
	// Policy marks a variant that is a handoff policy of one scenario
	// (its result is labelled policy, not variant).
	Policy   bool
	Scenario *config.Scenario
	Source   config.Source
	// Built is Scenario assembled, when the caller has built it already
	// (for instance to describe it); nil: Run builds it. A built scenario
	// makes fresh engines and a fresh workload source for every run.
	Built *assemble.Built
}

// Result is one column's outcome.
type Result struct {
	Policy  string         `json:"policy,omitempty"`
	Variant string         `json:"variant,omitempty"`
	Summary metrics.Result `json:"summary"`
	// Stopped describes the stop of a policy that ends the run (eager).
	Stopped string `json:"stopped,omitempty"`
	// Report holds the variant's part of an HTML report (nil unless
	// asked for).
	Report *report.Run `json:"-"`
}

// Name is the column's name.
func (r *Result) Name() string {
	if r.Policy != "" {
		return r.Policy
	}
	return r.Variant
}

// BuildError reports a variant whose scenario cannot be assembled (bad
// input, such as a missing profile or a model that does not fit).
type BuildError struct{ Err error }

func (e *BuildError) Error() string { return e.Err.Error() }

// Unwrap returns the assembly error.
func (e *BuildError) Unwrap() error { return e.Err }

// Options configure Run.
type Options struct {
	// Workers bounds the simultaneous runs (0: one per core).
	Workers int
	// WithReport makes every result carry its part of an HTML report.
	WithReport bool
	// OnDone, if set, is called after each variant ends, one call at a
	// time.
	OnDone func()
}

// Run runs every variant on the worker pool and returns the results in
// the variants' order. A variant whose run fails or panics makes the
// comparison fail after the others completed (errors joined, each named
// by its variant); ctx cancels the runs.
func Run(ctx context.Context, vs []Variant, o Options) ([]Result, error) {
	results := make([]Result, len(vs))
	errs := make([]error, len(vs))
	err := workpool.Run(ctx, o.Workers, workpool.Count(len(vs)),
		func(ctx context.Context, i int) (Result, error) {
			return runOne(ctx, &vs[i], o.WithReport)
		},
		func(i int, r Result, err error) error {
			results[i], errs[i] = r, err
			if o.OnDone != nil {
				o.OnDone()
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	return results, errors.Join(errs...)
}

func runOne(ctx context.Context, v *Variant, withReport bool) (Result, error) {
	built := v.Built
	if built == nil {
		var err error
		if built, err = assemble.Build(v.Scenario, v.Source); err != nil {
			return Result{}, &BuildError{fmt.Errorf("%s: %w", v.Name, err)}
		}
	}
	opts := runner.Options{Interrupt: workpool.Interrupt(ctx)}
	var col *report.Collector
	if withReport {
		col = report.NewCollector()
		opts.OnRecord, opts.Sampler = col.Record, col
	}
	res, err := runner.Run(built, opts)
	r := Result{Summary: res}
	if v.Policy {
		r.Policy = v.Name
	} else {
		r.Variant = v.Name
	}
	if withReport {
		r.Report = &report.Run{Name: v.Name, Summary: res, Data: col, Instances: Instances(built)}
	}
	var stop *cluster.StopReport
	if errors.As(err, &stop) {
		r.Stopped = stop.Error()
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("%s: %w", v.Name, err)
	}
	return r, nil
}

// Instances lists a built scenario's instances as an HTML report names
// them.
func Instances(b *assemble.Built) []report.InstanceInfo {
	out := make([]report.InstanceInfo, b.NumInstances())
	for i, in := range b.Instances() {
		out[i] = report.InstanceInfo{Index: in.Index, Group: in.Group, Role: string(in.Role)}
	}
	return out
}

// Policies returns one variant per handoff policy of a disaggregated
// scenario.
func Policies(base *config.Scenario, src config.Source, names []string) ([]Variant, error) {
	if !base.PD() {
		return nil, errors.New("no instance group has role prefill or decode; compare needs a disaggregated scenario")
	}
	vs := make([]Variant, len(names))
	for i, n := range names {
		p, err := config.ParseHandoffPolicy(n)
		if err != nil {
			return nil, err
		}
		s := *base
		s.Handoff.Policy = p
		vs[i] = Variant{Name: n, Policy: true, Scenario: &s, Source: src}
	}
	return vs, nil
}

// Table renders the results side by side under title. A stopped run
// shows what had arrived and ended by the stop; its rates and latencies,
// not comparable with complete runs, read "stopped".
func Table(title string, rs []Result) string {
	var b strings.Builder
	b.WriteString(title + "\n")
	w := 13
	for i := range rs {
		w = max(w, len(rs[i].Name()))
		if s := rs[i].Summary.SLO; s != nil {
			w = max(w, len(boundsText(s)))
		}
	}
	fmt.Fprintf(&b, "%-32s", "")
	for i := range rs {
		fmt.Fprintf(&b, " %*s", w, rs[i].Name())
	}
	b.WriteString("\n")
	counts := map[string]bool{"finished": true, "rejected": true, "failed": true, "truncated": true, "simulated time (s)": true}
	row := func(label string, f func(r *Result) string) {
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
	// A latency without samples (nothing finished, or no handoff in a
	// colocated variant) has no value: "-", as in the run summary.
	lat := func(s metrics.Stat, v float64, p int) string {
		if s.Count == 0 {
			return "-"
		}
		return fl(v, p)
	}
	row("finished", func(r *Result) string { return num(r.Summary.Finished) })
	row("rejected", func(r *Result) string { return num(r.Summary.Rejected) })
	row("failed", func(r *Result) string { return num(r.Summary.Failed) })
	row("truncated", func(r *Result) string { return num(r.Summary.Truncated) })
	row("simulated time (s)", func(r *Result) string { return fl(r.Summary.SimTimeS, 1) })
	row("throughput (req/s, whole run)", func(r *Result) string { return fl(r.Summary.ThroughputRPS, 3) })
	row("output (tok/s, whole run)", func(r *Result) string { return fl(r.Summary.OutputTokS, 1) })
	row("latencies measured", func(r *Result) string {
		if r.Summary.LatencySide == "" {
			return "engine-side"
		}
		return r.Summary.LatencySide + "-side"
	})
	row("TTFT mean (ms)", func(r *Result) string { return lat(r.Summary.TTFT, r.Summary.TTFT.Mean, 1) })
	row("TTFT p99 (ms)", func(r *Result) string { return lat(r.Summary.TTFT, r.Summary.TTFT.P99, 1) })
	row("TPOT mean (ms)", func(r *Result) string { return lat(r.Summary.TPOT, r.Summary.TPOT.Mean, 2) })
	row("TPOT p99 (ms)", func(r *Result) string { return lat(r.Summary.TPOT, r.Summary.TPOT.P99, 2) })
	row("E2E mean (s)", func(r *Result) string { return lat(r.Summary.E2E, r.Summary.E2E.Mean/1e3, 2) })
	row("E2E p99 (s)", func(r *Result) string { return lat(r.Summary.E2E, r.Summary.E2E.P99/1e3, 2) })
	row("decode capacity wait mean (ms)", func(r *Result) string { return lat(r.Summary.CapacityWait, r.Summary.CapacityWait.Mean, 1) })
	row("decode capacity wait p99 (ms)", func(r *Result) string { return lat(r.Summary.CapacityWait, r.Summary.CapacityWait.P99, 1) })
	row("handoff wait mean (ms)", func(r *Result) string { return lat(r.Summary.HandoffWait, r.Summary.HandoffWait.Mean, 1) })
	row("handoff wait p99 (ms)", func(r *Result) string { return lat(r.Summary.HandoffWait, r.Summary.HandoffWait.P99, 1) })
	row("KV transfer mean (ms)", func(r *Result) string { return lat(r.Summary.Transfer, r.Summary.Transfer.Mean, 2) })
	row("pinned KV peak (blocks)", func(r *Result) string {
		peak := 0
		for _, p := range r.Summary.PinnedKV {
			peak = max(peak, p.PeakBlocks)
		}
		return num(int64(peak))
	})
	row("preemptions", func(r *Result) string { return num(r.Summary.Preemptions) })
	row("re-prefills", func(r *Result) string { return num(r.Summary.Reprefills) })
	row("retries", func(r *Result) string { return num(r.Summary.Retries) })
	if anyFaults(rs) {
		// Fault and autoscaler variants; "-" for a variant without either.
		fr := func(label string, f func(*metrics.FaultResult) string) {
			row(label, func(r *Result) string {
				if r.Summary.Faults == nil {
					return "-"
				}
				return f(r.Summary.Faults)
			})
		}
		fr("instance losses", func(f *metrics.FaultResult) string { return num(f.Losses) })
		fr("requests retried after a loss", func(f *metrics.FaultResult) string { return num(f.Retried) })
		fr("re-prefilled (KV lost)", func(f *metrics.FaultResult) string { return num(f.KVLost) })
		fr("KV loads failed", func(f *metrics.FaultResult) string { return num(f.LoadFailures) })
		fr("scale-ups / scale-downs", func(f *metrics.FaultResult) string { return fmt.Sprintf("%d/%d", f.ScaleUps, f.ScaleDowns) })
		row("GPU-hours", func(r *Result) string {
			if r.Summary.Faults == nil {
				return "-"
			}
			return fl(r.Summary.Faults.GPUHours, 3)
		})
	}
	sloRows(rs, row)
	for _, r := range rs {
		if r.Stopped != "" {
			fmt.Fprintf(&b, "\n%s: %s\n", r.Name(), r.Stopped)
		}
	}
	return b.String()
}

// anyFaults reports whether some variant ran with faults or an autoscaler.
func anyFaults(rs []Result) bool {
	for i := range rs {
		if rs[i].Summary.Faults != nil {
			return true
		}
	}
	return false
}

// sloRows adds, when some variant sets an slo section, its bounds, SLO
// attainment and goodput (vLLM's bench serve definitions, as the run
// summary prints them) and each percentile target's value and verdict.
// A variant without that bound or target reads "-", and attainment and
// goodput read "n/a" without per-request bounds.
func sloRows(rs []Result, row func(string, func(*Result) string)) {
	var targets []string
	seen := map[string]bool{}
	set := false
	for i := range rs {
		s := rs[i].Summary.SLO
		if s == nil {
			continue
		}
		set = true
		for _, t := range s.Targets {
			if l := targetLabel(t); !seen[l] {
				seen[l] = true
				targets = append(targets, l)
			}
		}
	}
	if !set {
		return
	}
	perRequest := func(r *Result, f func(*metrics.SLOResult) string) string {
		if s := r.Summary.SLO; s != nil && s.Attainment != nil {
			return f(s)
		}
		return "n/a"
	}
	row("SLO TTFT/TPOT/E2E bounds (ms)", func(r *Result) string { return perRequest(r, boundsText) })
	row("SLO attainment (%)", func(r *Result) string {
		return perRequest(r, func(s *metrics.SLOResult) string { return fmt.Sprintf("%.2f", *s.Attainment*100) })
	})
	row("goodput (req/s, met / duration)", func(r *Result) string {
		return perRequest(r, func(s *metrics.SLOResult) string { return fmt.Sprintf("%.3f", *s.GoodputRPS) })
	})
	for _, l := range targets {
		row(l, func(r *Result) string {
			if s := r.Summary.SLO; s != nil {
				for _, t := range s.Targets {
					if targetLabel(t) != l {
						continue
					}
					if !t.Met {
						return t.ValueString(1) + " MISSED"
					}
					return t.ValueString(1) + " met"
				}
			}
			return "-"
		})
	}
}

// targetLabel is a percentile target's row label.
func targetLabel(t metrics.TargetResult) string {
	return fmt.Sprintf("target p%d %s <= %g ms", t.Percentile, strings.ToUpper(string(t.Metric)), t.MaxMs)
}

// boundsText renders the per-request SLO bounds, "-" for one not set.
func boundsText(s *metrics.SLOResult) string {
	bound := func(v float64) string {
		if v == 0 {
			return "-"
		}
		return fmt.Sprintf("%g", v)
	}
	return bound(s.TTFTMs) + "/" + bound(s.TPOTMs) + "/" + bound(s.E2EMs)
}
