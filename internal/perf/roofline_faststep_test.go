package perf

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestSoftMaxFastWithinBound: the soft maximum with tabled fractional
// powers is within a small part of its bound (fastErr) of softMax, for
// the calibrations' sharpnesses and any other, on random arguments and
// on arguments at the grid's points and midpoints (the largest |d|).
func TestSoftMaxFastWithinBound(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, sp *softPow, a, b float64) {
		got, want := sp.softMaxFast(a, b), sp.softMax(a, b)
		if d := math.Abs(got - want); !(d <= sp.fastErr/64*math.Abs(want)) {
			t.Fatalf("invP %v: softMaxFast(%v, %v) = %v, softMax %v: relative %.3g, bound %.3g",
				sp.inv.y, a, b, got, want, d/math.Abs(want), sp.fastErr)
		}
	}
	for _, p := range []float64{4, 2.204, 1 / 2.204, 0.3, 1, 2, 3.5, 7.77, 63.9, 4.0 / 3, 2.0 / 3, 0.25} {
		sp := newSoftPow(1 / p)
		if !sp.fast {
			if p == 4 || p == 2.204 {
				t.Fatalf("sharpness %v: no fast soft maximum", p)
			}
			continue // an exponent of 1/2 (math.Pow's sqrt): no fast path
		}
		for i := 0; i <= 512; i++ {
			// lo/hi at grid points and midpoints of the first pow, and
			// (for p = 1) of the second
			r := 0.5 + float64(i)/1024
			check(t, &sp, 1e5, 1e5*r)
			check(t, &sp, 1e5*r, 1e5)
			check(t, &sp, 3e4, 3e4*r*0x1p-14)
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		p := rapid.Float64Range(0.3, 64).Draw(rt, "p")
		sp := newSoftPow(1 / p)
		if !sp.fast {
			return
		}
		a := rapid.Float64Range(1e-3, 1e8).Draw(rt, "a")
		b := a * rapid.Float64Range(0, 2).Draw(rt, "ratio")
		check(rt, &sp, a, b)
	})
}

// TestFastStepIsExact drives the per-run copy's fast step through runs of
// decode batches as an engine makes them (contexts a token longer every
// step, members joining and leaving, random efficiencies with fractional
// sharpnesses), with mixed, prefill-only and speculative steps among
// them, and requires every step time to be the Roofline's, bit for bit.
// Some steps are moved next to a rounding boundary (the attention launch
// time shifted so that the step's sum lies within a few ulps to 1e-10 of
// a half nanosecond), where only a sound error bound keeps the fast step
// from rounding the wrong way.
func TestFastStepIsExact(t *testing.T) {
	var fast, slow, plainFast, plainSlow int
	rapid.Check(t, func(t *rapid.T) {
		r := randomRoofline(t)
		r.eff.AttnSharpness = rapid.SampledFrom([]float64{4, 2.204, 0.45, 3.3, 11.9, 40}).Draw(t, "sharpness")
		if rapid.Bool().Draw(t, "anySharpness") {
			r.eff.AttnSharpness = rapid.Float64Range(0.3, 64).Draw(t, "sharpness2")
		}
		r.invAttnP = 1 / r.eff.AttnSharpness
		r.attnPow = newSoftPow(r.invAttnP)
		if !r.plain {
			t.Skip("not the plain program")
		}
		x := r.ForRun(nil).(*rooflineRun)
		cnt := r.cache.runs[0].counts[0]
		n := rapid.IntRange(1, 600).Draw(t, "n")
		lo := rapid.IntRange(0, 40000).Draw(t, "min")
		hi := lo + rapid.IntRange(0, 40000).Draw(t, "spread")
		mean := rapid.IntRange(lo, hi).Draw(t, "mean")
		for range 60 {
			b := Batch{NumDecode: n, DecodeKVMin: lo, DecodeKVMax: hi,
				DecodeKVSum: int64(mean)*int64(n) + int64(rapid.IntRange(0, n-1).Draw(t, "rem"))}
			if n == 1 {
				b.DecodeKVMin, b.DecodeKVMax, b.DecodeKVSum = hi, hi, int64(hi)
			}
			switch rapid.IntRange(0, 9).Draw(t, "other") {
			case 0:
				b.PrefillTokens, b.PrefillSeqs = rapid.IntRange(1, 3000).Draw(t, "pc"), rapid.IntRange(1, 3).Draw(t, "ps")
				b.PrefillKV = rapid.IntRange(0, 5000).Draw(t, "kp")
			case 1:
				b.SpecTokens = rapid.IntRange(1, 3*n).Draw(t, "spec")
			case 2:
				b.PadTokens = rapid.IntRange(1, 30).Draw(t, "pad")
			case 3:
				b = Batch{PrefillTokens: rapid.IntRange(1, 3000).Draw(t, "pc0"), PrefillSeqs: 1}
			}
			near := rapid.IntRange(0, 2).Draw(t, "near") == 0
			if near {
				v, _ := r.stepNs(&b, nil)
				j := rapid.SampledFrom([]float64{0, 1e-16, -1e-16, 1e-14, -1e-14, 1e-12, -1e-12, 1e-10, -1e-10}).Draw(t, "jitter")
				shift := (math.Floor(v) + 0.5 + j*v - v) / cnt
				if b.PrefillTokens > 0 {
					r.eff.AttnLaunchNs += shift
				} else {
					r.eff.AttnDecodeLaunchNs += shift
				}
			}
			f, s := x.fastSteps, x.slowSteps
			if got, want := x.StepTime(&b), r.StepTime(&b); got != want {
				ref, _ := r.stepNs(&b, nil)
				t.Fatalf("%+v (sharpness %v, reference sum %.17g): fast step %d ns, Roofline %d ns",
					b, r.eff.AttnSharpness, ref, got, want)
			}
			if !near {
				plainFast += x.fastSteps - f
				plainSlow += x.slowSteps - s
			}
			lo, hi, mean = lo+1, hi+1, mean+1
			switch rapid.IntRange(0, 9).Draw(t, "change") {
			case 0:
				n = max(1, n-1)
			case 1:
				n++
			case 2:
				n = rapid.IntRange(1, 600).Draw(t, "n2")
			}
			mean = max(lo, min(mean, hi))
		}
		fast, slow = fast+x.fastSteps, slow+x.slowSteps
	})
	t.Logf("fast steps %d, left to plainNs %d; away from the boundaries %d and %d", fast, slow, plainFast, plainSlow)
	if plainSlow*100 > plainFast+plainSlow {
		t.Fatalf("%d of %d steps away from rounding boundaries left to plainNs", plainSlow, plainFast+plainSlow)
	}
}
