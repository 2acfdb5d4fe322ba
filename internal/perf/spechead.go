package perf

// LayerAttentionNs is one layer's attention time for b from the measured
// table, skew-corrected (0 when the bundle has no attention table). A
// speculative head with the model's attention shapes uses it for its own
// layer.
func (p *Profile) LayerAttentionNs(b *Batch) float64 {
	if p.attn == nil || b == nil {
		return 0
	}
	return max(0, p.attention(b, nil))
}

// StepTimeWithout is StepTime without the occurrences of op (for a caller
// that times that op otherwise), in unrounded nanoseconds.
func (r *Roofline) StepTimeWithout(b *Batch, op string) float64 {
	if b == nil || (b.Tokens() <= 0 && b.Seqs() <= 0 && b.PadTokens <= 0) {
		return 0
	}
	var s float64
	k := countsOf(b)
	for i, u := range r.ops {
		if u.Op != op {
			s += u.Count * r.opNs(i, b, k)
		}
	}
	return s
}

// HeadTime prices a speculative-decoding head (EAGLE, MTP: one decoder
// layer and lm_head with the target model's shapes, head the roofline of
// that one-layer model) whose target is timed by the measured profile
// target: attention comes from the target's per-layer attention table
// (the head's attention layer has the target's heads and head size), every
// other op from the roofline.
func HeadTime(head *Roofline, target *Profile) Predictor { return headTime{head, target} }

type headTime struct {
	head   *Roofline
	target *Profile
}

// StepTime implements Predictor.
func (h headTime) StepTime(b *Batch) int64 {
	if b == nil || (b.Tokens() <= 0 && b.Seqs() <= 0) {
		return 0
	}
	attn := 0.0
	for _, u := range h.head.ops {
		if u.Op == OpAttention {
			attn += u.Count
		}
	}
	return clampNs(h.head.StepTimeWithout(b, OpAttention) + attn*h.target.LayerAttentionNs(b))
}
