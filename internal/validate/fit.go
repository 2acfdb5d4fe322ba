package validate

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Fitting the engine-side terms to measured runs. The step tables (or the
// roofline calibration) are never refitted here: the only free term is the
// extra host time per engine step (predictor.step_overhead_us), the part of
// an engine step that neither the tables nor the engine-time model of
// docs/engine-time.md account for on the user's machine, and, when a run
// has tp > 1, the collective efficiency factor (predictor.collective_scale,
// multiplying the tensor-parallel communication time).

// MeasuredRun is one measured run to fit on: its name, its tensor-parallel
// degree (the collective scale is fitted only when some run has TP > 1)
// and a function that validates it with given engine-side terms.
type MeasuredRun struct {
	Name     string
	TP       int
	Validate func(t Terms) (*Report, error)
}

// Terms are the engine-side terms a fit varies.
type Terms struct {
	// OverheadUs is the extra host time per step, µs.
	OverheadUs float64
	// CollectiveScale multiplies the tensor-parallel communication time
	// (1: as modelled).
	CollectiveScale float64
}

// FitResult is the fitted overhead with its in-sample error and, with two
// runs or more, the leave-one-out error of every run (validated with the
// overhead fitted on the others).
type FitResult struct {
	OverheadUs float64
	// CollectiveScale is the fitted collective efficiency factor; 1 and
	// Collective false when no run has tp > 1.
	CollectiveScale float64
	Collective      bool
	// InSample is the mean |diff| % over every statistic of every run.
	InSample float64
	LOO      []LOORun
}

// LOORun is one run validated with the overhead fitted on the others.
type LOORun struct {
	Run             string
	OverheadUs      float64
	CollectiveScale float64
	MeanAbsPct      float64
	MaxAbsPct       float64
}

// maxOverheadUs bounds the search (10 ms a step is far beyond any host).
const maxOverheadUs = 10000

// The collective scale is searched on [1/8, 8] in log space to 0.5 %.
const (
	minCollectiveScale = 0.125
	maxCollectiveScale = 8
)

// FitOverhead fits the extra per-step host time minimising the mean
// absolute relative difference of TTFT, TPOT and E2E statistics over runs
// (a golden-section search on [0, 10 ms]; the error is unimodal in a
// uniform slowdown of every step). When a run has tp > 1 it also fits the
// collective scale (see fitTerms). It is deterministic.
func FitOverhead(runs []MeasuredRun) (*FitResult, error) {
	if len(runs) == 0 {
		return nil, errors.New("calibrate --measured: no runs")
	}
	collective := false
	for _, r := range runs {
		collective = collective || r.TP > 1
	}
	t, cost, err := fitTerms(runs, collective)
	if err != nil {
		return nil, err
	}
	res := &FitResult{OverheadUs: t.OverheadUs, CollectiveScale: t.CollectiveScale, Collective: collective, InSample: cost}
	if len(runs) < 2 {
		return res, nil
	}
	for i := range runs {
		rest := append(append([]MeasuredRun(nil), runs[:i]...), runs[i+1:]...)
		ti, _, err := fitTerms(rest, collective)
		if err != nil {
			return nil, err
		}
		rep, err := runs[i].Validate(ti)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", runs[i].Name, err)
		}
		res.LOO = append(res.LOO, LOORun{Run: runs[i].Name, OverheadUs: ti.OverheadUs, CollectiveScale: ti.CollectiveScale, MeanAbsPct: meanAbs(rep), MaxAbsPct: rep.MaxAbsDiffPct})
	}
	return res, nil
}

// fitTerms fits the overhead, and the collective scale when collective:
// the scale by golden section on log [1/8, 8], each candidate costed with
// the overhead fitted at that scale (the two both slow steps down, so
// they are fitted jointly rather than one after the other).
func fitTerms(runs []MeasuredRun, collective bool) (Terms, float64, error) {
	if !collective {
		x, cost, err := fitOn(runs, Terms{CollectiveScale: 1})
		return Terms{OverheadUs: x, CollectiveScale: 1}, cost, err
	}
	var firstErr error
	cost := func(ls float64) float64 {
		_, c, err := fitOn(runs, Terms{CollectiveScale: math.Exp(ls)})
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return math.Inf(1)
		}
		return c
	}
	ls := golden(cost, math.Log(minCollectiveScale), math.Log(maxCollectiveScale), 0.005, func() bool { return firstErr != nil })
	if firstErr != nil {
		return Terms{}, 0, firstErr
	}
	t := Terms{CollectiveScale: math.Round(math.Exp(ls)*1000) / 1000}
	x, c, err := fitOn(runs, t)
	t.OverheadUs = x
	return t, c, err
}

// costOf is the mean over runs of the mean |diff| % with terms t; the
// first error is kept in *firstErr and costs +Inf.
func costOf(runs []MeasuredRun, t Terms, firstErr *error) float64 {
	s := 0.0
	for _, r := range runs {
		rep, err := r.Validate(t)
		if err != nil {
			if *firstErr == nil {
				*firstErr = fmt.Errorf("%s: %w", r.Name, err)
			}
			return math.Inf(1)
		}
		s += meanAbs(rep)
	}
	return s / float64(len(runs))
}

// golden minimises f on [lo, hi] by golden-section search down to width
// tol, stopping early when stop says so; it returns the midpoint of the
// final bracket.
func golden(f func(float64) float64, lo, hi, tol float64, stop func() bool) float64 {
	g := (math.Sqrt(5) - 1) / 2
	a, b := hi-g*(hi-lo), lo+g*(hi-lo)
	fa, fb := f(a), f(b)
	for hi-lo > tol && !stop() {
		if fa <= fb {
			hi, b, fb = b, a, fa
			a = hi - g*(hi-lo)
			fa = f(a)
		} else {
			lo, a, fa = a, b, fb
			b = lo + g*(hi-lo)
			fb = f(b)
		}
	}
	return (lo + hi) / 2
}

func meanAbs(r *Report) float64 {
	s := 0.0
	for _, row := range r.Stats {
		s += math.Abs(row.DiffPct)
	}
	return s / float64(len(r.Stats))
}

// fitOn fits the overhead at t's collective scale.
func fitOn(runs []MeasuredRun, t Terms) (float64, float64, error) {
	var firstErr error
	cost := func(x float64) float64 {
		return costOf(runs, Terms{OverheadUs: x, CollectiveScale: t.CollectiveScale}, &firstErr)
	}
	// 1 µs resolution (about 24 evaluations).
	x := math.Round(golden(cost, 0, maxOverheadUs, 1, func() bool { return firstErr != nil }))
	if firstErr != nil {
		return 0, 0, firstErr
	}
	// The end of the range is a candidate too (no extra overhead at all).
	c0, cx := cost(0), cost(x)
	if c0 <= cx {
		return 0, c0, firstErr
	}
	return x, cx, firstErr
}

// String renders the fit.
func (f *FitResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "extra host time per step: %.0f us (in sample: mean |diff| %.2f %% over TTFT, TPOT and E2E statistics)\n", f.OverheadUs, f.InSample)
	if f.Collective {
		fmt.Fprintf(&b, "collective scale (tensor-parallel communication time x): %.3f\n", f.CollectiveScale)
	}
	if len(f.LOO) > 0 {
		terms := "overhead"
		if f.Collective {
			terms = "overhead and collective scale"
		}
		fmt.Fprintf(&b, "leave-one-out (each run validated with the %s fitted on the others):\n", terms)
		for _, l := range f.LOO {
			fmt.Fprintf(&b, "  %-50s overhead %6.0f us", l.Run, l.OverheadUs)
			if f.Collective {
				fmt.Fprintf(&b, "  collective x%.3f", l.CollectiveScale)
			}
			fmt.Fprintf(&b, "  mean |diff| %6.2f %%  max |diff| %6.2f %%\n", l.MeanAbsPct, l.MaxAbsPct)
		}
	}
	return b.String()
}
