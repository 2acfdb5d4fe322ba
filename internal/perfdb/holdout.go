package perfdb

import (
	"cmp"
	"math"
	"slices"
)

// HeldOut is one measured GEMM row predicted without it: its system,
// dtype and shape, its measured time (ns; the mean of repeated rows) and
// the time each rule of GEMMRules reads from the rest of its (n, k)
// curve (Pred[i] by GEMMRules[i]).
type HeldOut struct {
	System, Dtype string
	M, N, K       int
	// Lo and Hi are the measured values of the held-out axis (m, or n or
	// k for GEMMHoldoutAcross) the prediction was read between.
	Lo, Hi   int
	Measured float64
	Pred     []float64
}

// holdoutGroups splits the sorted measured m of one curve into the
// groups held out together: m >= 16 with m+1 also measured is held out
// with m+1 (the grid measures each tile boundary from both sides, and a
// point predicted from its partner one apart tests nothing between grid
// points), every other m alone. Groups are index ranges [lo, hi).
func holdoutGroups(xs []float64) [][2]int {
	var out [][2]int
	for i := 0; i < len(xs); {
		if xs[i] >= 16 && i+1 < len(xs) && xs[i+1] == xs[i]+1 {
			out = append(out, [2]int{i, i + 2})
			i += 2
			continue
		}
		out = append(out, [2]int{i, i + 1})
		i++
	}
	return out
}

// GEMMHoldout predicts every interior measured GEMM row of db from the
// others of its (dtype, n, k) curve: each group of holdoutGroups but the
// first and last is removed, the remaining points are made
// non-decreasing from the right as the predictor makes them
// (buildCurve), and each rule reads the held-out m between the nearest
// remaining m on either side. Rows come sorted by dtype, n, k and m.
func GEMMHoldout(db *DB) []HeldOut {
	xs, ys := gemmPoints(db.GEMM)
	keys := make([]gemmKey, 0, len(xs))
	for k := range xs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b gemmKey) int {
		return cmp.Or(cmp.Compare(a.dtype, b.dtype), cmp.Compare(a.n, b.n), cmp.Compare(a.k, b.k))
	})
	var out []HeldOut
	rest := &curve{}
	for _, k := range keys {
		raw := averaged(xs[k], ys[k])
		groups := holdoutGroups(raw.x)
		for g := 1; g+1 < len(groups); g++ {
			lo, hi := groups[g][0], groups[g][1]
			rest.x = append(append(rest.x[:0], raw.x[:lo]...), raw.x[hi:]...)
			rest.y = append(append(rest.y[:0], raw.y[:lo]...), raw.y[hi:]...)
			rest.envelope()
			for i := lo; i < hi; i++ {
				h := HeldOut{System: db.System, Dtype: k.dtype, M: int(raw.x[i]), N: k.n, K: k.k,
					Lo: int(raw.x[lo-1]), Hi: int(raw.x[hi]), Measured: raw.y[i], Pred: rest.predictAll(raw.x[i])}
				out = append(out, h)
			}
		}
	}
	return out
}

// GEMMAxis is the axis of a GEMM curve held out along.
type GEMMAxis int

const (
	// AxisM holds out m at a measured (n, k) (GEMMHoldout).
	AxisM GEMMAxis = iota
	// AxisN holds out n at a measured (m, k).
	AxisN
	// AxisK holds out k at a measured (m, n).
	AxisK
)

// GEMMHoldoutAcross predicts every interior measured n (axis AxisN) or k
// (AxisK) of db's GEMM rows from the others at the same dtype, m and
// other dimension, as the predictor blends its corners: the times are
// the (n, k) curves' after they are made non-decreasing in m
// (buildCurve), at the measured m, and every rule reads the held-out n
// or k between the nearest measured ones on either side (Lo, Hi), each
// held out alone. Measured is the held-out point's own time. Rows come
// sorted by dtype, m, the other dimension and the axis.
func GEMMHoldoutAcross(db *DB, axis GEMMAxis) []HeldOut {
	type key struct {
		dtype    string
		m, other int
	}
	xs, ys := gemmPoints(db.GEMM)
	along := map[key]*curve{}
	for c := range xs {
		cv := buildCurve(xs[c], ys[c])
		a, other := c.n, c.k
		if axis == AxisK {
			a, other = c.k, c.n
		}
		for i, m := range cv.x {
			k := key{c.dtype, int(m), other}
			if along[k] == nil {
				along[k] = &curve{}
			}
			along[k].x = append(along[k].x, float64(a))
			along[k].y = append(along[k].y, cv.y[i])
		}
	}
	keys := make([]key, 0, len(along))
	for k := range along {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.dtype, b.dtype), cmp.Compare(a.m, b.m), cmp.Compare(a.other, b.other))
	})
	var out []HeldOut
	rest := &curve{}
	for _, k := range keys {
		c := averaged(along[k].x, along[k].y)
		for i := 1; i+1 < len(c.x); i++ {
			rest.x = append(append(rest.x[:0], c.x[:i]...), c.x[i+1:]...)
			rest.y = append(append(rest.y[:0], c.y[:i]...), c.y[i+1:]...)
			h := HeldOut{System: db.System, Dtype: k.dtype, M: k.m, Lo: int(c.x[i-1]), Hi: int(c.x[i+1]),
				Measured: c.y[i], Pred: rest.predictAll(c.x[i])}
			h.N, h.K = int(c.x[i]), k.other
			if axis == AxisK {
				h.N, h.K = k.other, int(c.x[i])
			}
			out = append(out, h)
		}
	}
	return out
}

// gemmKey names one measured GEMM curve in m.
type gemmKey struct {
	dtype string
	n, k  int
}

// gemmPoints groups GEMM rows into their curves' raw points: m and the
// time in ns, in row order.
func gemmPoints(rows []GEMMRow) (xs, ys map[gemmKey][]float64) {
	xs, ys = map[gemmKey][]float64{}, map[gemmKey][]float64{}
	for _, r := range rows {
		k := gemmKey{r.Dtype, r.N, r.K}
		xs[k] = append(xs[k], float64(r.M))
		ys[k] = append(ys[k], r.Ms*1e6)
	}
	return xs, ys
}

// predictAll reads c at x by every rule of GEMMRules; a rule that cannot
// read x (outside c) gives NaN, which the summaries then show.
func (c *curve) predictAll(x float64) []float64 {
	pred := make([]float64, len(GEMMRules))
	for j, r := range GEMMRules {
		v, ok := c.atRule(x, r)
		if !ok {
			v = math.NaN()
		}
		pred[j] = v
	}
	return pred
}
