package perf

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"
)

// sameBracket fails t unless the guided lookup returns bracket's result
// bit for bit.
func sameBracket(t interface{ Fatalf(string, ...any) }, g *guide, xs []float64, x float64) {
	lo, hi, f := bracket(xs, x)
	glo, ghi, gf := g.bracket(xs, x)
	if glo != lo || ghi != hi || math.Float64bits(gf) != math.Float64bits(f) && !(math.IsNaN(f) && math.IsNaN(gf)) {
		t.Fatalf("x=%v on %v: guide (%d,%d,%v), bracket (%d,%d,%v)", x, xs, glo, ghi, gf, lo, hi, f)
	}
}

// TestGuideMatchesBracket: on increasing axes of every shape (geometric,
// linear, mixed, starting at zero or not, tiny and huge values) and at
// every kind of x (grid points, between them, integers, outside the axis,
// NaN), the guided lookup is bracket's, bit for bit.
func TestGuideMatchesBracket(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 300).Draw(rt, "n")
		start := rapid.SampledFrom([]float64{0, 1, 16, 1e-300, 0.37, 1e6}).Draw(rt, "start")
		xs := []float64{start}
		for len(xs) < n {
			prev := xs[len(xs)-1]
			var next float64
			switch rapid.IntRange(0, 3).Draw(rt, "step") {
			case 0: // integer steps
				next = prev + float64(rapid.IntRange(1, 64).Draw(rt, "d"))
			case 1: // geometric
				next = prev * rapid.Float64Range(1.0001, 3).Draw(rt, "r")
			case 2: // the next float
				next = math.Nextafter(prev, math.Inf(1))
			default: // a jump
				next = prev + rapid.Float64Range(1e-9, 1e9).Draw(rt, "j")
			}
			if !(next > prev) || math.IsInf(next, 0) {
				break
			}
			xs = append(xs, next)
		}
		g := newGuide(xs)
		probes := []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 0, xs[0], xs[len(xs)-1],
			xs[len(xs)-1] * 2, math.Nextafter(xs[len(xs)-1], math.Inf(1))}
		for i, x := range xs {
			probes = append(probes, x, math.Nextafter(x, 0), math.Nextafter(x, math.Inf(1)), math.Round(x))
			if i > 0 {
				probes = append(probes, (x+xs[i-1])/2)
			}
		}
		for range 50 {
			probes = append(probes, rapid.Float64Range(0, xs[len(xs)-1]*1.5+1).Draw(rt, "x"),
				float64(rapid.IntRange(0, 1<<20).Draw(rt, "k")))
		}
		for _, x := range probes {
			sameBracket(rt, &g, xs, x)
		}
	})
}

// TestGuideUnusableAxes: axes the guide cannot serve get none, and the
// lookup still answers as bracket does.
func TestGuideUnusableAxes(t *testing.T) {
	for _, xs := range [][]float64{
		{-3, -1, 2},
		{math.Copysign(0, -1), 1, 2},
		{1, math.Inf(1)},
		{5},
	} {
		g := newGuide(xs)
		if g.first != nil {
			t.Errorf("%v: got a guide of %d buckets, want none", xs, len(g.first))
		}
		for _, x := range []float64{-5, -1, 0, 0.5, 1, 1.5, 3, 1e301, math.NaN()} {
			sameBracket(t, &g, xs, x)
		}
	}
	// Spread over 2,000 octaves: a one-bucket-per-octave guide.
	xs := []float64{0, 5e-324, 1e-300, 1, 1e300}
	g := newGuide(xs)
	for _, x := range []float64{0, 5e-324, 1e-310, 1e-300, 0.5, 1, 2, 1e299, 1e300, math.MaxFloat64} {
		sameBracket(t, &g, xs, x)
	}
}

// TestGuideOnBundleAxes: the embedded Llama bundle's axes all get a guide
// with at most guideRun samples per bucket (one or two scan steps), so the
// speed-up is in effect on the tables that are really looked up.
func TestGuideOnBundleAxes(t *testing.T) {
	p := loadLlama(t)
	check := func(name string, xs []float64, g guide) {
		t.Helper()
		if len(xs) < 2 {
			return
		}
		if g.first == nil {
			t.Fatalf("%s (%d samples, %v..%v): no guide", name, len(xs), xs[0], xs[len(xs)-1])
		}
		run, prev, cur := 0, uint64(math.MaxUint64), 0
		for _, x := range xs {
			if b := g.bucket(x); b == prev {
				cur++
			} else {
				prev, cur = b, 1
			}
			run = max(run, cur)
		}
		if run > guideRun {
			t.Errorf("%s: %d samples share a bucket, want <= %d", name, run, guideRun)
		}
	}
	check("dense", p.dense.xs, p.dense.g)
	check("per-sequence", p.perSeq.xs, p.perSeq.g)
	check("attention pc", p.attn.pcs, p.attn.pcsG)
	for _, e := range p.attn.byPC {
		check("attention n", e.n, e.nG)
		for _, s := range e.slices {
			check("attention kp", s.kp, s.kpG)
			check("attention kvd", s.kvd, s.kvdG)
		}
	}
}

// TestAttnAt2MatchesAt: the shared-position lookup of two decode contexts
// returns, bit for bit, the two separate lookups (that is, the unshared
// bilinear interpolation of each corner) on the embedded Llama table, and
// equal corner axes were made one (so positions really are shared).
func TestAttnAt2MatchesAt(t *testing.T) {
	a := loadLlama(t).attn
	shared := 0
	for _, e := range a.byPC {
		for j := 1; j < len(e.slices); j++ {
			if sameAxis(e.slices[j].kvd, e.slices[j-1].kvd) {
				shared++
			}
		}
	}
	if shared == 0 {
		t.Fatal("no corner shares its kvd axis with its neighbour")
	}
	// plain is attnTable.at without any sharing or guide.
	plain := func(pc, kp float64, n int, kvd float64) float64 {
		sl := func(s *attnSlice) float64 {
			i0, i1, ti := bracket(s.kp, kp)
			j0, j1, tj := bracket(s.kvd, kvd)
			v := s.rowAt(i0, j0, j1, tj)
			if i1 != i0 {
				v += ti * (s.rowAt(i1, j0, j1, tj) - v)
			}
			return v
		}
		pcAt := func(e *attnPC) float64 {
			lo, hi, f := bracket(e.n, float64(n))
			v := sl(&e.slices[lo])
			if hi != lo {
				v += f * (sl(&e.slices[hi]) - v)
			}
			return v
		}
		lo, hi, f := bracket(a.pcs, pc)
		v := pcAt(&a.byPC[lo])
		if hi != lo {
			v += f * (pcAt(&a.byPC[hi]) - v)
		}
		return v
	}
	rapid.Check(t, func(rt *rapid.T) {
		pc := rapid.SampledFrom([]float64{0, 0, 16, 100, 512, 1000, 2048, 3000}).Draw(rt, "pc")
		kp := float64(rapid.IntRange(0, 40000).Draw(rt, "kp"))
		n := rapid.IntRange(1, 400).Draw(rt, "n")
		kvd := [2]float64{float64(rapid.IntRange(0, 40000).Draw(rt, "mean")), float64(rapid.IntRange(0, 40000).Draw(rt, "max"))}
		two := rapid.Bool().Draw(rt, "two")
		got := a.at2(pc, kp, n, &kvd, two)
		for k := range 2 {
			if k == 1 && !two {
				break
			}
			want := plain(pc, kp, n, kvd[k])
			if math.Float64bits(got[k]) != math.Float64bits(want) {
				rt.Fatalf("at2(%v, %v, %d, %v)[%d] = %v, want %v", pc, kp, n, kvd, k, got[k], want)
			}
			if one := a.at(pc, kp, n, kvd[k]); math.Float64bits(one) != math.Float64bits(want) {
				rt.Fatalf("at(%v, %v, %d, %v) = %v, want %v", pc, kp, n, kvd[k], one, want)
			}
		}
	})
}

// TestProfileMemoIsExact: the memoised dense and per-sequence sums equal
// the interpolated ones bit for bit at every whole count, on first use and
// on reuse, inside and beyond the memo.
func TestProfileMemoIsExact(t *testing.T) {
	p := loadLlama(t)
	for rep := range 2 {
		for n := -1; n <= opCacheLimit+10; n++ {
			for _, c := range []struct {
				name string
				tab  []atomic.Uint64
				f    *pwl
			}{{"dense", p.denseMemo, &p.dense}, {"per-sequence", p.perSeqMemo, &p.perSeq}} {
				if got, want := memoAt(c.tab, c.f, n), c.f.at(float64(n)); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("pass %d: %s at %d: memo %v, table %v", rep, c.name, n, got, want)
				}
			}
		}
	}
}

// TestBuiltinMinMaxMatchMath: the profile's hot paths use the builtin min
// and max in place of math.Min and math.Max where one argument is a finite
// constant (0 or 1); there they agree bit for bit, signed zeros,
// infinities and NaN included. (With an infinite argument and NaN they
// differ, so both-computed operands keep math.Max and math.Min.)
func TestBuiltinMinMaxMatchMath(t *testing.T) {
	vals := []float64{math.NaN(), math.Inf(-1), -1e308, -1, math.Copysign(0, -1), 0, 5e-324, 0.5, 1, 3, 1e308, math.Inf(1)}
	same := func(a, b float64) bool {
		return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
	}
	for _, c := range []float64{0, 1} {
		for _, x := range vals {
			if !same(max(c, x), math.Max(c, x)) || !same(min(c, x), math.Min(c, x)) {
				t.Errorf("c=%v x=%v: max %v/%v, min %v/%v", c, x, max(c, x), math.Max(c, x), min(c, x), math.Min(c, x))
			}
		}
	}
}

// TestProfileConcurrent: goroutines sharing one profile fill and read its
// memos at once and all get the values of a fresh, unshared profile (run
// with -race).
func TestProfileConcurrent(t *testing.T) {
	shared, ref := loadLlama(t), loadLlama(t)
	var batches []Batch
	for n := 1; n <= 300; n += 7 {
		batches = append(batches, Batch{NumDecode: n, DecodeKVSum: int64(n) * 700, DecodeKVMin: 20, DecodeKVMax: 3000},
			Batch{PrefillTokens: 5 * n, PrefillSeqs: 1, PrefillKV: 100 * n, NumDecode: n, DecodeKVSum: int64(n) * 900, DecodeKVMin: 50, DecodeKVMax: 9000})
	}
	want := make([]int64, len(batches))
	for i := range batches {
		want[i] = ref.StepTime(&batches[i])
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range batches {
				i := (k + g*len(batches)/4) % len(batches)
				b := batches[i]
				if got := shared.StepTime(&b); got != want[i] {
					errs <- fmt.Sprintf("batch %d: shared %d ns, fresh %d ns", i, got, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
