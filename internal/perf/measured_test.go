package perf

import (
	"math"
	"testing"
)

// fakeKernels returns fixed times, with the shapes it covers limited.
type fakeKernels struct {
	gemm, ctx, gen float64
	maxM           int     // GEMMs beyond it are not measured
	maxN           int     // nor wider ones (lm_head)
	maxCtx         float64 // generation beyond it is not measured
}

func (f fakeKernels) GEMM(q bool, m, n, k int) (float64, bool) {
	return f.gemm, m <= f.maxM && n <= f.maxN
}
func (f fakeKernels) ContextAttention(s int, c float64) (float64, bool) { return f.ctx, true }
func (f fakeKernels) GenerationAttention(n int, c float64) (float64, bool) {
	return f.gen, c <= f.maxCtx
}
func (f fakeKernels) MoE(t int) (float64, bool) { return 0, false }

// TestMeasuredStepIsTheSumOfItsOps checks a step against a hand sum: the
// four linear layers at 1,000 ns each per layer, the attention of this
// mixed step from the roofline (no table measures a mixed batch), the ops without a table (embedding, norms, rotary, activation,
// sampler) from the roofline, lm_head from the roofline when its width is
// outside the table.
func TestMeasuredStepIsTheSumOfItsOps(t *testing.T) {
	r, err := NewRoofline(llama8B, RooflineHW{PeakFLOPS: 989.5e12, MemBandwidth: 3350e9}, DefaultEfficiency, 1)
	if err != nil {
		t.Fatal(err)
	}
	k := fakeKernels{gemm: 1000, ctx: 5000, gen: 3000, maxM: 4096, maxN: 65536, maxCtx: 1e9}
	m, err := NewMeasured(r, k, false)
	if err != nil {
		t.Fatal(err)
	}
	b := Batch{PrefillTokens: 100, PrefillSeqs: 1, NumDecode: 10, DecodeKVSum: 5000, DecodeKVMax: 500, DecodeKVMin: 500}
	L := float64(llama8B.Layers)
	want := 4*L*1000 + L*r.OpNs(OpAttention, &b) + r.OpNs(OpLMHead, &b)
	for _, op := range []string{OpEmbedding, OpLayernorm, OpRotaryEmb, OpActFn, OpFinalLayernorm, OpSampler} {
		n := 1.0
		switch op {
		case OpLayernorm:
			n = 2 * L
		case OpRotaryEmb, OpActFn:
			n = L
		}
		want += n * r.OpNs(op, &b)
	}
	counts := &TableCounts{}
	run := ForRun(m, counts)
	if got := run.StepTime(&b); math.Abs(float64(got)-want) > 1 {
		t.Fatalf("step = %d ns, want %.0f", got, want)
	}
	if counts.Evals[TableQKVProj] != 1 || counts.Fallbacks[TableQKVProj] != 0 || counts.Evals[TableLMHead] != 1 || counts.Fallbacks[TableLMHead] != 1 ||
		counts.Evals[TableMixedAttention] != 1 || counts.Fallbacks[TableMixedAttention] != 1 || counts.Evals[TableContextAttention] != 0 {
		t.Errorf("counts = %+v: want one evaluation of each op, lm_head (128,256 wide) and the mixed attention on the roofline", counts)
	}
	// The shared predictor counts nothing; a second run counts apart.
	m.StepTime(&b)
	other := &TableCounts{}
	ForRun(m, other).StepTime(&Batch{NumDecode: 1, DecodeKVSum: 10, DecodeKVMax: 10, DecodeKVMin: 10})
	if counts.Evals[TableQKVProj] != 1 || other.Evals[TableQKVProj] != 1 || other.Evals[TableMixedAttention] != 0 || other.Evals[TableGenerationAttention] != 1 {
		t.Errorf("runs share counts: first %+v, second %+v", counts.Evals, other.Evals)
	}
}

// Outside a table the op is the roofline's and is counted as a fallback.
func TestMeasuredFallsBackOutsideTheTables(t *testing.T) {
	r, err := NewRoofline(llama8B, RooflineHW{PeakFLOPS: 989.5e12, MemBandwidth: 3350e9}, DefaultEfficiency, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMeasured(r, fakeKernels{gemm: 1000, ctx: 5000, gen: 3000, maxM: 64, maxN: 1 << 30, maxCtx: 100}, false)
	if err != nil {
		t.Fatal(err)
	}
	b := Batch{NumDecode: 128, DecodeKVSum: 128 * 1000, DecodeKVMax: 1000, DecodeKVMin: 1000}
	counts := &TableCounts{}
	got := ForRun(m, counts).StepTime(&b)
	L := float64(llama8B.Layers)
	want := L * r.OpNs(OpAttention, &b)
	for _, u := range r.Ops() {
		if u.Op != OpAttention {
			want += u.Count * r.OpNs(u.Op, &b)
		}
	}
	if math.Abs(float64(got)-want) > 1 {
		t.Fatalf("step = %d ns, want the roofline's %.0f", got, want)
	}
	for _, op := range []TableOp{TableQKVProj, TableOProj, TableGateUpProj, TableDownProj, TableGenerationAttention} {
		if counts.Fallbacks[op] != 1 {
			t.Errorf("%s: %d fallbacks, want 1", op, counts.Fallbacks[op])
		}
	}
	if counts.Fallbacks[TableLMHead] != 1 { // 128 rows > 64
		t.Errorf("lm_head: %d fallbacks, want 1", counts.Fallbacks[TableLMHead])
	}
}

// fakeColl times every all-reduce at 7 µs up to 1 MB and every
// all-gather at 3 µs.
type fakeColl struct{}

func (fakeColl) AllReduce(vllm bool, bytes int64) (float64, bool) {
	return 7000, vllm && bytes <= 1<<20
}
func (fakeColl) AllGather(bytes int64) (float64, bool) { return 3000, true }

// Measured collectives replace the modelled ones (2 per layer + 1, then
// the logits gather); a size beyond the table is the model's and counted.
func TestMeasuredCollectives(t *testing.T) {
	cfg := TPComm{TP: 2, Layers: 32, Hidden: 4096, Vocab: 128256, AR: NewAllReduce(2, Interconnect{NVLink: true, LinkBW: 450e9}, false),
		Measured: fakeColl{}, MeasuredVLLM: true}
	counts := &TableCounts{}
	p := ForRun(WithCollectives(fixedNs(0), cfg), counts)
	b := Batch{NumDecode: 8, DecodeKVSum: 800, DecodeKVMax: 100, DecodeKVMin: 100} // 8 × 4096 × 2 B = 64 KiB
	if got, want := p.StepTime(&b), int64(7000*65+3000); got != want {
		t.Errorf("small step: %d ns, want %d", got, want)
	}
	big := Batch{PrefillTokens: 2048, PrefillSeqs: 1} // 16 MiB: beyond the fake table
	cfg.Measured = nil
	model := WithCollectives(fixedNs(0), cfg).StepTime(&big)
	// The all-reduces are the model's, the logits gather the table's.
	if got, want := p.StepTime(&big), model-cfg.AR.GatherNs(1*128256*2)+3000; got != want {
		t.Errorf("big step: %d ns, want %d", got, want)
	}
	if counts.Evals[TableAllReduce] != 2 || counts.Fallbacks[TableAllReduce] != 1 || counts.Evals[TableAllGather] != 2 || counts.Fallbacks[TableAllGather] != 0 {
		t.Errorf("counts %+v", counts)
	}
}

// Pure steps read the attention tables: a prefill step the context
// table, a decode step the generation table (with the skew correction
// between the mean and the longest context).
func TestMeasuredPureAttention(t *testing.T) {
	r, err := NewRoofline(llama8B, RooflineHW{PeakFLOPS: 989.5e12, MemBandwidth: 3350e9}, Efficiency{AttnDecodeSkew: 0.5}, 1)
	if err != nil {
		t.Fatal(err)
	}
	k := ctxGen{}
	m, err := NewMeasured(r, k, false)
	if err != nil {
		t.Fatal(err)
	}
	L := float64(llama8B.Layers)
	pre := Batch{PrefillTokens: 1000, PrefillSeqs: 2}
	if got, _, _ := m.attention(&pre); got != L*(2*1000+500) {
		t.Errorf("prefill attention %g, want %g (seqs 2, chunk 500 per layer)", got, L*2500)
	}
	// After cached tokens: the roofline's, counted.
	hist := Batch{PrefillTokens: 1000, PrefillSeqs: 2, PrefillKV: 400}
	if got, present, fell := m.attention(&hist); got != L*r.OpNs(OpAttention, &hist) || present != 1<<TableHistoryAttention || fell != present {
		t.Errorf("prefill after history: %g (present %b, fell %b), want the roofline's %g, counted", got, present, fell, L*r.OpNs(OpAttention, &hist))
	}
	dec := Batch{NumDecode: 4, DecodeKVSum: 4 * 100, DecodeKVMax: 300, DecodeKVMin: 10}
	// mean 100: 4×100 = 400; longest 300: 1200; halfway with skew 0.5.
	if got, _, _ := m.attention(&dec); got != L*(400+0.5*(1200-400)) {
		t.Errorf("decode attention %g, want %g", got, L*800)
	}
}

// ctxGen times context attention as seqs·1000 + chunk + history and
// generation as n·ctx.
type ctxGen struct{}

func (ctxGen) GEMM(q bool, m, n, k int) (float64, bool) { return 1, true }
func (ctxGen) ContextAttention(s int, c float64) (float64, bool) {
	return float64(s)*1000 + c, true
}
func (ctxGen) GenerationAttention(n int, c float64) (float64, bool) { return float64(n) * c, true }
func (ctxGen) MoE(t int) (float64, bool)                            { return 0, false }

// StepTime does not allocate, per-run counts included.
func TestMeasuredStepTimeDoesNotAllocate(t *testing.T) {
	r, err := NewRoofline(llama8B, RooflineHW{PeakFLOPS: 989.5e12, MemBandwidth: 3350e9}, DefaultEfficiency, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMeasured(r, fakeKernels{gemm: 1000, ctx: 5000, gen: 3000, maxM: 1 << 20, maxN: 1 << 30, maxCtx: 1e9}, false)
	if err != nil {
		t.Fatal(err)
	}
	p := ForRun(m, &TableCounts{})
	b := Batch{NumDecode: 64, DecodeKVSum: 64 * 700, DecodeKVMax: 900, DecodeKVMin: 100}
	if n := testing.AllocsPerRun(100, func() { p.StepTime(&b) }); n != 0 {
		t.Errorf("StepTime allocates %g times per call", n)
	}
}
