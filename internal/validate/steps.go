package validate

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/runner"
	"github.com/servesim/servesim/internal/workload"
)

// StepRow compares two latency sources on the steps of one class, timed
// on the same batches: the batches the validated run's own predictor
// scheduled, each also timed by the other predictor (Options.StepsVs).
type StepRow struct {
	// Class is the kind of step: "decode, N-M requests", "prefill",
	// "prefill after history" (chunks following cached tokens), "mixed"
	// (prefill chunks and decodes), "mixed after history".
	Class string `json:"class"`
	// Steps is the number of steps (per rank of a data-parallel group).
	Steps int `json:"steps"`
	// OwnMs and OtherMs are the steps' summed times by the run's
	// predictor and by the other one.
	OwnMs   float64 `json:"own_ms"`
	OtherMs float64 `json:"other_ms"`
	// SumDiffPct is OwnMs / OtherMs - 1; P10, Median and P90 the
	// percentiles of the per-step own / other - 1, in %.
	SumDiffPct    float64 `json:"sum_diff_pct"`
	P10DiffPct    float64 `json:"p10_diff_pct"`
	MedianDiffPct float64 `json:"median_diff_pct"`
	P90DiffPct    float64 `json:"p90_diff_pct"`
}

// stepClasses are the classes in report order; decodes by the number of
// requests in the step.
var stepClasses = []string{"decode, 1-16 requests", "decode, 17-64 requests", "decode, 65-128 requests", "decode, 129+ requests",
	"prefill", "prefill after history", "mixed", "mixed after history"}

// stepClass is the class of step b ("" for a step without tokens: an idle
// data-parallel rank's dummy batch).
func stepClass(b *perf.Batch) string {
	switch {
	case b.PrefillTokens > 0 && b.NumDecode > 0 && b.PrefillKV > 0:
		return "mixed after history"
	case b.PrefillTokens > 0 && b.NumDecode > 0:
		return "mixed"
	case b.PrefillTokens > 0 && b.PrefillKV > 0:
		return "prefill after history"
	case b.PrefillTokens > 0:
		return "prefill"
	case b.NumDecode > 128:
		return stepClasses[3]
	case b.NumDecode > 64:
		return stepClasses[2]
	case b.NumDecode > 16:
		return stepClasses[1]
	case b.NumDecode > 0:
		return stepClasses[0]
	}
	return ""
}

// stepAgg accumulates the step pairs of one run by class.
type stepAgg struct {
	own, other map[string]float64
	diffs      map[string][]float64
}

func (a *stepAgg) add(b *perf.Batch, own, other int64) {
	c := stepClass(b)
	if c == "" || other <= 0 {
		return
	}
	a.own[c] += float64(own)
	a.other[c] += float64(other)
	a.diffs[c] = append(a.diffs[c], float64(own)/float64(other)-1)
}

func (a *stepAgg) rows() []StepRow {
	var out []StepRow
	for _, c := range stepClasses {
		d := a.diffs[c]
		if len(d) == 0 {
			continue
		}
		sort.Float64s(d)
		q := func(p float64) float64 { return round3(100 * d[int(p*float64(len(d)-1)+0.5)]) }
		out = append(out, StepRow{Class: c, Steps: len(d), OwnMs: round3(a.own[c] / 1e6), OtherMs: round3(a.other[c] / 1e6),
			SumDiffPct: round3(100 * (a.own[c]/a.other[c] - 1)), P10DiffPct: q(0.1), MedianDiffPct: q(0.5), P90DiffPct: q(0.9)})
	}
	return out
}

// compareSteps simulates scenario s once more on a fresh source from
// newSrc with every step also timed by the predictor of kind vs, and
// returns the comparison by step class.
func compareSteps(s *config.Scenario, newSrc func() (workload.Source, error), vs string) ([]StepRow, error) {
	kind := config.PredictorKind(vs)
	switch kind {
	case config.PredictorProfile, config.PredictorRoofline, config.PredictorPerfDB:
	default:
		return nil, fmt.Errorf("--steps-vs: must be profile, roofline or perfdb (got %q)", vs)
	}
	o := *s
	o.Predictor.Kind = kind
	if kind != config.PredictorPerfDB {
		o.Predictor.Path, o.Predictor.System, o.Predictor.Version, o.Predictor.MoEDistribution = "", "", "", ""
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("--steps-vs %s: %w", vs, err)
	}
	own, err := assemble.Build(s, config.Source{})
	if err != nil {
		return nil, err
	}
	other, err := assemble.Build(&o, config.Source{})
	if err != nil {
		return nil, fmt.Errorf("--steps-vs %s: %w", vs, err)
	}
	agg := &stepAgg{own: map[string]float64{}, other: map[string]float64{}, diffs: map[string][]float64{}}
	shadowed, err := own.ShadowSteps(other, agg.add)
	if err != nil {
		return nil, err
	}
	src, err := newSrc()
	if err != nil {
		return nil, err
	}
	shadowed = shadowed.WithSource(func() (workload.Source, io.Closer, error) { return src, io.NopCloser(nil), nil })
	if _, err := runner.Run(shadowed, runner.Options{}); err != nil {
		return nil, err
	}
	return agg.rows(), nil
}

// writeSteps prints the step comparison of r.
func (r *Report) writeSteps(b *strings.Builder) {
	if len(r.Steps) == 0 {
		return
	}
	fmt.Fprintf(b, "step times on this run's batches, %s vs %s (own / other - 1; per rank of a data-parallel group, its MoE block the group's own):\n", r.Predictor, r.StepsVs)
	fmt.Fprintf(b, "%-24s %6s %12s %12s %7s %7s %8s %7s\n", "steps", "count", "own (ms)", "other (ms)", "sum %", "p10 %", "median %", "p90 %")
	for _, row := range r.Steps {
		fmt.Fprintf(b, "%-24s %6d %12.1f %12.1f %+7.1f %+7.1f %+8.1f %+7.1f\n", row.Class, row.Steps, row.OwnMs, row.OtherMs, row.SumDiffPct, row.P10DiffPct, row.MedianDiffPct, row.P90DiffPct)
	}
}
