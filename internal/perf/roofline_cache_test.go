package perf

import (
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// uncachedStep is StepTime computed from OpNs directly, in op order, as the
// predictor did before op times were cached.
func uncachedStep(r *Roofline, b *Batch) int64 {
	if b.Tokens() <= 0 && b.Seqs() <= 0 {
		return 0
	}
	var s float64
	for _, u := range r.Ops() {
		s += u.Count * r.OpNs(u.Op, b)
	}
	return clampNs(s)
}

// TestRooflineCacheIsExact: for random batches, dense and MoE models, the
// cached step time equals the uncached one exactly, on first use (fills
// the cache), on reuse (hits it) and above the cache's count limit.
func TestRooflineCacheIsExact(t *testing.T) {
	moe := tinyModel
	moe.Experts, moe.ExpertsPerTok, moe.MoEIntermediate = 8, 2, 1024
	preds := map[string]*Roofline{}
	for name, m := range map[string]RooflineModel{"dense": tinyModel, "moe": moe} {
		for _, tp := range []int{1, 2} {
			eff := tinyEff
			eff.Sharpness, eff.AttnSharpness = 2.5, 3 // exercise math.Pow
			r, err := NewRoofline(m, tinyHW, eff, tp)
			if err != nil {
				t.Fatal(err)
			}
			preds[name+string(rune('0'+tp))] = r
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		r := preds[rapid.SampledFrom([]string{"dense1", "dense2", "moe1", "moe2"}).Draw(t, "pred")]
		b := Batch{
			PrefillTokens: rapid.IntRange(0, 2*opCacheLimit).Draw(t, "pc"),
			NumDecode:     rapid.IntRange(0, 300).Draw(t, "n"),
		}
		if b.PrefillTokens > 0 {
			b.PrefillSeqs = rapid.IntRange(1, min(b.PrefillTokens, 8)).Draw(t, "ps")
			b.PrefillKV = rapid.IntRange(0, 10000).Draw(t, "kp")
		}
		if b.NumDecode > 0 {
			b.DecodeKVMin = rapid.IntRange(1, 4000).Draw(t, "kvmin")
			b.DecodeKVMax = b.DecodeKVMin + rapid.IntRange(0, 4000).Draw(t, "spread")
			b.DecodeKVSum = int64(b.DecodeKVMin+b.DecodeKVMax) * int64(b.NumDecode) / 2
		}
		want := uncachedStep(r, &b)
		for rep := 0; rep < 2; rep++ {
			if got := r.StepTime(&b); got != want {
				t.Fatalf("call %d: cached step time %d ns, uncached %d ns for %+v", rep, got, want, b)
			}
		}
	})
}

// TestRooflineCacheConcurrent: goroutines sharing one predictor fill and
// read the cache at once and all get the uncached times (run with -race).
func TestRooflineCacheConcurrent(t *testing.T) {
	r, err := NewRoofline(tinyModel, tinyHW, tinyEff, 1)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1; n <= 300; n++ {
				b := Batch{NumDecode: n, DecodeKVSum: int64(n) * 500, DecodeKVMin: 500, DecodeKVMax: 500}
				if got, want := r.StepTime(&b), uncachedStep(r, &b); got != want {
					errs <- "mismatch"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// TestSplitsCacheIsExact: the memoised split-KV heuristic returns what
// the heuristic computes, on first use, on reuse, after other keys have
// evicted the entry (the table is direct-mapped), and for inputs it does
// not cache (fractions, out of range).
func TestSplitsCacheIsExact(t *testing.T) {
	var preds []*Roofline
	for _, units := range []int{38, 100, 188} {
		eff := tinyEff
		eff.AttnUnits = units
		r, err := NewRoofline(tinyModel, tinyHW, eff, 1)
		if err != nil {
			t.Fatal(err)
		}
		preds = append(preds, r)
	}
	rapid.Check(t, func(t *rapid.T) {
		r := preds[rapid.IntRange(0, len(preds)-1).Draw(t, "pred")]
		u := float64(rapid.IntRange(0, 400).Draw(t, "u"))
		nb := float64(rapid.IntRange(0, 20000).Draw(t, "blocks"))
		if rapid.IntRange(0, 9).Draw(t, "frac") == 0 {
			u += 0.5
		}
		want := r.splits(u, nb)
		for rep := 0; rep < 2; rep++ {
			if got := r.cachedSplits(u, nb); got != want {
				t.Fatalf("call %d: cachedSplits(%g, %g) = %g, splits %g", rep, u, nb, got, want)
			}
		}
		// Evict: fill the table with other keys, then ask again.
		for k := 1.0; k <= 64; k++ {
			r.cachedSplits(k, nb+k)
		}
		if got := r.cachedSplits(u, nb); got != want {
			t.Fatalf("after eviction: cachedSplits(%g, %g) = %g, splits %g", u, nb, got, want)
		}
	})
	if got, want := preds[0].cachedSplits(1<<21, 4), preds[0].splits(1<<21, 4); got != want {
		t.Errorf("out of range: %g, want %g", got, want)
	}
}

// TestRooflineRowsAreExact: StepTime from whole cached rows (prefix sum of
// the leading token ops, then op by op) equals the op-by-op sum of OpNs
// bit for bit with CUDA-graph padding, speculative rows and a given MoE
// time, on first use and reuse, and above the cache limit; and the op-wise
// cache that StepTimeWithout reads agrees with it whichever fills first.
func TestRooflineRowsAreExact(t *testing.T) {
	moe := tinyModel
	moe.Experts, moe.ExpertsPerTok, moe.MoEIntermediate = 8, 2, 1024
	eff := tinyEff
	eff.Sharpness, eff.AttnSharpness = 2.5, 3
	rapid.Check(t, func(t *rapid.T) {
		m := tinyModel
		if rapid.Bool().Draw(t, "moe") {
			m = moe
		}
		r, err := NewRoofline(m, tinyHW, eff, rapid.IntRange(1, 2).Draw(t, "tp"))
		if err != nil {
			t.Fatal(err)
		}
		// reference: the op-by-op sum, MoENs replacing the MoE op.
		ref := func(b *Batch) int64 {
			if b.Tokens() <= 0 && b.Seqs() <= 0 && b.PadTokens <= 0 {
				return 0
			}
			var s float64
			for _, u := range r.Ops() {
				if u.Op == OpMoE && b.MoENs > 0 {
					s += float64(b.MoENs)
					continue
				}
				s += u.Count * r.OpNs(u.Op, b)
			}
			return clampNs(s)
		}
		for range 20 {
			b := Batch{
				PrefillTokens: rapid.IntRange(0, opCacheLimit+100).Draw(t, "pc"),
				NumDecode:     rapid.IntRange(0, 300).Draw(t, "n"),
				PadTokens:     rapid.IntRange(0, 64).Draw(t, "pad"),
			}
			if b.PrefillTokens > 0 {
				b.PrefillSeqs = rapid.IntRange(1, min(b.PrefillTokens, 8)).Draw(t, "ps")
			}
			if b.NumDecode > 0 {
				b.SpecTokens = rapid.IntRange(0, 3).Draw(t, "spec") * b.NumDecode
				b.DecodeKVMin = rapid.IntRange(1, 4000).Draw(t, "kvmin")
				b.DecodeKVMax = b.DecodeKVMin + rapid.IntRange(0, 4000).Draw(t, "spread")
				b.DecodeKVSum = int64(b.DecodeKVMin+b.DecodeKVMax) * int64(b.NumDecode) / 2
			}
			if m.Experts > 0 && rapid.Bool().Draw(t, "moeNs") {
				b.MoENs = int64(rapid.IntRange(1, 1e6).Draw(t, "moens"))
			}
			want := ref(&b)
			if rapid.Bool().Draw(t, "withoutFirst") {
				r.StepTimeWithout(&b, OpAttention) // fills single entries first
			}
			for rep := range 2 {
				if got := r.StepTime(&b); got != want {
					t.Fatalf("call %d: StepTime %d ns, op by op %d ns for %+v", rep, got, want, b)
				}
			}
		}
	})
}
