package perf

import (
	"fmt"
	"sort"
)

// bracket locates x on the sorted axis xs for linear interpolation. It returns
// the indices of the two samples to blend and the fraction t, so that the
// interpolated value is v[lo] + t*(v[hi]-v[lo]).
//
//   - below (or at) the first sample, and on a one-sample axis, it clamps:
//     lo == hi == 0, t == 0;
//   - inside the axis, xs[lo] <= x < xs[hi] and 0 <= t < 1 (a grid point
//     is returned exactly, with t == 0);
//   - above the last sample it extrapolates from the top two samples:
//     lo, hi = n-2, n-1 and t > 1.
//
// xs must be non-empty, strictly increasing and free of NaN (the loaders
// guarantee it). bracket does not allocate.
func bracket(xs []float64, x float64) (lo, hi int, t float64) {
	n := len(xs)
	if n <= 1 || !(x > xs[0]) {
		return 0, 0, 0
	}
	// i = first index with xs[i] > x (bisect right).
	i, j := 0, n
	for i < j {
		m := int(uint(i+j) >> 1)
		if xs[m] > x {
			j = m
		} else {
			i = m + 1
		}
	}
	if i >= n {
		lo, hi = n-2, n-1
	} else {
		lo, hi = i-1, i
	}
	return lo, hi, (x - xs[lo]) / (xs[hi] - xs[lo])
}

// pwl is a piecewise-linear function given by samples (xs[i], ys[i]) with
// xs strictly increasing. It clamps below the first sample and extrapolates
// linearly above the last one from the top two samples.
type pwl struct {
	xs, ys []float64
	g      guide // of xs; set by newPWL and sumPWL, empty otherwise
}

// at evaluates the function at x without allocating.
func (p *pwl) at(x float64) float64 {
	lo, hi, t := p.g.bracket(p.xs, x)
	if lo == hi {
		return p.ys[lo]
	}
	return p.ys[lo] + t*(p.ys[hi]-p.ys[lo])
}

// point is one raw (key, value) sample read from a table.
type point struct {
	x, y float64
	line int // source line, for duplicate-key errors
}

// newPWL sorts the samples and builds the function. Two samples with the
// same key are an error naming both lines; file labels the error.
func newPWL(file, what string, pts []point) (pwl, error) {
	if len(pts) == 0 {
		return pwl{}, fmt.Errorf("%s: no rows for %s", file, what)
	}
	sorted := make([]point, len(pts))
	copy(sorted, pts)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].x < sorted[j].x })
	p := pwl{xs: make([]float64, len(sorted)), ys: make([]float64, len(sorted))}
	for i, s := range sorted {
		if i > 0 && s.x == sorted[i-1].x {
			return pwl{}, fmt.Errorf("%s:%d: duplicate %s at %g (first on line %d)",
				file, s.line, what, s.x, sorted[i-1].line)
		}
		p.xs[i], p.ys[i] = s.x, s.y
	}
	p.g = newGuide(p.xs)
	return p, nil
}

// weighted is one term w*f(x) of a sum of piecewise-linear functions.
type weighted struct {
	w float64
	f *pwl
}

// sumPWL returns the piecewise-linear function equal to sum_i w_i*f_i(x)
// for every x. The result is sampled on the union of the terms' grids. It is
// exact everywhere, extrapolation included: below the union's first key
// every term is clamped, and above its last key every term is on its own top
// segment, whose extension contains the union's top segment, so the sum
// extrapolates with slope sum_i w_i*slope_i, as the terms would one by one.
func sumPWL(terms []weighted) pwl {
	if len(terms) == 0 {
		return pwl{xs: []float64{0}, ys: []float64{0}}
	}
	var keys []float64
	for _, t := range terms {
		keys = append(keys, t.f.xs...)
	}
	sort.Float64s(keys)
	uniq := keys[:0]
	for i, k := range keys {
		if i == 0 || k != keys[i-1] {
			uniq = append(uniq, k)
		}
	}
	out := pwl{xs: append([]float64(nil), uniq...), ys: make([]float64, len(uniq))}
	for i, x := range out.xs {
		for _, t := range terms {
			out.ys[i] += t.w * t.f.at(x)
		}
	}
	out.g = newGuide(out.xs)
	return out
}
