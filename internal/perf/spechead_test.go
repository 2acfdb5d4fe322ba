package perf

import (
	"math"
	"testing"
)

// TestSpecTokensCost: verified proposals are tokens for the dense ops and
// rows of logits for lm_head and the sampler, and extend each decode's
// attention query: 16 decodes verifying 3 proposals each cost what 64
// tokens and 64 logit rows cost in those ops, and more than 16 decodes.
func TestSpecTokensCost(t *testing.T) {
	r, err := NewRoofline(tinyModel, tinyHW, tinyEff, 1)
	if err != nil {
		t.Fatal(err)
	}
	plain := Batch{NumDecode: 16, DecodeKVSum: 16 * 1000, DecodeKVMax: 1000, DecodeKVMin: 1000}
	spec := plain
	spec.SpecTokens = 48
	wide := Batch{NumDecode: 64, DecodeKVSum: 64 * 1000, DecodeKVMax: 1000, DecodeKVMin: 1000}
	if spec.Tokens() != 64 || spec.Rows() != 64 || spec.Seqs() != 16 {
		t.Fatalf("tokens %d, rows %d, seqs %d; want 64, 64, 16", spec.Tokens(), spec.Rows(), spec.Seqs())
	}
	for _, op := range []string{OpQKVProj, OpGateUpProj, OpDownProj, OpLMHead, OpSampler} {
		if got, want := r.OpNs(op, &spec), r.OpNs(op, &wide); got != want {
			t.Errorf("%s: %g ns with 48 verified proposals, want %g (64 tokens)", op, got, want)
		}
	}
	a1, a4 := r.OpNs(OpAttention, &plain), r.OpNs(OpAttention, &spec)
	if !(a4 > a1) {
		t.Errorf("attention with 4 query rows per decode %g ns, not above 1 row's %g ns", a4, a1)
	}
	// The KV read is the same: far less than 64 decodes' attention.
	if aw := r.OpNs(OpAttention, &wide); !(a4 < aw) {
		t.Errorf("attention of 16 decodes x 4 rows %g ns, not below 64 decodes' %g ns", a4, aw)
	}
	if !(r.StepTime(&spec) > r.StepTime(&plain)) {
		t.Error("a step verifying proposals is not slower than one without")
	}
}

// TestHeadTime: a speculative head's step is its roofline without
// attention plus its one attention layer from the target's measured
// per-layer table, which is the profile's attention over its 32 layers.
func TestHeadTime(t *testing.T) {
	prof := loadLlama(t)
	m := RooflineModel{Layers: 1, Hidden: 4096, Intermediate: 14336, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 128256, BytesPerElem: 2}
	head, err := NewRoofline(m, tinyHW, tinyEff, 1)
	if err != nil {
		t.Fatal(err)
	}
	h := HeadTime(head, prof)
	for _, b := range []Batch{
		{NumDecode: 32, SpecTokens: 96, DecodeKVSum: 32 * 1500, DecodeKVMax: 3000, DecodeKVMin: 200},
		{PrefillTokens: 512, PrefillSeqs: 1, NumDecode: 8, DecodeKVSum: 8 * 700, DecodeKVMax: 900, DecodeKVMin: 500},
	} {
		layer := prof.LayerAttentionNs(&b)
		if all := prof.Breakdown(&b).Attention; math.Abs(32*layer-all) > 1e-6*all || layer <= 0 {
			t.Fatalf("per-layer attention %g ns x 32 != the profile's %g ns", layer, all)
		}
		want := clampNs(head.StepTimeWithout(&b, OpAttention) + layer)
		if got := h.StepTime(&b); got != want {
			t.Errorf("head step %d ns, want %d", got, want)
		}
		if d := head.StepTimeWithout(&b, "") - float64(head.StepTime(&b)); math.Abs(d) > 0.5 {
			t.Errorf("StepTimeWithout no op differs from StepTime by %g ns", d)
		}
	}
}
