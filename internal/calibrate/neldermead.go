package calibrate

import (
	"math"
	"sort"
)

// nelderMead minimises f from x0 with the standard Nelder-Mead simplex
// (reflection 1, expansion 2, contraction 0.5, shrink 0.5), starting from an
// axis-aligned simplex of the given step. It stops after maxEval
// evaluations or when the spread of the simplex values falls below tol.
// (gonum/optimize is not used: it pulls in dependencies this module does
// not carry.)
func nelderMead(f func([]float64) float64, x0 []float64, step float64, maxEval int, tol float64) ([]float64, float64) {
	n := len(x0)
	type vertex struct {
		x []float64
		f float64
	}
	evals := 0
	eval := func(x []float64) float64 {
		evals++
		v := f(x)
		if math.IsNaN(v) {
			return math.Inf(1)
		}
		return v
	}
	simplex := make([]vertex, n+1)
	for i := range simplex {
		x := append([]float64(nil), x0...)
		if i > 0 {
			x[i-1] += step
		}
		simplex[i] = vertex{x, eval(x)}
	}
	point := func(c []float64, w []float64, t float64) []float64 {
		out := make([]float64, n)
		for j := range out {
			out[j] = c[j] + t*(w[j]-c[j])
		}
		return out
	}
	for evals < maxEval {
		sort.SliceStable(simplex, func(i, j int) bool { return simplex[i].f < simplex[j].f })
		if math.Abs(simplex[n].f-simplex[0].f) <= tol*(1+math.Abs(simplex[0].f)) {
			break
		}
		c := make([]float64, n)
		for _, v := range simplex[:n] {
			for j := range c {
				c[j] += v.x[j] / float64(n)
			}
		}
		worst := simplex[n]
		xr := point(c, worst.x, -1)
		fr := eval(xr)
		switch {
		case fr < simplex[0].f:
			xe := point(c, worst.x, -2)
			if fe := eval(xe); fe < fr {
				simplex[n] = vertex{xe, fe}
			} else {
				simplex[n] = vertex{xr, fr}
			}
		case fr < simplex[n-1].f:
			simplex[n] = vertex{xr, fr}
		default:
			var xc []float64
			if fr < worst.f {
				xc = point(c, xr, 0.5)
			} else {
				xc = point(c, worst.x, 0.5)
			}
			if fc := eval(xc); fc < math.Min(fr, worst.f) {
				simplex[n] = vertex{xc, fc}
				continue
			}
			for i := 1; i <= n; i++ {
				x := point(simplex[0].x, simplex[i].x, 0.5)
				simplex[i] = vertex{x, eval(x)}
			}
		}
	}
	sort.SliceStable(simplex, func(i, j int) bool { return simplex[i].f < simplex[j].f })
	return simplex[0].x, simplex[0].f
}
