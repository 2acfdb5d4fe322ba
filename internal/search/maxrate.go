package search

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/runner"
	"github.com/servesim/servesim/internal/sweep"
	"github.com/servesim/servesim/internal/workpool"
)

// SLO holds the per-request latency bounds in ms a request must meet to
// count as good (0: not checked). At least one must be set.
type SLO struct {
	TTFTMs float64 `json:"ttft_ms"`
	TPOTMs float64 `json:"tpot_ms"`
	E2EMs  float64 `json:"e2e_ms"`
}

func (s SLO) metrics() metrics.SLO {
	return metrics.SLO{TTFT: int64(s.TTFTMs * 1e6), TPOT: int64(s.TPOTMs * 1e6), E2E: int64(s.E2EMs * 1e6)}
}

// String renders the bounds, e.g. "TTFT <= 2000 ms, TPOT <= 100 ms".
func (s SLO) String() string {
	var parts []string
	for _, b := range []struct {
		name string
		v    float64
	}{{"TTFT", s.TTFTMs}, {"TPOT", s.TPOTMs}, {"E2E", s.E2EMs}} {
		if b.v > 0 {
			parts = append(parts, fmt.Sprintf("%s <= %g ms", b.name, b.v))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// Defaults of Options.
const (
	DefaultTarget    = 0.9
	DefaultMargin    = 0.05
	DefaultTolerance = 0.01
	// DefaultMaxMultiplier bounds the search upwards: a cluster that still
	// meets the target at this multiple of the base rate is reported as
	// not saturated by the workload.
	DefaultMaxMultiplier = 1024
	// DefaultMinMultiplier bounds the search downwards.
	DefaultMinMultiplier = 1.0 / 1024
	maxProbes            = 200
)

// Options configure MaxRate. Zero fields take the defaults above.
type Options struct {
	// SLO is the per-request latency bound.
	SLO SLO
	// Target is the SLO attainment (good requests / all requests) the rate
	// must reach, in (0, 1]. Default 0.9.
	Target float64
	// Margin is how much more load must break the target: the result's
	// Above probe runs at (1 + Margin) times the rate found. Default 0.05.
	Margin float64
	// Tolerance is the relative width of the final bisection bracket.
	// Default 0.01; it must be below Margin.
	Tolerance float64
	// MaxMultiplier and MinMultiplier bound the rate multiplier.
	MaxMultiplier, MinMultiplier float64
	// OnProbe, if set, sees every run as it finishes.
	OnProbe func(Probe)
	// Percentiles says the scenario has run-level percentile targets
	// (slo.percentiles): a rate passes only when they are all met too, and
	// SLO may then be empty (no per-request bounds, no attainment).
	Percentiles bool
	// StepScale multiplies every step time of every run (0 or 1: none);
	// error bars search at the ends of the step-latency model's band.
	StepScale float64
}

func (o Options) withDefaults() (Options, error) {
	if o.Target == 0 {
		o.Target = DefaultTarget
	}
	if o.Margin == 0 {
		o.Margin = DefaultMargin
	}
	if o.Tolerance == 0 {
		o.Tolerance = min(DefaultTolerance, o.Margin/2)
	}
	if o.MaxMultiplier == 0 {
		o.MaxMultiplier = DefaultMaxMultiplier
	}
	if o.MinMultiplier == 0 {
		o.MinMultiplier = DefaultMinMultiplier
	}
	switch {
	case o.SLO.TTFTMs < 0 || o.SLO.TPOTMs < 0 || o.SLO.E2EMs < 0:
		return o, fmt.Errorf("SLO bounds must be >= 0 ms (got %s)", o.SLO)
	case o.SLO == SLO{} && !o.Percentiles:
		return o, errors.New("no SLO: set a TTFT, TPOT or E2E bound, or percentile targets")
	case o.Target <= 0 || o.Target > 1:
		return o, fmt.Errorf("target attainment must be in (0, 1] (got %g)", o.Target)
	case o.Margin <= 0:
		return o, fmt.Errorf("margin must be > 0 (got %g)", o.Margin)
	case o.Tolerance <= 0 || o.Tolerance >= o.Margin:
		return o, fmt.Errorf("tolerance must be in (0, margin %g) (got %g)", o.Margin, o.Tolerance)
	case o.MinMultiplier <= 0 || o.MinMultiplier >= 1 || o.MaxMultiplier <= 1:
		return o, fmt.Errorf("multiplier bounds must satisfy 0 < min < 1 < max (got %g, %g)", o.MinMultiplier, o.MaxMultiplier)
	}
	return o, nil
}

// Probe is one simulation of the search.
type Probe struct {
	// Multiplier scales the base arrival rate.
	Multiplier float64 `json:"multiplier"`
	// RateRPS is the arrival rate, requests per second.
	RateRPS float64 `json:"rate_rps"`
	// TimeScale is workload.time_scale of a trace workload's run (0 for a
	// synthetic workload).
	TimeScale float64 `json:"time_scale,omitempty"`
	// Attainment is the SLO attainment of the run.
	Attainment float64 `json:"attainment"`
	// GoodputRPS is the requests that met the SLO per simulated second.
	GoodputRPS float64 `json:"goodput_rps"`
	// Pass is Attainment >= the target (and the run was not stopped).
	Pass bool `json:"pass"`
	// Summary is the run summary.
	Summary metrics.Result `json:"summary"`
}

// MaxRateResult is the outcome of MaxRate.
type MaxRateResult struct {
	Scenario string `json:"scenario"`
	// Scaling is how the rate was changed: "workload.synthetic.arrival.rate"
	// or "workload.time_scale".
	Scaling string `json:"scaling"`
	// BaseRateRPS is the arrival rate of the scenario as given: the
	// synthetic arrival.rate, or the mean rate of the trace's arrivals
	// ((requests - 1) / span) at its time_scale.
	BaseRateRPS float64 `json:"base_rate_rps"`
	SLO         SLO     `json:"slo"`
	Target      float64 `json:"target"`
	Margin      float64 `json:"margin"`
	// Best is the highest rate found whose attainment meets the target.
	Best Probe `json:"best"`
	// Above runs at (1 + Margin) times Best's rate; it misses the target.
	Above Probe `json:"above"`
	// Probes are every run, in the order run.
	Probes []Probe `json:"probes"`
	// Warning is set when the workload is too short for the rate found:
	// its requests all arrive within less than the mean E2E latency, so the
	// run measures how a burst drains rather than a sustained rate.
	Warning string `json:"warning,omitempty"`
	// Interval is the answer's interval with error bars (nil without).
	Interval *RateInterval `json:"interval,omitempty"`
}

// RateInterval is the interval of a max-rate answer. Two sources combine,
// as in a run's error bars: the step-latency model (the search run again
// with every step time at each end of its error band) and, for a generated
// workload, the seed (the search replicated with other seeds). The
// interval is [seed q05 × fast factor, seed q95 × slow factor], where a
// factor is the band end's answer over the nominal one (at most 1 below,
// at least 1 above) and the seed quantiles are widened to hold the
// nominal answer; a missing source contributes the nominal answer or a
// factor of 1. Each source alone aims at the nominal coverage of its own
// variation; together they are wider than a joint interval would be.
type RateInterval struct {
	// Coverage is the nominal coverage, e.g. 0.9.
	Coverage float64 `json:"coverage"`
	// Band describes the step-error band ("" without one).
	Band string `json:"step_band,omitempty"`
	// FastScale and SlowScale are the step-time factors of the two ends.
	FastScale float64 `json:"fast_scale,omitempty"`
	SlowScale float64 `json:"slow_scale,omitempty"`
	// FastRPS and SlowRPS are the max rates found at each end.
	FastRPS float64 `json:"fast_rate_rps,omitempty"`
	SlowRPS float64 `json:"slow_rate_rps,omitempty"`
	// Replicas is the number of extra seeds searched (0: no seed
	// variance), SeedRPS their answers in seed order (seed+1, seed+2,
	// ...), and SeedLoRPS and SeedHiRPS the 5th and 95th percentiles of
	// those answers and the nominal one, widened to hold the nominal one.
	Replicas  int       `json:"seed_replicas,omitempty"`
	SeedRPS   []float64 `json:"seed_rates_rps,omitempty"`
	SeedLoRPS float64   `json:"seed_lo_rps,omitempty"`
	SeedHiRPS float64   `json:"seed_hi_rps,omitempty"`
	// LoRPS and HiRPS bound the answer.
	LoRPS float64 `json:"lo_rps"`
	HiRPS float64 `json:"hi_rps"`
}

// AddInterval searches again with every step time scaled by fast and by
// slow (the ends of a step-error band described by band, at nominal
// coverage) and sets the step-model part of r.Interval. opts are the
// options r was found with.
func (r *MaxRateResult) AddInterval(ctx context.Context, base *config.Scenario, src config.Source, opts Options, band string, coverage, fast, slow float64) error {
	iv := r.interval(coverage)
	iv.Band, iv.FastScale, iv.SlowScale = band, fast, slow
	for _, e := range []struct {
		f   float64
		out *float64
	}{{fast, &iv.FastRPS}, {slow, &iv.SlowRPS}} {
		o := opts
		o.StepScale, o.OnProbe = e.f, nil
		res, err := MaxRate(ctx, base, src, o)
		if err != nil {
			return fmt.Errorf("error bars (steps x%.3f): %w", e.f, err)
		}
		*e.out = res.Best.RateRPS
	}
	iv.combine(r.Best.RateRPS)
	return nil
}

// AddSeedVariance replicates the search with replicas other seeds of the
// scenario's generated workload (seed+1 ... seed+replicas; the seed draws
// arrivals and lengths) and sets the seed part of r.Interval at nominal
// coverage. A trace workload has no seed to vary: an error.
func (r *MaxRateResult) AddSeedVariance(ctx context.Context, base *config.Scenario, src config.Source, opts Options, coverage float64, replicas int) error {
	if !base.Workload.Generated() {
		return fmt.Errorf("seed variance needs a generated workload (synthetic, chat or shared-prefix); a trace replays the same requests whatever the seed")
	}
	if replicas < 2 {
		return fmt.Errorf("seed variance needs at least 2 replicas (got %d)", replicas)
	}
	iv := r.interval(coverage)
	iv.Replicas, iv.SeedRPS = replicas, make([]float64, 0, replicas)
	o := opts
	o.OnProbe = nil
	for k := 1; k <= replicas; k++ {
		sc := *base
		sc.Seed = base.Seed + uint64(k)
		res, err := MaxRate(ctx, &sc, src, o)
		if err != nil {
			return fmt.Errorf("error bars (seed %d): %w", sc.Seed, err)
		}
		iv.SeedRPS = append(iv.SeedRPS, res.Best.RateRPS)
	}
	all := append([]float64{r.Best.RateRPS}, iv.SeedRPS...)
	slices.Sort(all)
	tail := (1 - coverage) / 2
	iv.SeedLoRPS = min(r.Best.RateRPS, quantile(all, tail))
	iv.SeedHiRPS = max(r.Best.RateRPS, quantile(all, 1-tail))
	iv.combine(r.Best.RateRPS)
	return nil
}

// interval returns r.Interval, creating it at coverage.
func (r *MaxRateResult) interval(coverage float64) *RateInterval {
	if r.Interval == nil {
		r.Interval = &RateInterval{Coverage: coverage}
	}
	return r.Interval
}

// combine sets LoRPS and HiRPS from the sources present, around the
// nominal answer v.
func (iv *RateInterval) combine(v float64) {
	lo, hi := v, v
	if iv.Replicas > 0 {
		lo, hi = iv.SeedLoRPS, iv.SeedHiRPS
	}
	switch {
	case iv.Band != "" && v > 0 && iv.Replicas == 0:
		// v × min(1, a, b) written without the round trip through the
		// ratios, so an end equals its search's rate exactly.
		lo, hi = min(v, iv.FastRPS, iv.SlowRPS), max(v, iv.FastRPS, iv.SlowRPS)
	case iv.Band != "" && v > 0:
		a, b := iv.FastRPS/v, iv.SlowRPS/v
		lo *= min(1, a, b)
		hi *= max(1, a, b)
	}
	iv.LoRPS, iv.HiRPS = lo, hi
}

// quantile is the linear-interpolation quantile q of sorted xs (not
// empty).
func quantile(xs []float64, q float64) float64 {
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (pos-float64(i))*(xs[i+1]-xs[i])
}

// burstWarning explains when the arrivals of the best run span less time
// than its p90 end-to-end latency.
func burstWarning(p Probe) string {
	n := p.Summary.RequestsTotal
	if n < 2 || p.RateRPS <= 0 {
		return ""
	}
	span := float64(n-1) / p.RateRPS
	if e2e := p.Summary.E2E.Mean / 1e3; span < e2e {
		return fmt.Sprintf("at %.4g req/s the %d requests arrive within %.3g s, less than the mean E2E latency (%.3g s): the run measures how a burst drains, not a sustained rate; use a longer workload (more requests, or --resample N for a trace)",
			p.RateRPS, n, span, e2e)
	}
	return ""
}

// rateScaler applies a rate multiplier to a scenario.
type rateScaler struct {
	base     *config.Scenario
	src      config.Source
	path     sweep.Path
	baseVal  float64 // arrival.rate or time_scale of the base
	baseRate float64 // req/s of the base
}

func newRateScaler(base *config.Scenario, src config.Source) (*rateScaler, error) {
	r := &rateScaler{base: base, src: src}
	if base.Workload.IgnoreArrivalTimes {
		return nil, fmt.Errorf("workload.ignore_arrival_times: every request is due at 0, so there is no arrival rate to search; drop it (a closed-loop load is set by max_concurrency)")
	}
	if syn := base.Workload.Synthetic; syn != nil {
		p, err := sweep.ParsePath("workload.synthetic.arrival.rate")
		if err != nil {
			return nil, fmt.Errorf("rate path: %w", err)
		}
		r.path = p
		r.baseVal, r.baseRate = syn.Arrival.Rate, syn.Arrival.Rate
		return r, nil
	}
	p, err := sweep.ParsePath("workload.time_scale")
	if err != nil {
		return nil, fmt.Errorf("time-scale path: %w", err)
	}
	r.path = p
	r.baseVal = base.Workload.TimeScale
	rate, err := traceRate(base, src)
	if err != nil {
		return nil, err
	}
	r.baseRate = rate
	return r, nil
}

// traceRate measures the mean arrival rate of a trace workload as the
// scenario replays it.
func traceRate(s *config.Scenario, src config.Source) (float64, error) {
	b, err := assemble.Build(s, src)
	if err != nil {
		return 0, err
	}
	ws, closer, err := b.Open()
	if err != nil {
		return 0, err
	}
	defer closer.Close()
	var n int64
	var first, last int64
	for {
		e, err := ws.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("read workload: %w", err)
		}
		if len(e.Requests) == 0 {
			continue
		}
		a := e.Requests[0].Arrival
		if n == 0 {
			first = a
		}
		last = a
		n++
	}
	if n < 2 || last <= first {
		return 0, fmt.Errorf("workload %s: its arrivals span no time (%d entries), so it has no rate to scale; use a longer trace or a synthetic workload", s.Workload.Trace, n)
	}
	return float64(n-1) / (float64(last-first) / 1e9), nil
}

// scenario returns the base scenario at multiplier m.
func (r *rateScaler) scenario(m float64) (*config.Scenario, float64, error) {
	v := r.baseVal * m
	ts := 0.0
	if r.base.Workload.Synthetic == nil {
		v = r.baseVal / m
		ts = v
	}
	s, err := sweep.Apply(r.base, sweep.Assignment{Path: r.path, Value: v})
	if err != nil {
		return nil, 0, fmt.Errorf("rate x%g: %w", m, err)
	}
	return s, ts, nil
}

// targetsMet reports whether every percentile target of a run is met.
func targetsMet(res *metrics.Result) bool {
	if res.SLO == nil {
		return true
	}
	for _, t := range res.SLO.Targets {
		if !t.Met {
			return false
		}
	}
	return true
}

func (r *rateScaler) run(ctx context.Context, m float64, o Options) (Probe, error) {
	s, ts, err := r.scenario(m)
	if err != nil {
		return Probe{}, err
	}
	b, err := assemble.Build(s, r.src)
	if err != nil {
		return Probe{}, fmt.Errorf("rate x%g: %w", m, err)
	}
	if o.StepScale != 0 && o.StepScale != 1 {
		b = b.Scaled(o.StepScale)
	}
	res, err := runner.Run(b, runner.Options{SLO: o.SLO.metrics(), Interrupt: workpool.Interrupt(ctx)})
	if errors.Is(err, cluster.ErrInterrupted) {
		return Probe{}, ctx.Err()
	}
	var stop *cluster.StopReport
	if err != nil && !errors.As(err, &stop) {
		return Probe{}, &RunError{fmt.Errorf("rate x%g: %w", m, err)}
	}
	p := Probe{Multiplier: m, RateRPS: r.baseRate * m, TimeScale: ts, Summary: res}
	if res.SLO != nil && res.SLO.Attainment != nil {
		p.Attainment, p.GoodputRPS = *res.SLO.Attainment, *res.SLO.GoodputRPS
	}
	p.Pass = res.Stopped == "" && (o.SLO == SLO{} || p.Attainment >= o.Target) && targetsMet(&res)
	return p, nil
}

// RunError is a probe whose simulation failed (rather than the search's
// input being wrong); it wraps the run's error.
type RunError struct{ Err error }

func (e *RunError) Error() string { return e.Err.Error() }

// Unwrap returns the run's error.
func (e *RunError) Unwrap() error { return e.Err }

// MaxRate finds the largest arrival rate at which the scenario's SLO
// attainment reaches the target, by bisection on a multiplier of the
// scenario's arrival rate: a synthetic workload's arrival.rate is
// multiplied, a trace's arrival times are divided (workload.time_scale =
// base time_scale / multiplier). It brackets the threshold by doubling or
// halving from the base rate, bisects (geometrically) until the bracket is
// within Tolerance, then runs (1 + Margin) times the rate found and
// requires it to miss the target; if it does not (attainment need not be
// monotone in the rate), the search continues above it. Every run is
// deterministic, so the result is too.
func MaxRate(ctx context.Context, base *config.Scenario, src config.Source, opts Options) (*MaxRateResult, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	rs, err := newRateScaler(base, src)
	if err != nil {
		return nil, err
	}
	res := &MaxRateResult{Scenario: base.Name, Scaling: rs.path.String(), BaseRateRPS: rs.baseRate,
		SLO: o.SLO, Target: o.Target, Margin: o.Margin}
	probes := map[float64]Probe{}
	eval := func(m float64) (Probe, error) {
		if p, ok := probes[m]; ok {
			return p, nil
		}
		if err := ctx.Err(); err != nil {
			return Probe{}, err
		}
		if len(res.Probes) >= maxProbes {
			return Probe{}, fmt.Errorf("no answer after %d runs", maxProbes)
		}
		p, err := rs.run(ctx, m, o)
		if err != nil {
			return Probe{}, err
		}
		probes[m] = p
		res.Probes = append(res.Probes, p)
		if o.OnProbe != nil {
			o.OnProbe(p)
		}
		return p, nil
	}

	// lo passes, hi fails (hi = +Inf: not yet known).
	lo, hi := 0.0, math.Inf(1)
	p, err := eval(1)
	if err != nil {
		return nil, err
	}
	if p.Pass {
		lo = 1
	} else {
		hi = 1
		for m := 0.5; lo == 0; m /= 2 {
			if m < o.MinMultiplier {
				return res, fmt.Errorf("SLO attainment stays below %.3g even at x%g of the base rate (%.4g req/s): attainment %.3f; the SLO (%s) cannot be met by this cluster",
					o.Target, 2*m, rs.baseRate*2*m, probes[2*m].Attainment, o.SLO)
			}
			if p, err = eval(m); err != nil {
				return nil, err
			}
			if p.Pass {
				lo = m
			} else {
				hi = m
			}
		}
	}
	for {
		// Bracket upwards, then bisect.
		for math.IsInf(hi, 1) {
			m := lo * 2
			if m > o.MaxMultiplier {
				return res, fmt.Errorf("SLO attainment still reaches %.3g at x%g of the base rate (%.4g req/s): the workload is too short to load this cluster; use a longer workload (more requests, or --resample N for a trace)",
					o.Target, lo, rs.baseRate*lo)
			}
			if p, err = eval(m); err != nil {
				return nil, err
			}
			if p.Pass {
				lo = m
			} else {
				hi = m
			}
		}
		for hi/lo > 1+o.Tolerance {
			m := math.Sqrt(lo * hi)
			if p, err = eval(m); err != nil {
				return nil, err
			}
			if p.Pass {
				lo = m
			} else {
				hi = m
			}
		}
		// Confirm that Margin more load breaks it.
		c := lo * (1 + o.Margin)
		if p, err = eval(c); err != nil {
			return nil, err
		}
		if !p.Pass {
			res.Best, res.Above = probes[lo], p
			res.Warning = burstWarning(res.Best)
			return res, nil
		}
		lo = c
		if c >= hi {
			hi = math.Inf(1)
		}
	}
}
