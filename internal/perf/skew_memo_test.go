package perf

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// edgeFloat draws a float near the int32 limits, a small value (whole
// or not), an infinity or NaN: the values a bucket bound or a context
// difference takes at the edges of the whole-number memos.
func edgeFloat(rt *rapid.T, label string) float64 {
	base := rapid.SampledFrom([]float64{0, 1, -1, 4096, math.MaxInt32, math.MinInt32, 1 << 40, -(1 << 40), 1 << 62}).Draw(rt, label+"Base")
	switch rapid.IntRange(0, 9).Draw(rt, label+"Kind") {
	case 0:
		return math.Inf(1)
	case 1:
		return math.Inf(-1)
	case 2:
		return math.NaN()
	case 3:
		return base + rapid.Float64Range(-3, 3).Draw(rt, label+"Frac")
	}
	return base + float64(rapid.IntRange(-3, 3).Draw(rt, label+"Step"))
}

// TestWholeRange: a whole number in wholeRange(lo, hi) is in (lo, hi],
// and one in (lo, hi] within an int32 (above its minimum) is in
// wholeRange when the bounds are.
func TestWholeRange(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		lo, hi := edgeFloat(rt, "lo"), edgeFloat(rt, "hi")
		for _, near := range []float64{lo, hi, 0, math.MaxInt32, math.MinInt32} {
			if math.IsNaN(near) || math.Abs(near) > 1<<50 {
				near = 0
			}
			for step := -2; step <= 2; step++ {
				checkWholeRange(rt, lo, hi, int(math.Floor(near))+step)
			}
		}
	})
}

// checkWholeRange checks TestWholeRange's properties at k.
func checkWholeRange(rt *rapid.T, lo, hi float64, k int) {
	klo, khi := wholeRange(lo, hi)
	in := float64(k) > lo && float64(k) <= hi
	whole := k > int(klo) && k <= int(khi)
	if whole && !in {
		rt.Fatalf("%d is in (%d, %d] but not in (%v, %v]", k, klo, khi, lo, hi)
	}
	if in && !whole && k > math.MinInt32 && k <= math.MaxInt32 && lo >= math.MinInt32 && hi <= math.MaxInt32 {
		rt.Fatalf("%d is in (%v, %v] but not in (%d, %d]", k, lo, hi, klo, khi)
	}
}

// TestWholeInt32: wholeInt32 gives v exactly when v is a whole number
// within an int32.
func TestWholeInt32(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		v := edgeFloat(rt, "v")
		i, ok := wholeInt32(v)
		want := v >= math.MinInt32 && v <= math.MaxInt32 && v == math.Trunc(v)
		if ok != want || (ok && float64(i) != v) {
			rt.Fatalf("wholeInt32(%v) = %d, %v", v, i, ok)
		}
	})
}

// TestSkewAxisHolds: the bucket index gives holds its value, and a
// bucket that holds a value is the one index gives.
func TestSkewAxisHolds(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(rt, "buckets")
		bins := rapid.SliceOfNDistinct(rapid.Float64Range(-1, 2), n+1, n+1, rapid.ID[float64]).Draw(rt, "bins")
		slices.Sort(bins)
		a := skewAxis{bins: bins, labels: make([]string, n)}
		v := rapid.SampledFrom(append(slices.Clone(bins), rapid.Float64Range(-2, 3).Draw(rt, "x"), math.NaN())).Draw(rt, "v")
		got := a.index(v)
		if !math.IsNaN(v) && !a.holds(got, v) {
			rt.Fatalf("bucket %d of %v does not hold %v", got, bins, v)
		}
		for i := range n {
			if a.holds(i, v) && i != got {
				rt.Fatalf("bucket %d of %v holds %v, which is in %d", i, bins, v, got)
			}
		}
	})
}
