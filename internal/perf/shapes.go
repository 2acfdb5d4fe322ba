package perf

import "math"

// LinearShape is the per-rank (n, k) of linear layer op's GEMM,
// (M×k)·(k×n) with M the step's tokens (rows of logits for lm_head), as
// the roofline and the measured-kernel predictor time it: qkv_proj,
// o_proj, gate_up_proj, down_proj or lm_head. Other ops give 0, 0.
func (r *Roofline) LinearShape(op string) (n, k int) { return r.linearShape(op) }

// AttentionShape is the per-rank query heads, KV heads and head size of
// the model at the roofline's tensor-parallel degree, as the
// measured-kernel predictor selects attention table rows: heads/tp and
// max(1, kvHeads/tp) in whole heads, and head_dim (hidden/heads when the
// config gives none).
func (r *Roofline) AttentionShape() (heads, kvHeads, headDim int) {
	return r.m.Heads / r.tp, max(1, r.m.KVHeads/r.tp), r.m.HeadDim
}

// Model is the model the roofline was built for, with its defaults filled
// in (KV heads, head size, bytes per element, MoE width).
func (r *Roofline) Model() RooflineModel { return r.m }

// linearShape is the per-rank (n, k) of a linear layer's GEMM, (M×k)·(k×n)
// with M the step's tokens (rows of logits for lm_head): the dimensions
// OpNs times, rounded to whole numbers. Other ops give 0, 0.
func (r *Roofline) linearShape(op string) (n, k int) {
	round := func(v float64) int { return int(math.Round(v)) }
	switch op {
	case OpQKVProj:
		return round(r.qkvN), round(r.h)
	case OpOProj:
		return round(r.h), round(r.heads * r.hd)
	case OpGateUpProj:
		return round(2 * r.inter), round(r.h)
	case OpDownProj:
		return round(r.h), round(r.inter)
	case OpLMHead:
		return round(r.vocab), round(r.h)
	}
	return 0, 0
}
