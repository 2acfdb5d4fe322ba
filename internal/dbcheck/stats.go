package dbcheck

import (
	"slices"

	"github.com/servesim/servesim/internal/metrics"
)

// Dist summarises differences in percent: the 10th, 50th and 90th
// percentiles (numpy's linear interpolation, metrics.Percentile).
type Dist struct {
	P10    float64 `json:"p10"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
}

// distOf summarises xs (fractions) in percent; nil when xs is empty.
func distOf(xs []float64) *Dist {
	if len(xs) == 0 {
		return nil
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return &Dist{P10: 100 * metrics.Percentile(s, 10), Median: 100 * metrics.Percentile(s, 50), P90: 100 * metrics.Percentile(s, 90)}
}
