package perf

import "math"

// guide speeds up bracket on one fixed axis without changing its result.
// It splits the positive numbers into buckets by the top bits of their
// IEEE-754 encoding (an exponent and a few mantissa bits: a fixed number
// of buckets per octave, so geometric and linear grids both spread out)
// and records, for every bucket k, the first sample whose bucket is >= k.
// A lookup starts there and steps forward past the samples <= x: on the
// project's grids one or two steps instead of a binary search.
//
// Exactness: for non-negative floats the encoding is monotone in the
// value, so the bucket of a sample below x's bucket is below x; the first
// sample greater than x is therefore never before the bucket's start, and
// the forward scan finds exactly the index bisection finds. t is then
// computed by the same expression as bracket's, so results are bit for bit
// those of bracket (TestGuideMatchesBracket).
type guide struct {
	first []uint16 // first[k]: first sample index with bucket >= k+kmin
	kmin  uint64   // lowest bucket (smaller ones are clamped to it)
	shift uint     // bucket = Float64bits(x) >> shift
}

// Guide sizing: resolutions from one bucket per octave to 256, and a table
// of at most guideMaxBuckets entries.
const (
	guideMinShift   = 44 // 256 buckets per octave
	guideMaxShift   = 52 // one bucket per octave
	guideRun        = 2
	guideMaxBuckets = 2048
)

// newGuide builds the guide of axis xs (strictly increasing, no NaN). Axes
// it cannot serve (negative or -0 samples, more than 65,535 samples, too
// spread out) get an empty guide, on which lookups fall back to bisection.
func newGuide(xs []float64) guide {
	n := len(xs)
	if n < 2 || n > math.MaxUint16 || !(xs[0] >= 0) || math.Signbit(xs[0]) || math.IsInf(xs[n-1], 0) {
		return guide{}
	}
	// Coarse to fine: the smallest table whose buckets hold at most
	// guideRun samples, or the finest within guideMaxBuckets.
	var best guide
	for shift := uint(guideMaxShift); shift >= guideMinShift; shift-- {
		g, run := buildGuide(xs, shift)
		if g.first == nil {
			break // finer only grows the table
		}
		best = g
		if run <= guideRun {
			break
		}
	}
	return best
}

// buildGuide builds the guide at one resolution and reports the largest
// number of samples sharing a bucket; first is nil when the table would
// exceed guideMaxBuckets.
func buildGuide(xs []float64, shift uint) (guide, int) {
	n := len(xs)
	lowest := xs[0]
	if lowest == 0 {
		lowest = xs[1]
	}
	g := guide{kmin: math.Float64bits(lowest) >> shift, shift: shift}
	kmax := g.bucket(xs[n-1])
	size := kmax - g.kmin + 1
	if size > guideMaxBuckets {
		return guide{}, 0
	}
	g.first = make([]uint16, size)
	i, run, cur, prev := 0, 0, 0, uint64(math.MaxUint64)
	for k := range g.first {
		for i < n && g.bucket(xs[i]) < uint64(k)+g.kmin {
			i++
		}
		g.first[k] = uint16(i)
	}
	for _, x := range xs {
		if b := g.bucket(x); b == prev {
			cur++
		} else {
			prev, cur = b, 1
		}
		run = max(run, cur)
	}
	return g, run
}

// bucket is x's bucket, clamped below to kmin; x must be >= +0.
func (g *guide) bucket(x float64) uint64 {
	return max(math.Float64bits(x)>>g.shift, g.kmin)
}

// bracket is bracket(xs, x) for the axis xs the guide was built from.
// It reads the axis only where the guide starts the search and on: in a
// cluster the axes of the lookups a step makes now and then have left
// the first-level cache by the next one, and the axis's first and last
// samples are often lines of their own. Every x > 0 has a bucket, and
// one past the table is past the last sample (buckets are monotone);
// x <= 0 (or NaN) is at most the first sample, which is >= +0.
func (g *guide) bracket(xs []float64, x float64) (lo, hi int, t float64) {
	if g.first == nil {
		return bracket(xs, x) // an axis the guide cannot serve
	}
	if !(x > 0) {
		return 0, 0, 0 // clamped, as bracket does
	}
	n, k := len(xs), g.bucket(x)-g.kmin
	if k >= uint64(len(g.first)) {
		lo, hi = n-2, n-1 // x > xs[n-1]: extrapolated
		return lo, hi, (x - xs[lo]) / (xs[hi] - xs[lo])
	}
	// first[k] < n: the last sample's bucket is the table's last.
	i := int(g.first[k])
	for xs[i] <= x {
		i++
		if i == n {
			lo, hi = n-2, n-1
			return lo, hi, (x - xs[lo]) / (xs[hi] - xs[lo])
		}
	}
	if i <= 1 && !(x > xs[0]) {
		return 0, 0, 0 // clamped, as bracket does
	}
	lo, hi = i-1, i
	return lo, hi, (x - xs[lo]) / (xs[hi] - xs[lo])
}

// pos is a position on an axis, as bracket returns it.
type pos struct {
	lo, hi int
	t      float64
}

// at is the guided bracket as a pos.
func (g *guide) at(xs []float64, x float64) pos {
	lo, hi, t := g.bracket(xs, x)
	return pos{lo, hi, t}
}

// find returns the index of the sample equal to x, or -1.
func (g *guide) find(xs []float64, x float64) int {
	if len(xs) == 0 {
		return -1
	}
	lo, hi, _ := g.bracket(xs, x)
	switch {
	case xs[lo] == x:
		return lo
	case xs[hi] == x:
		return hi
	}
	return -1
}
