package perf

import (
	"math"
	"testing"
)

// deepSeekV3 is DeepSeek-V3's shape (config.json): MLA with q_lora_rank
// 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v 128; 3 dense layers of
// 18432, 58 MoE layers of 256 experts (top 8) of 2048 and one shared one.
var deepSeekV3 = RooflineModel{
	Layers: 61, Hidden: 7168, Intermediate: 18432, Heads: 128, KVHeads: 128, HeadDim: 192, Vocab: 129280,
	Experts: 256, ExpertsPerTok: 8, MoEIntermediate: 2048, SharedIntermediate: 2048, BytesPerElem: 2,
	RooflineFrontier: RooflineFrontier{QLoraRank: 1536, KVLoraRank: 512, QKNopeHeadDim: 128, QKRopeHeadDim: 64, VHeadDim: 128, DenseLayers: 3},
}

// MLA's work by hand, tp 1, bf16 (see MLACost).
//
// One decode of 1,000 tokens of context (absorbed form): W_UK and W_UV are
// 128 heads x 128 x 512 each: 2 x 2·128·128·512 = 33,554,432 FLOPs; their
// weights 2 x 128·128·512 x 2 B = 33,554,432 B plus the rows' activations
// 128 x (128 + 2·512 + 128) x 2 B = 327,680 B. Attention: every head scores
// 576-wide latent keys and sums 512-wide latent values, 1,000 x 128 x
// (2·576 + 2·512) = 278,528,000 FLOPs, reading the latent cache once
// (1,000 x 576 x 2 B = 1,152,000 B) and the query/output rows 128 x
// (512 + 64 + 512) x 2 B = 278,528 B.
//
// A prefill of 1,000 tokens without history (expanded form): kv_b_proj
// expands 1,000 latents to 128 heads x (128 + 128): 2·1000·512·32768 =
// 33,554,432,000 FLOPs over 33,554,432 B of weights, 1,152,000 B of latents
// and 65,536,000 B of keys and values written; the causal attention visits
// 1000·1001/2 = 500,500 positions per head at 2·192 + 2·128 = 640 FLOPs:
// 41,000,960,000 FLOPs, reading keys and values 1,000 x 128 x 320 x 2 B and
// moving queries and outputs as much again (163,840,000 B).
func TestMLACostByHand(t *testing.T) {
	r, err := NewRoofline(deepSeekV3, tinyHW, Efficiency{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	dec := r.MLACostOf(&Batch{NumDecode: 1, DecodeKVSum: 1000, DecodeKVMax: 1000, DecodeKVMin: 1000})
	want := MLACost{ProjFlops: 33_554_432, ProjBytes: 33_554_432 + 327_680, AttnFlops: 278_528_000, AttnBytes: 1_152_000 + 278_528}
	if dec != want {
		t.Errorf("decode: %+v, want %+v", dec, want)
	}
	pre := r.MLACostOf(&Batch{PrefillTokens: 1000, PrefillSeqs: 1})
	want = MLACost{ProjFlops: 33_554_432_000, ProjBytes: 33_554_432 + 1_152_000 + 65_536_000, AttnFlops: 41_000_960_000, AttnBytes: 163_840_000}
	if pre != want {
		t.Errorf("prefill: %+v, want %+v", pre, want)
	}
	// An fp8 KV cache halves the latent read: 1,000 x 576 x 1 B.
	m := deepSeekV3
	m.KVBytesPerElem = 1
	r8, err := NewRoofline(m, tinyHW, Efficiency{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := r8.MLACostOf(&Batch{NumDecode: 1, DecodeKVSum: 1000}).AttnBytes; got != 576_000+278_528 {
		t.Errorf("fp8 decode AttnBytes = %g, want %d", got, 576_000+278_528)
	}
	// Tensor parallelism splits the heads, not the latent: at tp 8 the
	// decode reads the same 1,152,000 B of latent for 16 heads.
	r8tp, err := NewRoofline(deepSeekV3, tinyHW, Efficiency{}, 8)
	if err != nil {
		t.Fatal(err)
	}
	if got := r8tp.MLACostOf(&Batch{NumDecode: 1, DecodeKVSum: 1000}).AttnBytes; got != 1_152_000+16*1088*2 {
		t.Errorf("tp 8 decode AttnBytes = %g, want %d", got, 1_152_000+16*1088*2)
	}
	// The attention op is the MLA model: more context costs more, an empty
	// batch nothing.
	short := r.OpNs(OpAttention, &Batch{NumDecode: 64, DecodeKVSum: 64 * 1000})
	long := r.OpNs(OpAttention, &Batch{NumDecode: 64, DecodeKVSum: 64 * 8000})
	if !(long > short && short > 0) || r.OpNs(OpAttention, &Batch{}) != 0 {
		t.Errorf("MLA attention: 1k %g ns, 8k %g ns", short, long)
	}
}

// The op list of an MoE model with dense layers: the MoE block on 58
// layers, the dense MLP on 3.
func TestFrontierOps(t *testing.T) {
	r, err := NewRoofline(deepSeekV3, tinyHW, Efficiency{}, 8)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, u := range r.Ops() {
		got[u.Op] = u.Count
	}
	want := map[string]float64{OpMoE: 58, OpGateUpProj: 3, OpDownProj: 3, OpAttention: 61, OpQKVProj: 61, OpLayernorm: 122}
	for op, n := range want {
		if got[op] != n {
			t.Errorf("%s x %g, want %g", op, got[op], n)
		}
	}
	if _, ok := got[OpAttentionLocal]; ok {
		t.Error("DeepSeek-V3 has no local layers")
	}
}

// gptOSS is gpt-oss-120b's shape: 36 layers, 18 of them sliding over 128
// tokens, 64 query and 8 KV heads of 64.
var gptOSS = RooflineModel{
	Layers: 36, Hidden: 2880, Intermediate: 2880, Heads: 64, KVHeads: 8, HeadDim: 64, Vocab: 201088,
	Experts: 128, ExpertsPerTok: 4, MoEIntermediate: 2880, BytesPerElem: 2,
	RooflineFrontier: RooflineFrontier{LocalLayers: 18, LocalWindow: 128},
}

// A sliding-window layer at context k attends to min(k, W) tokens: its
// time is the full-attention time at the clipped contexts.
func TestSlidingAttentionIsFullAtClippedContext(t *testing.T) {
	r, err := NewRoofline(gptOSS, tinyHW, Efficiency{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	full := func(b Batch) float64 { return r.OpNs(OpAttention, &b) }
	local := func(b Batch) float64 { return r.OpNs(OpAttentionLocal, &b) }
	tests := []struct {
		name      string
		b, capped Batch
	}{
		{"decode above the window",
			Batch{NumDecode: 8, DecodeKVSum: 8 * 5000, DecodeKVMax: 5000, DecodeKVMin: 5000},
			Batch{NumDecode: 8, DecodeKVSum: 8 * 128, DecodeKVMax: 128, DecodeKVMin: 128}},
		{"decode below the window",
			Batch{NumDecode: 8, DecodeKVSum: 8 * 100, DecodeKVMax: 100, DecodeKVMin: 100},
			Batch{NumDecode: 8, DecodeKVSum: 8 * 100, DecodeKVMax: 100, DecodeKVMin: 100}},
		{"prefill with long history, chunk below the window",
			Batch{PrefillTokens: 64, PrefillSeqs: 1, PrefillKV: 10000},
			Batch{PrefillTokens: 64, PrefillSeqs: 1, PrefillKV: 128}},
	}
	for _, tt := range tests {
		if got, want := local(tt.b), full(tt.capped); got != want {
			t.Errorf("%s: local %g ns, want full attention at the clipped context %g ns", tt.name, got, want)
		}
	}
	// Sliding layers get cheaper than full ones as the context grows.
	b := Batch{NumDecode: 64, DecodeKVSum: 64 * 32000, DecodeKVMax: 32000, DecodeKVMin: 32000}
	if l, f := local(b), full(b); !(l < f/10) {
		t.Errorf("32k context: local %g ns, full %g ns; want local < full/10", l, f)
	}
	got := map[string]float64{}
	for _, u := range r.Ops() {
		got[u.Op] = u.Count
	}
	if got[OpAttention] != 18 || got[OpAttentionLocal] != 18 {
		t.Errorf("ops: attention x %g, attention_local x %g; want 18 and 18", got[OpAttention], got[OpAttentionLocal])
	}
	// StepTime is the sum of the ops, the local attention included.
	var sum float64
	for _, u := range r.Ops() {
		sum += u.Count * r.OpNs(u.Op, &b)
	}
	if st := r.StepTime(&b); st != clampNs(sum) {
		t.Errorf("StepTime %d, sum of ops %g", st, sum)
	}
}

// A chunked-local layer (Llama 4) sees on average half a chunk once the
// contexts pass one chunk, and the whole context below it.
func TestChunkedAttention(t *testing.T) {
	m := gptOSS
	m.LocalWindow, m.LocalChunked = 8192, true
	r, err := NewRoofline(m, tinyHW, Efficiency{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	long := Batch{NumDecode: 4, DecodeKVSum: 4 * 20000, DecodeKVMax: 20000, DecodeKVMin: 20000}
	half := Batch{NumDecode: 4, DecodeKVSum: 4 * 4096, DecodeKVMax: 4096, DecodeKVMin: 4096}
	if got, want := r.OpNs(OpAttentionLocal, &long), r.OpNs(OpAttention, &half); got != want {
		t.Errorf("20k contexts: chunked %g ns, want full at 4096 %g ns", got, want)
	}
	short := Batch{NumDecode: 4, DecodeKVSum: 4 * 3000, DecodeKVMax: 3000, DecodeKVMin: 3000}
	if got, want := r.OpNs(OpAttentionLocal, &short), r.OpNs(OpAttention, &short); got != want {
		t.Errorf("3k contexts: chunked %g ns, want full %g ns", got, want)
	}
}

func TestFrontierValidation(t *testing.T) {
	bad := []RooflineFrontier{
		{KVLoraRank: 512},
		{DenseLayers: 99},
		{LocalLayers: 4},
		{LocalLayers: 99, LocalWindow: 128},
		{KVLoraRank: -1},
	}
	for _, f := range bad {
		m := gptOSS
		m.RooflineFrontier = f
		if _, err := NewRoofline(m, tinyHW, Efficiency{}, 1); err == nil {
			t.Errorf("%+v: no error", f)
		}
	}
}

func TestFrontierStepTimeAllocationFree(t *testing.T) {
	for _, m := range []RooflineModel{deepSeekV3, gptOSS} {
		r, err := NewRoofline(m, tinyHW, Efficiency{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		b := &Batch{PrefillTokens: 512, PrefillSeqs: 2, PrefillKV: 300, NumDecode: 30, DecodeKVSum: 30 * 900, DecodeKVMax: 2000, DecodeKVMin: 10}
		if n := testing.AllocsPerRun(50, func() { r.StepTime(b) }); n != 0 {
			t.Errorf("StepTime allocates %g times", n)
		}
	}
}

// The measured-kernel predictor on frontier models: MLA attention and
// projections are the roofline's (the tables hold multi-head attention and
// other GEMM shapes) and the attention fallback is counted; a sliding
// model's local layers are the roofline's, its full layers the tables'.
func TestMeasuredFrontierFallbacks(t *testing.T) {
	hw := RooflineHW{PeakFLOPS: 989.5e12, MemBandwidth: 3350e9}
	k := fakeKernels{gemm: 1000, ctx: 5000, gen: 3000, maxM: 1 << 20, maxN: 1 << 20, maxCtx: 1e9}
	dec := Batch{NumDecode: 16, DecodeKVSum: 16 * 4000, DecodeKVMax: 4000, DecodeKVMin: 4000}

	r, err := NewRoofline(deepSeekV3, hw, DefaultEfficiency, 8)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMeasured(r, k, false)
	if err != nil {
		t.Fatal(err)
	}
	counts := &TableCounts{}
	if got, want := m.ForRun(counts).(*Measured).attentionNs(&dec), 61*r.OpNs(OpAttention, &dec); got != want {
		t.Errorf("MLA attention %g ns, want 61 x the roofline's %g", got, want)
	}
	ForRun(m, counts).StepTime(&dec)
	if counts.Fallbacks[TableGenerationAttention] != 1 {
		t.Errorf("MLA decode: generation attention fallbacks %d, want 1", counts.Fallbacks[TableGenerationAttention])
	}
	for _, l := range m.linear {
		if l.name == OpQKVProj || l.name == OpOProj {
			t.Errorf("MLA %s looked up as a GEMM table row", l.name)
		}
	}

	r2, err := NewRoofline(gptOSS, hw, DefaultEfficiency, 1)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := NewMeasured(r2, k, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m2.attentionNs(&dec), 18*3000+18*r2.OpNs(OpAttentionLocal, &dec); got != want {
		t.Errorf("gpt-oss attention %g ns, want 18 x 3,000 (table) + 18 x the roofline's local %g", got, want)
	}
}

// attentionNs is the attention part of a measured step.
func (m *Measured) attentionNs(b *Batch) float64 {
	t, _, _ := m.attention(b)
	return t
}

// fakeMLA adds MLA module tables to fakeKernels: every module takes mla ns.
type fakeMLA struct {
	fakeKernels
	mla float64
}

func (f fakeMLA) MLAContext(int, float64) (float64, bool)    { return f.mla, true }
func (f fakeMLA) MLAGeneration(int, float64) (float64, bool) { return f.mla, true }

// With MLA module tables, a pure decode's 61 MLA layers take 61 module
// times, which replace the roofline's qkv_proj, rotary_emb, attention
// and o_proj; a mixed step stays on the roofline.
func TestMeasuredMLAModule(t *testing.T) {
	hw := RooflineHW{PeakFLOPS: 989.5e12, MemBandwidth: 4800e9}
	r, err := NewRoofline(deepSeekV3, hw, DefaultEfficiency, 8)
	if err != nil {
		t.Fatal(err)
	}
	k := fakeMLA{fakeKernels{gemm: 1000, ctx: 5000, gen: 3000, maxM: 1 << 20, maxN: 1 << 20, maxCtx: 1e9}, 50_000}
	m, err := NewMeasured(r, k, false)
	if err != nil {
		t.Fatal(err)
	}
	dec := Batch{NumDecode: 16, DecodeKVSum: 16 * 4000, DecodeKVMax: 4000, DecodeKVMin: 4000}
	tok := &Batch{PrefillTokens: 16}
	proj := 61 * (r.OpNs(OpQKVProj, tok) + r.OpNs(OpRotaryEmb, tok) + r.OpNs(OpOProj, tok))
	if got, want := m.attentionNs(&dec), 61*50_000-proj; math.Abs(got-want) > 1e-6*want {
		t.Errorf("decode: %g ns, want 61 x 50,000 - %g", got, proj)
	}
	counts := &TableCounts{}
	ForRun(m, counts).StepTime(&dec)
	if counts.Evals[TableGenerationAttention] != 1 || counts.Fallbacks[TableGenerationAttention] != 0 {
		t.Errorf("counts %+v: want one generation lookup from the table", counts)
	}
	mixed := Batch{PrefillTokens: 100, PrefillSeqs: 1, NumDecode: 4, DecodeKVSum: 4000, DecodeKVMax: 1000, DecodeKVMin: 1000}
	if got, want := m.attentionNs(&mixed), 61*r.OpNs(OpAttention, &mixed); got != want {
		t.Errorf("mixed: %g ns, want the roofline's %g", got, want)
	}
}
