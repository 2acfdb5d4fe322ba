package validate

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/calibrate"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/runner"
)

// Error bars of a plain run (servesim run --error-bars). Two sources of
// uncertainty are combined:
//
//   - the step-latency model: the run is simulated again with every step
//     scaled to the ends of the 90 % step-error band (errorBand), giving
//     each statistic a factor below and above its nominal value;
//   - for a generated workload (synthetic, chat, shared-prefix), the seed: the run is replicated with
//     Replicas other seeds and the 5th and 95th percentiles of each
//     statistic over the replicas (nominal included) are taken.
//
// A statistic's interval is [q05 × fast factor, q95 × slow factor], the
// seed quantiles widened to hold the nominal value when it lies outside. Each
// source alone gives 90 % nominal coverage of its own variation; their
// product is wider than a joint 90 % interval when both are present.

// RunInterval is one statistic with its interval.
type RunInterval struct {
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
}

// RunBars are the intervals of a run's statistics.
type RunBars struct {
	Coverage float64 `json:"coverage"`
	Band     string  `json:"step_band,omitempty"`
	Replicas int     `json:"seed_replicas"`
	// Note says why a source is missing.
	Note string `json:"note,omitempty"`
	// GoodputNA says why goodput has no interval when the run has SLO
	// percentile targets but no per-request bounds (as the summary's n/a).
	GoodputNA string        `json:"goodput_na,omitempty"`
	Stats     []RunInterval `json:"stats"`
}

// DefaultReplicas is the number of extra seeds of a synthetic workload.
const DefaultReplicas = 10

type statFn struct {
	name string
	get  func(*metrics.Result) float64
}

var runStats = []statFn{
	{"throughput_rps", func(r *metrics.Result) float64 { return r.ThroughputRPS }},
	{"output_tok_s", func(r *metrics.Result) float64 { return r.OutputTokS }},
	{"ttft_ms.mean", func(r *metrics.Result) float64 { return r.TTFT.Mean }},
	{"ttft_ms.p50", func(r *metrics.Result) float64 { return r.TTFT.P50 }},
	{"ttft_ms.p90", func(r *metrics.Result) float64 { return r.TTFT.P90 }},
	{"ttft_ms.p99", func(r *metrics.Result) float64 { return r.TTFT.P99 }},
	{"tpot_ms.mean", func(r *metrics.Result) float64 { return r.TPOT.Mean }},
	{"tpot_ms.p50", func(r *metrics.Result) float64 { return r.TPOT.P50 }},
	{"tpot_ms.p90", func(r *metrics.Result) float64 { return r.TPOT.P90 }},
	{"tpot_ms.p99", func(r *metrics.Result) float64 { return r.TPOT.P99 }},
	{"e2e_ms.mean", func(r *metrics.Result) float64 { return r.E2E.Mean }},
	{"e2e_ms.p50", func(r *metrics.Result) float64 { return r.E2E.P50 }},
	{"e2e_ms.p90", func(r *metrics.Result) float64 { return r.E2E.P90 }},
	{"e2e_ms.p99", func(r *metrics.Result) float64 { return r.E2E.P99 }},
}

// goodputStat is goodput, a statistic only of runs with per-request SLO
// bounds.
var goodputStat = statFn{"goodput_rps", func(r *metrics.Result) float64 {
	if r.SLO == nil || r.SLO.GoodputRPS == nil {
		return 0
	}
	return *r.SLO.GoodputRPS
}}

// goodputNA is the reason a run with an SLO has no goodput.
const goodputNA = "n/a: no per-request SLO bounds (set slo.ttft_ms, tpot_ms or e2e_ms)"

// statsOf is the statistics with an interval for a run like nominal:
// runStats, and goodput when the run has per-request SLO bounds.
func statsOf(nominal *metrics.Result) []statFn {
	if nominal.SLO == nil || nominal.SLO.GoodputRPS == nil {
		return runStats
	}
	return append(runStats[:len(runStats):len(runStats)], goodputStat)
}

// RunErrorBars computes the intervals of nominal, the result of scenario s
// (read from src). replicas is the number of extra seeds for a synthetic
// workload (0: DefaultReplicas). It needs at least one source: the roofline
// with measured tables for the deployment, or a synthetic workload.
func RunErrorBars(s *config.Scenario, src config.Source, nominal *metrics.Result, replicas int) (*RunBars, error) {
	if replicas <= 0 {
		replicas = DefaultReplicas
	}
	out := &RunBars{Coverage: 0.9}
	if nominal.SLO != nil && nominal.SLO.GoodputRPS == nil {
		out.GoodputNA = goodputNA
	}
	stats := statsOf(nominal)
	var band *calibrate.Band
	var bandErr error
	if s.Predictor.Kind == config.PredictorRoofline {
		band, bandErr = errorBand(true, s)
	} else {
		bandErr = errors.New("the step-model band needs predictor.kind roofline")
	}
	synthetic := s.Workload.Generated()
	if bandErr != nil {
		if !synthetic {
			return nil, fmt.Errorf("--error-bars: nothing to take an interval from: %w; seed variance needs a synthetic workload", bandErr)
		}
		out.Note = "no step-model band: " + bandErr.Error()
	}
	n := len(stats)
	lo, hi := make([]float64, n), make([]float64, n)
	for i, st := range stats {
		v := st.get(nominal)
		lo[i], hi[i] = v, v
	}
	if synthetic {
		out.Replicas = replicas
		vals := make([][]float64, n)
		for i, st := range stats {
			vals[i] = append(vals[i], st.get(nominal))
		}
		for r := 1; r <= replicas; r++ {
			rs := *s
			rs.Seed = s.Seed + uint64(r)
			res, err := simulate(&rs, src, 1)
			if err != nil {
				return nil, fmt.Errorf("--error-bars: seed %d: %w", rs.Seed, err)
			}
			for i, st := range stats {
				vals[i] = append(vals[i], st.get(res))
			}
		}
		for i := range vals {
			sort.Float64s(vals[i])
			// widened to hold the nominal value, itself one of the samples.
			v := stats[i].get(nominal)
			lo[i], hi[i] = math.Min(v, quantileSorted(vals[i], 0.05)), math.Max(v, quantileSorted(vals[i], 0.95))
		}
	}
	if band != nil {
		out.Band = band.String()
		fast, slow := band.StepScales()
		rf, err := simulate(s, src, fast)
		if err != nil {
			return nil, err
		}
		rsl, err := simulate(s, src, slow)
		if err != nil {
			return nil, err
		}
		for i, st := range stats {
			v := st.get(nominal)
			if v == 0 {
				continue
			}
			a, b := st.get(rf)/v, st.get(rsl)/v
			lo[i] *= math.Min(1, math.Min(a, b))
			hi[i] *= math.Max(1, math.Max(a, b))
		}
	}
	for i, st := range stats {
		out.Stats = append(out.Stats, RunInterval{Metric: st.name, Value: round3(st.get(nominal)), Lo: round3(lo[i]), Hi: round3(hi[i])})
	}
	return out, nil
}

// quantileSorted is the linear-interpolation quantile of sorted xs.
func quantileSorted(xs []float64, q float64) float64 {
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (pos-float64(i))*(xs[i+1]-xs[i])
}

// simulate runs scenario s with every step time scaled by f.
func simulate(s *config.Scenario, src config.Source, f float64) (*metrics.Result, error) {
	built, err := assemble.Build(s, src)
	if err != nil {
		return nil, err
	}
	if f != 1 {
		built = built.Scaled(f)
	}
	res, err := runner.Run(built, runner.Options{})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// String renders the intervals as a table.
func (b *RunBars) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Error bars (%.0f %% nominal):", 100*b.Coverage)
	if b.Band != "" {
		fmt.Fprintf(&sb, " %s;", b.Band)
	}
	if b.Replicas > 0 {
		fmt.Fprintf(&sb, " seed variance over %d more seeds", b.Replicas)
	} else {
		fmt.Fprint(&sb, " no seed variance (a trace workload)")
	}
	if b.Note != "" {
		fmt.Fprintf(&sb, "\n  (%s)", b.Note)
	}
	fmt.Fprintf(&sb, "\n%-16s %14s %14s %14s\n", "statistic", "value", "lo", "hi")
	for _, st := range b.Stats {
		fmt.Fprintf(&sb, "%-16s %14.3f %14.3f %14.3f\n", st.Metric, st.Value, st.Lo, st.Hi)
	}
	if b.GoodputNA != "" {
		fmt.Fprintf(&sb, "%-16s %s\n", "goodput_rps", b.GoodputNA)
	}
	return sb.String()
}
