package metrics

import (
	"math"
	"slices"
)

// Stat summarises a distribution. Summary fills it in milliseconds; Stats
// fills it in the unit of its input. An empty distribution is all zeros
// (Count 0), never NaN.
type Stat struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	Min   float64 `json:"min"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// Stats computes exact statistics of values: the mean, and percentiles with
// linear interpolation between closest ranks (numpy.percentile's default,
// method "linear"). NaN values are skipped; values is not modified. Meant
// for small samples (it sorts a copy); both sides of a validation use it.
func Stats(values []float64) Stat {
	x := make([]float64, 0, len(values))
	for _, v := range values {
		if !math.IsNaN(v) {
			x = append(x, v)
		}
	}
	if len(x) == 0 {
		return Stat{}
	}
	slices.Sort(x)
	var sum float64
	for _, v := range x {
		sum += v
	}
	return Stat{
		Count: int64(len(x)),
		Mean:  sum / float64(len(x)),
		Min:   x[0],
		P50:   Percentile(x, 50),
		P90:   Percentile(x, 90),
		P95:   Percentile(x, 95),
		P99:   Percentile(x, 99),
		Max:   x[len(x)-1],
	}
}

// Percentile returns the p-th percentile (0..100) of sorted (ascending,
// no NaN) with numpy's default linear interpolation: the virtual index is
// p/100*(n-1) and the result interpolates between its two neighbours.
// It returns 0 for an empty slice.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	p = min(max(p, 0), 100)
	pos := p / 100 * float64(n-1)
	lo := int(math.Floor(pos))
	if lo >= n-1 {
		return sorted[n-1]
	}
	t := pos - float64(lo)
	a, b := sorted[lo], sorted[lo+1]
	// numpy's _lerp: a + (b-a)*t, computed from the far end when t >= 0.5
	// to stay exact at t == 1 and monotonic.
	if t >= 0.5 {
		return b - (b-a)*(1-t)
	}
	return a + (b-a)*t
}
