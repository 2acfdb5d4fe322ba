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
// docs/engine-time.md account for on the user's machine. Collective
// efficiency (the tensor-parallel all-reduce) is not fitted: it needs
// measured runs at tp > 1.

// MeasuredRun is one measured run to fit on: its name and a function that
// validates it with a given extra step overhead (µs).
type MeasuredRun struct {
	Name     string
	Validate func(overheadUs float64) (*Report, error)
}

// FitResult is the fitted overhead with its in-sample error and, with two
// runs or more, the leave-one-out error of every run (validated with the
// overhead fitted on the others).
type FitResult struct {
	OverheadUs float64
	// InSample is the mean |diff| % over every statistic of every run.
	InSample float64
	LOO      []LOORun
}

// LOORun is one run validated with the overhead fitted on the others.
type LOORun struct {
	Run        string
	OverheadUs float64
	MeanAbsPct float64
	MaxAbsPct  float64
}

// maxOverheadUs bounds the search (10 ms a step is far beyond any host).
const maxOverheadUs = 10000

// FitOverhead fits the extra per-step host time minimising the mean
// absolute relative difference of TTFT, TPOT and E2E statistics over runs
// (a golden-section search on [0, 10 ms]; the error is unimodal in a
// uniform slowdown of every step). It is deterministic.
func FitOverhead(runs []MeasuredRun) (*FitResult, error) {
	if len(runs) == 0 {
		return nil, errors.New("calibrate --measured: no runs")
	}
	x, cost, err := fitOn(runs)
	if err != nil {
		return nil, err
	}
	res := &FitResult{OverheadUs: x, InSample: cost}
	if len(runs) < 2 {
		return res, nil
	}
	for i := range runs {
		rest := append(append([]MeasuredRun(nil), runs[:i]...), runs[i+1:]...)
		xi, _, err := fitOn(rest)
		if err != nil {
			return nil, err
		}
		rep, err := runs[i].Validate(xi)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", runs[i].Name, err)
		}
		res.LOO = append(res.LOO, LOORun{Run: runs[i].Name, OverheadUs: xi, MeanAbsPct: meanAbs(rep), MaxAbsPct: rep.MaxAbsDiffPct})
	}
	return res, nil
}

func meanAbs(r *Report) float64 {
	s := 0.0
	for _, row := range r.Stats {
		s += math.Abs(row.DiffPct)
	}
	return s / float64(len(r.Stats))
}

func fitOn(runs []MeasuredRun) (float64, float64, error) {
	var firstErr error
	cost := func(x float64) float64 {
		s := 0.0
		for _, r := range runs {
			rep, err := r.Validate(x)
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", r.Name, err)
				}
				return math.Inf(1)
			}
			s += meanAbs(rep)
		}
		return s / float64(len(runs))
	}
	// Golden-section search, 1 µs resolution (about 24 evaluations).
	lo, hi := 0.0, float64(maxOverheadUs)
	g := (math.Sqrt(5) - 1) / 2
	a, b := hi-g*(hi-lo), lo+g*(hi-lo)
	fa, fb := cost(a), cost(b)
	for hi-lo > 1 && firstErr == nil {
		if fa <= fb {
			hi, b, fb = b, a, fa
			a = hi - g*(hi-lo)
			fa = cost(a)
		} else {
			lo, a, fa = a, b, fb
			b = lo + g*(hi-lo)
			fb = cost(b)
		}
	}
	if firstErr != nil {
		return 0, 0, firstErr
	}
	x := math.Round((lo + hi) / 2)
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
	if len(f.LOO) > 0 {
		fmt.Fprintln(&b, "leave-one-out (each run validated with the overhead fitted on the others):")
		for _, l := range f.LOO {
			fmt.Fprintf(&b, "  %-50s overhead %6.0f us  mean |diff| %6.2f %%  max |diff| %6.2f %%\n", l.Run, l.OverheadUs, l.MeanAbsPct, l.MaxAbsPct)
		}
	}
	return b.String()
}
