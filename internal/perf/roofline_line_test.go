package perf

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestDecodeLineWithinBound: a pure-decode lookup of the fast step
// (decodeLookupFast, from the memo's lines for a quartic soft maximum) is
// within a small part of its bound of decodeUniform, for context sums
// drawn anywhere and next to the ends of a block per unit (where the
// split count changes), with KV re-reads and without, with decode counts
// that share a memo's slot; a memo without lines takes decodeTerms's
// times, and every context sum of the memo's interval has the memo's
// blocks per unit.
func TestDecodeLineWithinBound(t *testing.T) {
	var lines, all int
	rapid.Check(t, func(t *rapid.T) {
		r := randomRoofline(t)
		r.eff.AttnSharpness = 4
		r.invAttnP = 1 / r.eff.AttnSharpness
		r.attnPow = newSoftPow(r.invAttnP)
		if !r.attnPow.quartic {
			t.Fatalf("sharpness 4: no quartic soft maximum")
		}
		switch rapid.IntRange(0, 5).Draw(t, "odd") {
		case 0: // fewer distinct KV bytes than the units request: re-reads
			r.kvBytesPerTok *= 0.6
		case 1: // a negative unit cost: no lines
			r.dec.unitNs = -50
		}
		x := r.ForRun(nil).(*rooflineRun)
		n := float64(rapid.IntRange(1, 1500).Draw(t, "n"))
		for range 20 {
			k := float64(rapid.Int64Range(0, 1e8).Draw(t, "k"))
			if rapid.Bool().Draw(t, "nearEnd") {
				b := math.Ceil(k / n / 128)
				k = max(0, b*128*n+float64(rapid.IntRange(-2, 2).Draw(t, "d")))
			}
			m := x.memo(0, int(n))
			got, e := x.decodeLookupFast(m, n, k)
			want := r.decodeUniform(n, k, nil)
			if d := math.Abs(got - want); !(d <= e/64) {
				t.Fatalf("n %v, k %v: fast lookup %v, decodeUniform %v: apart %.3g, bound %.3g", n, k, got, want, d, e)
			}
			all++
			if !m.line { // the soft maximum of decodeTerms's times, not the lines
				launch, tc, tm := r.decodeTerms(n, k, nil)
				if want := launch + r.attnPow.softMaxFast(tc, tm); got != want {
					t.Fatalf("n %v, k %v: a memo without lines gave %v, decodeTerms's times %v", n, k, got, want)
				}
			}
			if m.line {
				lines++
				if r.dec.unitNs < 0 {
					t.Fatalf("a line with the unit cost %v", r.dec.unitNs)
				}
			}
			if m.kLo <= m.kHi {
				for _, j := range []float64{m.kLo, m.kHi, math.Floor((m.kLo + m.kHi) / 2), k} {
					if j >= m.kLo && j <= m.kHi && math.Ceil(j/n/128) != m.nBlocks {
						t.Fatalf("n %v: context sum %v in [%v, %v] has %v blocks per unit, the memo %v", n, j, m.kLo, m.kHi, math.Ceil(j/n/128), m.nBlocks)
					}
				}
			}
			switch rapid.IntRange(0, 3).Draw(t, "newN") {
			case 0:
				n = float64(rapid.IntRange(1, 1500).Draw(t, "n2"))
			case 1: // a count sharing the memo's slot
				if n > splitSlots {
					n -= splitSlots
				} else {
					n += splitSlots
				}
			}
		}
	})
	t.Logf("%d of %d lookups from the lines", lines, all)
	if lines*3 < all {
		t.Fatalf("only %d of %d lookups from the lines", lines, all)
	}
}

// TestQuarticSoftMax: quarticSoftMax is within its bound of the real
// soft maximum (as far as softMax shows it: within 5 units of roundoff
// plus powRefErr) and declines arguments out of its range.
func TestQuarticSoftMax(t *testing.T) {
	sp := newSoftPow(0.25)
	for _, c := range [][2]float64{{-1, 2}, {2, -1}, {math.NaN(), 1}, {1, math.Inf(1)}, {0, 0}, {0x1p-210, 0}, {0x1p201, 1}} {
		if _, ok := quarticSoftMax(c[0], c[1]); ok {
			t.Fatalf("quarticSoftMax%v: ok", c)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.Float64Range(0, 1e12).Draw(t, "a")
		b := a * rapid.Float64Range(0, 3).Draw(t, "ratio")
		if rapid.Bool().Draw(t, "tiny") {
			b *= 0x1p-30
		}
		got, ok := quarticSoftMax(a, b)
		if !ok {
			if max(a, b) >= 0x1p-199 {
				t.Fatalf("quarticSoftMax(%v, %v): not ok", a, b)
			}
			return
		}
		want := sp.softMax(a, b)
		if !(math.Abs(got-want) <= (8*unitRound+powRefErr)*want) {
			t.Fatalf("quarticSoftMax(%v, %v) = %v %v, softMax %v", a, b, got, ok, want)
		}
	})
}
