package perf

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestRoundNsIsClampNs: roundNs is clampNs (math.Round, clamped) for
// every float64: any bit pattern, values near halves and whole numbers,
// and around 2^52, 2^53 and 2^63.
func TestRoundNsIsClampNs(t *testing.T) {
	check := func(tb interface{ Fatalf(string, ...any) }, v float64) {
		if g, w := roundNs(v), clampNs(v); g != w {
			tb.Fatalf("roundNs(%v = %#x) = %d, clampNs %d", v, math.Float64bits(v), g, w)
		}
	}
	for _, v := range []float64{0, math.Copysign(0, -1), 0.5, math.Nextafter(0.5, 0), 1.5, 2.5,
		math.Nextafter(1.5, 0), 1 << 52, 1<<52 + 1, 1 << 53, math.Nextafter(1<<63, 0), 1 << 63,
		math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN(), -0.5, -2.5, 4503599627370495.5} {
		check(t, v)
	}
	rapid.Check(t, func(rt *rapid.T) {
		check(rt, math.Float64frombits(rapid.Uint64().Draw(rt, "bits")))
		base := rapid.OneOf(rapid.Float64Range(0, 1e7), rapid.Float64Range(1<<50, 1<<54),
			rapid.Float64Range(1<<62, 1<<64)).Draw(rt, "base")
		half := math.Floor(base) + 0.5
		for _, v := range []float64{base, half, math.Nextafter(half, 0), math.Nextafter(half, math.Inf(1)),
			math.Floor(base), math.Nextafter(math.Floor(base), 0)} {
			check(rt, v)
		}
	})
}
