package perf

import (
	"math"
	"testing"
)

// TestRooflineQuantOpsByHand checks quantised linear layers and an fp8 KV
// cache against hand computations on tinyModel (see TestRooflineOpsByHand
// for the unquantised figures: sharpness 1 sums compute and memory time).
func TestRooflineQuantOpsByHand(t *testing.T) {
	fp8 := tinyModel
	fp8.WeightBytes = 1
	fp8HW := tinyHW
	fp8HW.QuantPeakFLOPS = 2e14 // twice the bf16 rate
	awq := tinyModel
	awq.WeightBytes = 0.5 + 2.5/128 // 4-bit values, fp16 scale and 4-bit zero per 128
	kv8 := tinyModel
	kv8.KVBytesPerElem = 1
	prefill := Batch{PrefillTokens: 100, PrefillSeqs: 1}
	for _, c := range []struct {
		name string
		m    RooflineModel
		hw   RooflineHW
		op   string
		b    Batch
		want float64 // ns
	}{
		// qkv_proj, 100 tokens, N = 1536. fp8 W8A8: FLOPs 314572800 at
		// 2e14*0.5 -> 3145.728; bytes 1024*1536*1 + (100*1024+100*1536)*2 =
		// 2084864 at 5e11 -> 4169.728.
		{"qkv fp8", fp8, fp8HW, OpQKVProj, prefill, 1000 + 3145.728 + 4169.728},
		// awq int4 weight-only: FLOPs at the bf16 rate 5e13 -> 6291.456 (as
		// unquantised); bytes 1572864*0.51953125 + 512000 = 1329152 -> 2658.304.
		{"qkv awq", awq, tinyHW, OpQKVProj, prefill, 1000 + 6291.456 + 2658.304},
		// lm_head stays in bf16 at the bf16 rate: the unquantised figure.
		{"lm_head fp8", fp8, fp8HW, OpLMHead, Batch{PrefillTokens: 50, PrefillSeqs: 1, NumDecode: 2, DecodeKVSum: 20}, 1000 + 3932.16 + 131468.288},
		// embedding: 2*100*1024*2 bytes gathered and written, unquantised:
		// 409600 B at 5e11 -> 819.2.
		{"embedding fp8", fp8, fp8HW, OpEmbedding, prefill, 1000 + 819.2},
		// Pure decode attention with an fp8 cache: compute as in bf16
		// (6042.88); memory 4000 tokens x 512 B of KV + 4 x (2*8*128*2 +
		// 512) B of q/o/new KV = 2066432 B at 5e11 -> 4132.864.
		{"decode kv fp8", kv8, tinyHW, OpAttention, Batch{NumDecode: 4, DecodeKVSum: 4000, DecodeKVMax: 1000, DecodeKVMin: 1000}, 2000 + 6042.88 + 4132.864},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewRoofline(c.m, c.hw, tinyEff, 1)
			if err != nil {
				t.Fatal(err)
			}
			nearNs(t, c.op, r.OpNs(c.op, &c.b), c.want)
		})
	}
}

// llama8B is Llama-3.1-8B's shape (HuggingFace config.json).
var llama8B = RooflineModel{Layers: 32, Hidden: 4096, Intermediate: 14336, Heads: 32, KVHeads: 8,
	HeadDim: 128, Vocab: 128256, BytesPerElem: 2}

// TestRooflineFP8HalvesDecodeWeightBytes: FP8 weights on H100 halve the
// weight bytes a decode step reads in every transformer layer, while the
// embedding rows and lm_head stay bf16. Hand computation for Llama-3.1-8B
// at tp 1, per layer in bf16: qkv 4096*6144*2 = 50331648, o 4096*4096*2 =
// 33554432, gate_up 4096*28672*2 = 234881024, down 14336*4096*2 =
// 117440512: 436207616 B; in fp8 218103808 B. lm_head 4096*128256*2 =
// 1050673152 B, embedding 8 rows of 4096*2 for 8 decodes = 65536 B.
func TestRooflineFP8HalvesDecodeWeightBytes(t *testing.T) {
	h100 := RooflineHW{PeakFLOPS: 989.5e12, MemBandwidth: 3350e9}
	fp8HW := h100
	fp8HW.QuantPeakFLOPS = 1979e12
	fp8 := llama8B
	fp8.WeightBytes = 1
	bf, err := NewRoofline(llama8B, h100, DefaultEfficiency, 1)
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewRoofline(fp8, fp8HW, DefaultEfficiency, 1)
	if err != nil {
		t.Fatal(err)
	}
	const T = 8 // decoding sequences
	perLayer := func(r *Roofline) float64 {
		return r.WeightBytesRead(OpQKVProj, T) + r.WeightBytesRead(OpOProj, T) +
			r.WeightBytesRead(OpGateUpProj, T) + r.WeightBytesRead(OpDownProj, T)
	}
	if got := perLayer(bf); got != 436207616 {
		t.Errorf("bf16 weight bytes per layer = %.0f, want 436207616", got)
	}
	if got := perLayer(q); got != 218103808 {
		t.Errorf("fp8 weight bytes per layer = %.0f, want 218103808 (half)", got)
	}
	for _, op := range []string{OpQKVProj, OpOProj, OpGateUpProj, OpDownProj} {
		if a, b := bf.WeightBytesRead(op, T), q.WeightBytesRead(op, T); a != 2*b {
			t.Errorf("%s: bf16 %.0f B, fp8 %.0f B: want exactly half", op, a, b)
		}
	}
	for op, want := range map[string]float64{OpLMHead: 1050673152, OpEmbedding: 65536} {
		if a, b := bf.WeightBytesRead(op, T), q.WeightBytesRead(op, T); a != want || b != want {
			t.Errorf("%s: bf16 %.0f B, fp8 %.0f B; want both %.0f (kept in bf16)", op, a, b, want)
		}
	}
	// The whole step: 32 layers + lm_head + embedding.
	step := func(r *Roofline) float64 {
		var s float64
		for _, u := range r.Ops() {
			s += u.Count * r.WeightBytesRead(u.Op, T)
		}
		return s
	}
	if got, want := step(q), 32*218103808.0+1050673152+65536; got != want {
		t.Errorf("fp8 step weight bytes %.0f, want %.0f", got, want)
	}
	// And the time follows: a decode step's linear layers are memory-bound,
	// so their time drops by nearly half (launch costs and activations
	// do not shrink).
	b := Batch{NumDecode: T, DecodeKVSum: T * 1000, DecodeKVMax: 1000, DecodeKVMin: 1000}
	for _, op := range []string{OpGateUpProj, OpDownProj} {
		ratio := q.OpNs(op, &b) / bf.OpNs(op, &b)
		if ratio < 0.5 || ratio > 0.55 {
			t.Errorf("%s decode time fp8/bf16 = %.3f, want in [0.5, 0.55]", op, ratio)
		}
	}
}

// TestRooflineInt4KeepsGEMMRate: weight-only int4 reads about a quarter
// of the bf16 weight bytes but runs its GEMMs at the bf16 rate, so a large
// compute-bound prefill costs what it costs in bf16, unlike fp8 W8A8.
func TestRooflineInt4KeepsGEMMRate(t *testing.T) {
	h100 := RooflineHW{PeakFLOPS: 989.5e12, MemBandwidth: 3350e9}
	int4 := llama8B
	int4.WeightBytes = 0.5 + 2.5/128
	fp8HW := h100
	fp8HW.QuantPeakFLOPS = 1979e12
	fp8 := llama8B
	fp8.WeightBytes = 1
	hard := DefaultEfficiency
	hard.Sharpness = 1000 // the textbook max(compute, memory)
	mk := func(m RooflineModel, hw RooflineHW) *Roofline {
		r, err := NewRoofline(m, hw, hard, 1)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	bf, i4, f8 := mk(llama8B, h100), mk(int4, h100), mk(fp8, fp8HW)
	if r := i4.WeightBytesRead(OpGateUpProj, 1) / bf.WeightBytesRead(OpGateUpProj, 1); math.Abs(r-0.51953125/2) > 1e-12 {
		t.Errorf("int4/bf16 weight bytes = %v, want 0.259765625", r)
	}
	big := Batch{PrefillTokens: 8192, PrefillSeqs: 1}
	// compute time 2*8192*4096*28672 / (989.5e12*0.8) ns dominates.
	tc := 2 * 8192 * 4096 * 28672.0 / (989.5e12 * 0.8) * 1e9
	for _, c := range []struct {
		name string
		r    *Roofline
		want float64
	}{{"bf16", bf, tc}, {"int4", i4, tc}, {"fp8", f8, tc / 2}} {
		got := c.r.OpNs(OpGateUpProj, &big) - DefaultEfficiency.LaunchNs
		if math.Abs(got-c.want)/c.want > 0.01 {
			t.Errorf("%s gate_up at 8192 tokens = %.0f ns, want %.0f (compute-bound)", c.name, got, c.want)
		}
	}
	dec := Batch{NumDecode: 1, DecodeKVSum: 100, DecodeKVMax: 100, DecodeKVMin: 100}
	if a, b := i4.OpNs(OpGateUpProj, &dec), bf.OpNs(OpGateUpProj, &dec); a >= 0.3*b {
		t.Errorf("int4 decode gate_up %.0f ns vs bf16 %.0f: want under 0.3x (bytes-bound)", a, b)
	}
}

// TestRooflineQuantOffIsIdentical: WeightBytes and KVBytesPerElem equal to
// BytesPerElem, and no quantised peak, give the unquantised predictor bit
// for bit.
func TestRooflineQuantOffIsIdentical(t *testing.T) {
	same := llama8B
	same.WeightBytes, same.KVBytesPerElem = 2, 2
	hw := RooflineHW{PeakFLOPS: 989.5e12, MemBandwidth: 3350e9}
	a, _ := NewRoofline(llama8B, hw, DefaultEfficiency, 2)
	b, _ := NewRoofline(same, hw, DefaultEfficiency, 2)
	for _, batch := range []Batch{{PrefillTokens: 777, PrefillKV: 300, PrefillSeqs: 2, NumDecode: 30, DecodeKVSum: 30000, DecodeKVMax: 2000, DecodeKVMin: 10}, {NumDecode: 3, DecodeKVSum: 30, DecodeKVMax: 10, DecodeKVMin: 10}} {
		if x, y := a.StepTime(&batch), b.StepTime(&batch); x != y {
			t.Errorf("%+v: %d vs %d ns", batch, x, y)
		}
	}
}

// TestRooflineFP8TermsByHand: an fp8 W8A8 layer (QuantFP8) runs at
// FP8Compute of the FP8 rate, pays the activation quantisation kernel and
// blends with FP8Sharpness; without QuantFP8 (or with the terms at 0) it is
// timed as before.
func TestRooflineFP8TermsByHand(t *testing.T) {
	fp8 := tinyModel
	fp8.WeightBytes = 1
	hw := tinyHW
	hw.QuantPeakFLOPS = 2e14
	eff := tinyEff
	eff.FP8Compute, eff.FP8QuantNs, eff.FP8Sharpness = 0.25, 500, 1
	prefill := Batch{PrefillTokens: 100, PrefillSeqs: 1}
	for _, c := range []struct {
		name string
		fp8  bool
		eff  Efficiency
		want float64
	}{
		// FLOPs 314572800 at 2e14*0.25 -> 6291.456; bytes 2084864 at 5e11
		// -> 4169.728 (sharpness 1 sums them); 1000 launch + 500 quantise.
		{"fp8 terms", true, eff, 1000 + 500 + 6291.456 + 4169.728},
		// Not flagged W8A8 per-tensor: the fp8 terms do not apply.
		{"not QuantFP8", false, eff, 1000 + 3145.728 + 4169.728},
		// Flagged, terms unset: Compute (0.5) and no quantisation kernel.
		{"terms unset", true, tinyEff, 1000 + 3145.728 + 4169.728},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := hw
			h.QuantFP8 = c.fp8
			r, err := NewRoofline(fp8, h, c.eff, 1)
			if err != nil {
				t.Fatal(err)
			}
			nearNs(t, OpQKVProj, r.OpNs(OpQKVProj, &prefill), c.want)
		})
	}
}

// TestFP8WavesByHand checks the tile waves of fp8 W8A8 GEMMs on a
// persistent SM90 scaled-mm: 4 SMs, an FP8 rate of 2e14 FLOP/s at
// FP8Compute 0.5, so one SM computes 2.5e13 FLOP/s. K = 1024, N = 256
// (two 128-wide column tiles):
//   - M = 256: one cluster of two 128-row tiles per column tile, 4 CTAs,
//     one wave of 2·128·128·1024 FLOPs = 1342.177 ns;
//   - M = 257: two clusters, 8 CTAs, two waves: 2684.355 ns (the ideal
//     time is 1347.4 ns);
//   - M = 100: clusters of two 64-row tiles, 4 CTAs, one wave of
//     2·64·128·1024 FLOPs = 671.089 ns;
//   - M = 64: the operands are swapped into narrow tiles: the ideal time.
func TestFP8WavesByHand(t *testing.T) {
	h := tinyHW
	h.SMs, h.ScaledMM, h.QuantFP8, h.QuantPeakFLOPS = 4, ScaledMMSM90, true, 2e14
	m := tinyModel
	m.WeightBytes = 1
	eff := tinyEff
	eff.FP8Compute, eff.FP8Waves = 0.5, true
	r, err := NewRoofline(m, h, eff, 1)
	if err != nil {
		t.Fatal(err)
	}
	tile := 2 * 128 * 128 * 1024 / 2.5e13 * 1e9
	for _, c := range []struct {
		m    float64
		want float64
	}{{256, tile}, {257, 2 * tile}, {100, tile / 2}, {64, 12345}} {
		nearNs(t, "fp8 waves", r.fp8Waves(c.m, 1024, 256, 12345), c.want)
	}
	// Off, or on another kernel family, the compute time is the ideal.
	eff.FP8Waves = false
	r0, _ := NewRoofline(m, h, eff, 1)
	eff.FP8Waves = true
	h.ScaledMM = ScaledMMOther
	r1, _ := NewRoofline(m, h, eff, 1)
	if a, b := r0.LinearNs(257, 1024, 256), r1.LinearNs(257, 1024, 256); a != b {
		t.Errorf("without waves %g, other kernel %g: want equal", a, b)
	}
	if r.LinearNs(257, 1024, 256) <= r0.LinearNs(257, 1024, 256) {
		t.Error("a GEMM spilling into a second wave is not slower")
	}
}

// TestFP8WavesSM120ByHand checks the tile waves of vLLM's SM120
// scaled-mm (one 128×128 tile configuration for every M, no clusters): 4
// SMs at 2.5e13 FLOP/s each (as above), K = 1024, N = 256 (two column
// tiles), one tile 2·128·128·1024 FLOPs = 1342.177 ns:
//   - M = 1 and M = 128: one row tile, 2 CTAs, one wave (the narrow
//     GEMM still computes whole 128-row tiles);
//   - M = 256: 4 CTAs, one wave;
//   - M = 257: 6 CTAs, two waves;
//   - M = 513: 10 CTAs, three waves.
func TestFP8WavesSM120ByHand(t *testing.T) {
	h := tinyHW
	h.SMs, h.ScaledMM, h.QuantFP8, h.QuantPeakFLOPS = 4, ScaledMMSM120, true, 2e14
	m := tinyModel
	m.WeightBytes = 1
	eff := tinyEff
	eff.FP8Compute, eff.FP8Waves = 0.5, true
	r, err := NewRoofline(m, h, eff, 1)
	if err != nil {
		t.Fatal(err)
	}
	tile := 2 * 128 * 128 * 1024 / 2.5e13 * 1e9
	for _, c := range []struct {
		m    float64
		want float64
	}{{1, tile}, {128, tile}, {256, tile}, {257, 2 * tile}, {513, 3 * tile}} {
		nearNs(t, "fp8 waves", r.fp8Waves(c.m, 1024, 256, 12345), c.want)
	}
}

// TestFP8QuantPerElemByHand checks the activation quantisation kernel's
// cost per element: 2 ps per element of an M×K = 100×1024 input adds
// 204.8 ns to the fp8 linear layer, and nothing to a bf16 one.
func TestFP8QuantPerElemByHand(t *testing.T) {
	h := tinyHW
	h.QuantFP8, h.QuantPeakFLOPS = true, 2e14
	m := tinyModel
	m.WeightBytes = 1
	eff := tinyEff
	r0, err := NewRoofline(m, h, eff, 1)
	if err != nil {
		t.Fatal(err)
	}
	eff.FP8QuantPsPerElem = 2
	r1, _ := NewRoofline(m, h, eff, 1)
	nearNs(t, "per-element quantisation", r1.LinearNs(100, 1024, 512)-r0.LinearNs(100, 1024, 512), 204.8)
	b0, _ := NewRoofline(tinyModel, tinyHW, tinyEff, 1)
	b1, _ := NewRoofline(tinyModel, tinyHW, eff, 1)
	nearNs(t, "bf16 unaffected", b1.LinearNs(100, 1024, 512), b0.LinearNs(100, 1024, 512))
}

// TestScaledGEMMTermsByHand checks the GEMM terms of a block-scaled
// format on qkv_proj of tinyModel at 100 tokens (K 1024, N 1536): NVFP4
// weights (0.5625 B) at an FP4 rate of 4e14 FLOP/s.
func TestScaledGEMMTermsByHand(t *testing.T) {
	fp4 := tinyModel
	fp4.WeightBytes = 0.5625
	hw := tinyHW
	hw.QuantPeakFLOPS = 4e14
	terms := ScaledGEMM{Compute: 0.25, Memory: 0.8, QuantNs: 500, QuantPsPerElem: 10, Sharpness: 1}
	withFP4, withBlock := tinyEff, tinyEff
	withFP4.NVFP4, withBlock.FP8Block = terms, terms
	prefill := Batch{PrefillTokens: 100, PrefillSeqs: 1}
	for _, c := range []struct {
		name   string
		scaled ScaledFormat
		eff    Efficiency
		want   float64
	}{
		// FLOPs 314572800 at 4e14·0.25 -> 3145.728 ns; bytes: weights
		// 1024·1536·0.5625 = 884736, activations read at the quantised
		// size 100·1024·0.5625 = 57600, output 100·1536·2 = 307200, in
		// all 1249536 at 1e12·0.8 -> 1561.92 ns (sharpness 1 sums);
		// launch 1000, quantisation 500 + 102400 elements · 10 ps.
		{"nvfp4 terms", ScaledNVFP4, withFP4, 1000 + 500 + 1024 + 3145.728 + 1561.92},
		// Terms of another format: the bf16 terms at the FP4 rate
		// (Compute 0.5 -> 1572.864 ns), activations in bf16 (bytes
		// 884736 + 512000 at 5e11 -> 2793.472 ns), no quantisation.
		{"other format's terms", ScaledNVFP4, withBlock, 1000 + 1572.864 + 2793.472},
		{"not scaled", ScaledNone, withFP4, 1000 + 1572.864 + 2793.472},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := hw
			h.Scaled = c.scaled
			r, err := NewRoofline(fp4, h, c.eff, 1)
			if err != nil {
				t.Fatal(err)
			}
			nearNs(t, OpQKVProj, r.OpNs(OpQKVProj, &prefill), c.want)
		})
	}
}

// TestFP8BlockWavesByHand: block-scaled fp8 on the SM90 tiles of
// TestFP8WavesByHand (4 SMs, FP8 rate 2e14 at the block terms' Compute
// 0.5, K 1024, N 256) counts whole waves too, at M 257: 8 CTAs, two waves
// of 2·128·128·1024 FLOPs at 2.5e13 FLOP/s each, 2684.355 ns; without
// FP8Waves the ideal 2·257·1024·256/1e14 s = 1347.420 ns.
func TestFP8BlockWavesByHand(t *testing.T) {
	m := tinyModel
	m.WeightBytes = 1
	hw := tinyHW
	hw.QuantPeakFLOPS, hw.Scaled, hw.SMs, hw.ScaledMM = 2e14, ScaledFP8Block, 4, ScaledMMSM90
	eff := tinyEff
	// Memory fraction tiny so that compute dominates; sharpness 50 keeps
	// the blend at the larger term.
	eff.FP8Block = ScaledGEMM{Compute: 0.5, Memory: 1.5, Sharpness: 50}
	for _, c := range []struct {
		waves bool
		want  float64
	}{{true, 2 * 2 * 128 * 128 * 1024 / 2.5e13 * 1e9}, {false, 2 * 257 * 1024 * 256 / 1e14 * 1e9}} {
		e := eff
		e.FP8Waves = c.waves
		r, err := NewRoofline(m, hw, e, 1)
		if err != nil {
			t.Fatal(err)
		}
		// bytes 1024·256 + 257·1024 + 257·256·2 = 656,896 at 1.5e12 B/s = 437.9 ns,
		// under the compute time; subtract the 1000 ns launch.
		got := r.LinearNs(257, 1024, 256) - 1000
		if math.Abs(got-c.want)/c.want > 0.001 {
			t.Errorf("FP8Waves %v: %.3f ns, want %.3f", c.waves, got, c.want)
		}
	}
}
