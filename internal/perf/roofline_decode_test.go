package perf

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// randomRoofline draws a roofline predictor, dense (the plain program of
// plainNs) or MoE, whose pure-decode attention takes every branch of
// decodeUniform: with or without attention units
// (fixed, per SM, per SM for decodes), packed or swapped GQA, query heads
// that do or do not fill a tile, a KV cache larger than the attention
// cache, a decode unit cost, skew, and fractional sharpnesses (powNear's
// Exp and Log).
func randomRoofline(t *rapid.T) *Roofline {
	tp := rapid.SampledFrom([]int{1, 2, 4}).Draw(t, "tp")
	kvHeads := rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(t, "kvHeads")
	m := tinyModel
	m.KVHeads = kvHeads
	m.Heads = kvHeads * rapid.SampledFrom([]int{1, 4, 8, 16}).Draw(t, "gqa")
	for m.Heads%tp != 0 {
		m.Heads *= 2
	}
	m.Hidden = m.Heads * m.HeadDim
	switch rapid.IntRange(0, 3).Draw(t, "shape") {
	case 1: // an MoE model: not the plain program
		m.Experts, m.ExpertsPerTok, m.MoEIntermediate = 8, 2, 1024
	case 2:
		m.QKNorm = true
	}
	hw := tinyHW
	hw.PackGQA = rapid.Bool().Draw(t, "packGQA")
	hw.SwapGQADecode = rapid.Bool().Draw(t, "swapGQA")
	eff := tinyEff
	eff.AttnSharpness = rapid.Float64Range(1, 12).Draw(t, "attnSharpness")
	eff.AttnDecodeSkew = rapid.SampledFrom([]float64{0, 0.3, 0.77}).Draw(t, "decodeSkew")
	eff.AttnDecodeUnitNs = rapid.SampledFrom([]float64{0, 250}).Draw(t, "decodeUnitNs")
	eff.AttnDecodeCopyNs = rapid.SampledFrom([]float64{0, 1500}).Draw(t, "copyNs")
	eff.AttnCacheBytes = rapid.SampledFrom([]float64{1e9, 1e5}).Draw(t, "attnCache")
	eff.AttnTileQ = rapid.SampledFrom([]int{16, 64, 128}).Draw(t, "tileQ")
	switch rapid.IntRange(0, 2).Draw(t, "units") {
	case 1:
		eff.AttnUnits = rapid.IntRange(1, 400).Draw(t, "attnUnits")
	case 2:
		hw.SMs = rapid.IntRange(20, 170).Draw(t, "sms")
		eff.AttnUnitsPerSM = rapid.IntRange(1, 4).Draw(t, "perSM")
		eff.AttnDecodeUnitsPerSM = rapid.IntRange(0, 4).Draw(t, "decPerSM")
	}
	r, err := NewRoofline(m, hw, eff, tp)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDecodeAttentionIsExact: the pure-decode attention (decodeAttention,
// with the per-run split memo and without) is the general attention model
// bit for bit, and so are the step times of the Roofline and of its
// per-run copy (plainNs for a plain program) against the step summed op
// by op from OpNs, and plainNs's sum against stepNs's, over decode
// runs as an engine makes them (contexts a token longer every step,
// members joining and leaving) next to the mixed and speculative steps
// that take the general path.
func TestDecodeAttentionIsExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := randomRoofline(t)
		x, ok := r.ForRun(nil).(*rooflineRun)
		if !ok {
			t.Fatalf("ForRun gave %T, want the per-run copy", r.ForRun(nil))
		}
		if want := r.m.Experts == 0; r.plain != want {
			t.Fatalf("plain program %v for %d experts (ops %v)", r.plain, r.m.Experts, r.ops)
		}
		n := rapid.IntRange(1, 600).Draw(t, "n")
		lo := rapid.IntRange(0, 40000).Draw(t, "min")
		hi := lo + rapid.IntRange(0, 40000).Draw(t, "spread")
		mean := rapid.IntRange(lo, hi).Draw(t, "mean")
		for range 50 {
			b := Batch{NumDecode: n, DecodeKVMin: lo, DecodeKVMax: hi,
				DecodeKVSum: int64(mean)*int64(n) + int64(rapid.IntRange(0, n-1).Draw(t, "rem"))}
			if n == 1 {
				b.DecodeKVMin, b.DecodeKVMax, b.DecodeKVSum = hi, hi, int64(hi)
			}
			switch rapid.IntRange(0, 9).Draw(t, "other") {
			case 0:
				b.PrefillTokens, b.PrefillSeqs = rapid.IntRange(1, 3000).Draw(t, "pc"), 1
				b.PrefillKV = rapid.IntRange(0, 5000).Draw(t, "kp")
			case 1:
				b.SpecTokens = rapid.IntRange(1, 3*n).Draw(t, "spec")
			case 2:
				b.PadTokens = rapid.IntRange(1, 30).Draw(t, "pad")
			}
			want := r.attention(&b)
			if b.PrefillTokens == 0 && b.SpecTokens == 0 {
				for _, got := range []float64{r.decodeAttention(&b, nil), r.decodeAttention(&b, x)} {
					if math.Float64bits(got) != math.Float64bits(want) {
						t.Fatalf("%+v: decode attention %v ns, general %v ns", b, got, want)
					}
				}
			}
			if r.plain {
				want, _ := r.stepNs(&b, nil)
				if got := x.plainNs(&b, countsOf(&b)); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("%+v: plainNs %v ns, stepNs %v ns", b, got, want)
				}
			}
			step := uncachedStep(r, &b)
			if got := x.StepTime(&b); got != step {
				t.Fatalf("%+v: per-run step %d ns, op by op %d ns", b, got, step)
			}
			if got := r.StepTime(&b); got != step {
				t.Fatalf("%+v: step %d ns, op by op %d ns", b, got, step)
			}
			lo, hi, mean = lo+1, hi+1, mean+1
			switch rapid.IntRange(0, 15).Draw(t, "change") {
			case 0:
				n = max(1, n-1)
			case 1:
				n++
			case 2:
				lo = 0
			}
			mean = max(lo, min(mean, hi))
		}
	})
}
