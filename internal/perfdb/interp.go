package perfdb

import (
	"math"
	"slices"
)

// GEMMRule is a rule for a GEMM's time at an m between two measured m
// (at a measured n and k), read from the curve of its measured times
// (made non-decreasing from the right, buildCurve). On a measured m
// every rule returns the measured time. GEMMRules lists them; the
// held-out comparison (GEMMHoldout) measures each on the database's own
// rows.
type GEMMRule int

const (
	// GEMMLinear is linear in m between the two measured m: exact for
	// a time affine in m (a memory-bound GEMM streaming its weights
	// plus its activations), the average of a staircase whose steps are
	// spread evenly over the interval.
	GEMMLinear GEMMRule = iota
	// GEMMLogLog is the power law through the two points: a compute-
	// bound GEMM grows as m, a weight-bound one hardly at all, and a
	// local exponent between 0 and 1 blends them; below the line it
	// bends the way a fixed cost plus a linear term does.
	GEMMLogLog
	// GEMMHoldLower holds the lower point's time up to the upper point,
	// where it steps to the upper point's: the staircase of tile waves
	// when the kernel switch or the next wave falls at the upper tile
	// boundary, which is where the grid measures it.
	GEMMHoldLower
	// GEMMUpper is the upper point's time: a GEMM at m runs no slower
	// than one at a measured m' >= m (padded to m', it would be that
	// GEMM), so this bounds the time from above.
	GEMMUpper
	// GEMMNearest is the nearer point's time (the upper one on a tie):
	// a staircase stepping half way.
	GEMMNearest
	// GEMMTile64 and GEMMTile128 are linear in m rounded up to a
	// multiple of 64 or 128 (the M tile of the kernels cuBLAS and
	// CUTLASS pick for these sizes): the GEMM runs ceil(m/tile) tiles
	// along m, so its time is flat within a tile and, across tiles,
	// linear between the measured points' tile counts. Where both
	// points round to the same tile count (m <= the tile) it is linear
	// in m.
	GEMMTile64
	GEMMTile128
	// GEMMMonotoneCubic is the monotone cubic (Fritsch-Carlson) through
	// the curve: smooth in m, never above the upper point or below the
	// lower one.
	GEMMMonotoneCubic
)

// gemmRule is the rule the predictor reads GEMMs with: of the rules
// here, the one closest to the database's own rows held out
// (GEMMHoldout, all nine embedded systems and every dtype: median
// |error| 1.49 % against linear's 1.71 % at m 17-256 and 2.72 % against
// 2.93 % at m 257-4353, and closer than linear on more rows than
// farther in every m range where they differ).
const gemmRule = GEMMTile64

// GEMMRules lists every rule, in order: GEMMRules[r] == r.
var GEMMRules = []GEMMRule{GEMMLinear, GEMMLogLog, GEMMHoldLower, GEMMUpper, GEMMNearest, GEMMTile64, GEMMTile128, GEMMMonotoneCubic}

var gemmRuleNames = [...]string{"linear", "log-log", "hold-lower", "upper", "nearest", "tile-64", "tile-128", "monotone-cubic"}

// String names the rule.
func (r GEMMRule) String() string {
	if r < 0 || int(r) >= len(gemmRuleNames) {
		return "unknown"
	}
	return gemmRuleNames[r]
}

// atRule reads the curve at x by rule r; ok is false outside [x0, xn].
func (c *curve) atRule(x float64, r GEMMRule) (float64, bool) {
	n := len(c.x)
	if n == 0 || x < c.x[0] || x > c.x[n-1] {
		return 0, false
	}
	i, found := slices.BinarySearch(c.x, x)
	if found {
		return c.y[i], true
	}
	x0, x1, y0, y1 := c.x[i-1], c.x[i], c.y[i-1], c.y[i]
	f := (x - x0) / (x1 - x0)
	switch r {
	case GEMMLogLog:
		return logLog(x0, y0, x1, y1, x), true
	case GEMMHoldLower:
		return y0, true
	case GEMMUpper:
		return y1, true
	case GEMMNearest:
		if x-x0 < x1-x {
			return y0, true
		}
		return y1, true
	case GEMMTile64, GEMMTile128:
		tile := 64.0
		if r == GEMMTile128 {
			tile = 128
		}
		r0, r1 := math.Ceil(x0/tile)*tile, math.Ceil(x1/tile)*tile
		if r1 > r0 {
			f = (math.Ceil(x/tile)*tile - r0) / (r1 - r0)
		}
	case GEMMMonotoneCubic:
		return c.cubic(i, x), true
	}
	return y0 + f*(y1-y0), true
}

// cubic is the monotone cubic Hermite interpolant (Fritsch-Carlson
// tangents, the weighted harmonic mean of the neighbouring secants;
// zero where they differ in sign) on [x[i-1], x[i]].
func (c *curve) cubic(i int, x float64) float64 {
	x0, x1, y0, y1 := c.x[i-1], c.x[i], c.y[i-1], c.y[i]
	h := x1 - x0
	d := (y1 - y0) / h
	tangent := func(j int) float64 {
		if j == 0 || j == len(c.x)-1 {
			// one-sided: the secant of the end interval
			if j == 0 {
				return (c.y[1] - c.y[0]) / (c.x[1] - c.x[0])
			}
			return (c.y[j] - c.y[j-1]) / (c.x[j] - c.x[j-1])
		}
		ha, hb := c.x[j]-c.x[j-1], c.x[j+1]-c.x[j]
		da, db := (c.y[j]-c.y[j-1])/ha, (c.y[j+1]-c.y[j])/hb
		if da*db <= 0 {
			return 0
		}
		wa, wb := 2*hb+ha, hb+2*ha
		return (wa + wb) / (wa/da + wb/db)
	}
	m0, m1 := tangent(i-1), tangent(i)
	if d == 0 {
		m0, m1 = 0, 0
	} else {
		// keep the segment monotone (Fritsch-Carlson: alpha²+beta² <= 9)
		a, b := m0/d, m1/d
		if s := a*a + b*b; s > 9 {
			t := 3 / math.Sqrt(s)
			m0, m1 = t*a*d, t*b*d
		}
	}
	t := (x - x0) / h
	t2, t3 := t*t, t*t*t
	return (2*t3-3*t2+1)*y0 + (t3-2*t2+t)*h*m0 + (-2*t3+3*t2)*y1 + (t3-t2)*h*m1
}
