package perf

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestPowNearMatchesPow requires powNear to return math.Pow's bits: on
// the sharpness exponents the calibrations use (4, 1/4, 2.204 and its
// inverse), at the ends of its range, outside it (where it hands over to
// math.Pow), and on random arguments.
func TestPowNearMatchesPow(t *testing.T) {
	same := func(t interface{ Fatalf(string, ...any) }, x, y float64) {
		got, want := powNear(x, y), math.Pow(x, y)
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("powNear(%v, %v) = %v (%x), math.Pow %v (%x)", x, y, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
	xs := []float64{0, 0x1p-16, 0x1p-15, math.Nextafter(0x1p-15, 1), 1e-3, 0.3, 0.5, 0.999999, 1, 1.0000001, 1.5, 2, math.Nextafter(2, 3), 3, math.Inf(1), math.NaN(), -0.5}
	ys := []float64{0, 0.25, 1 / 2.204, 0.5, 0.75, 1, 1.5, 2.204, 3, 4, 7.3, 63.7, 64, 65, -1, math.NaN()}
	for _, x := range xs {
		for _, y := range ys {
			same(t, x, y)
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		x := rapid.Float64Range(0x1p-16, 2.5).Draw(rt, "x")
		y := rapid.SampledFrom([]float64{4, 0.25, 1 / 2.204, 2.204}).Draw(rt, "y")
		if rapid.Bool().Draw(rt, "anyY") {
			y = rapid.Float64Range(0, 70).Draw(rt, "y2")
		}
		same(rt, x, y)
	})
	// Dense sweeps over the exponents softMax uses.
	for _, y := range []float64{4, 0.25, 1 / 2.204, 2.204} {
		for i := 0; i < 200_000; i++ {
			x := 0x1p-15 + float64(i)*(2-0x1p-15)/200_000
			same(t, x, y)
			same(t, math.Nextafter(x, 3), y)
		}
	}
}

// TestSoftPowMatchesSoftMax: the soft maximum with its exponents split
// once is softMax, bit for bit, for the sharpnesses of the calibrations
// and any other.
func TestSoftPowMatchesSoftMax(t *testing.T) {
	same := func(t interface{ Fatalf(string, ...any) }, a, b, invP float64) {
		sp := newSoftPow(invP)
		got, want := sp.softMax(a, b), softMax(a, b, invP)
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("softPow(%v).softMax(%v, %v) = %v, softMax %v", invP, a, b, got, want)
		}
	}
	for _, invP := range []float64{0, 1 / 2.204, 0.25, 0.5, 1, 2, 1 / 64.0, 1 / 70.0, math.NaN()} {
		for _, a := range []float64{0, 1, 3e4, 1e-3, math.Inf(1)} {
			for _, b := range []float64{0, 2, 3e4, 5e6, -1} {
				same(t, a, b, invP)
			}
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		invP := 1 / rapid.Float64Range(0.9, 70).Draw(rt, "p")
		a := rapid.Float64Range(0, 1e7).Draw(rt, "a")
		b := a * rapid.Float64Range(0, 3).Draw(rt, "ratio")
		same(rt, a, b, invP)
	})
}
