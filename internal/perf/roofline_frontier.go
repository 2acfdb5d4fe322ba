package perf

import (
	"fmt"
	"math"
)

// RooflineFrontier holds the parts of a model's shape beyond a Llama-style
// block: multi-head latent attention, layers with a window-bounded
// attention, and dense layers inside an MoE model. It is embedded in
// RooflineModel; zero fields mean the feature is absent.
type RooflineFrontier struct {
	// MLA (multi-head latent attention, DeepSeek-V2/V3): KVLoraRank > 0.
	// QLoraRank is the query latent (0: queries projected directly),
	// QKNopeHeadDim and QKRopeHeadDim the query/key head's parts without
	// and with rotary embedding, VHeadDim the value head.
	QLoraRank, KVLoraRank, QKNopeHeadDim, QKRopeHeadDim, VHeadDim int
	// DenseLayers is the number of layers of an MoE model that have a dense
	// MLP of width Intermediate instead of experts (first_k_dense_replace,
	// Llama 4's interleaving).
	DenseLayers int
	// LocalLayers of the Layers attend to at most LocalWindow tokens:
	// sliding-window layers (gpt-oss, Gemma), or, with LocalChunked,
	// chunked local attention of LocalWindow-token chunks (Llama 4).
	LocalLayers, LocalWindow int
	LocalChunked             bool
	// AttnUnquantized keeps the attention projections (qkv_proj, o_proj)
	// in the compute dtype when WeightBytes quantises the other linear
	// layers (gpt-oss's MXFP4 checkpoints).
	AttnUnquantized bool
}

// OpAttentionLocal is the attention of the window-bounded layers (sliding
// window or chunked local); OpAttention then times the full-attention
// layers only.
const OpAttentionLocal = "attention_local"

// validateFrontier checks the frontier fields of m.
func validateFrontier(m RooflineModel) error {
	f := m.RooflineFrontier
	switch {
	case f.QLoraRank < 0 || f.KVLoraRank < 0 || f.QKNopeHeadDim < 0 || f.QKRopeHeadDim < 0 || f.VHeadDim < 0:
		return fmt.Errorf("roofline: MLA dimensions must be >= 0 (got %+v)", f)
	case f.KVLoraRank > 0 && (f.QKNopeHeadDim < 1 || f.QKRopeHeadDim < 1 || f.VHeadDim < 1):
		return fmt.Errorf("roofline: MLA needs qk_nope, qk_rope and v head dims >= 1 (got %+v)", f)
	case f.DenseLayers < 0 || f.DenseLayers > m.Layers || (f.DenseLayers > 0 && (m.Experts == 0 || m.Intermediate < 1)):
		return fmt.Errorf("roofline: dense layers %d must be in [0, layers=%d], in an MoE model with intermediate >= 1", f.DenseLayers, m.Layers)
	case f.LocalLayers < 0 || f.LocalLayers > m.Layers || (f.LocalLayers > 0 && f.LocalWindow < 1):
		return fmt.Errorf("roofline: local layers %d must be in [0, layers=%d] with a window >= 1 (got %d)", f.LocalLayers, m.Layers, f.LocalWindow)
	case f.LocalLayers > 0 && f.KVLoraRank > 0:
		return fmt.Errorf("roofline: MLA with window-bounded layers is not modelled")
	}
	return nil
}

// frontierOps is the op list of a model with frontier features, in layer
// order: the attention of the full layers and, separately, of the local
// ones; the MoE block on the MoE layers and the dense MLP on the others.
func frontierOps(m RooflineModel) []OpUse {
	L := float64(m.Layers)
	full := L - float64(m.LocalLayers)
	ops := []OpUse{{OpEmbedding, 1}, {OpLayernorm, 2 * L}, {OpQKVProj, L}}
	if m.QKNorm {
		ops = append(ops, OpUse{OpQKNorm, L})
	}
	ops = append(ops, OpUse{OpRotaryEmb, L})
	if full > 0 {
		ops = append(ops, OpUse{OpAttention, full})
	}
	if m.LocalLayers > 0 {
		ops = append(ops, OpUse{OpAttentionLocal, float64(m.LocalLayers)})
	}
	ops = append(ops, OpUse{OpOProj, L})
	dense := float64(m.DenseLayers)
	if m.Experts == 0 {
		dense = L
	}
	if dense < L {
		ops = append(ops, OpUse{OpMoE, L - dense})
	}
	if dense > 0 {
		ops = append(ops, OpUse{OpGateUpProj, dense}, OpUse{OpActFn, dense}, OpUse{OpDownProj, dense})
	}
	return append(ops, OpUse{OpFinalLayernorm, 1}, OpUse{OpLMHead, 1}, OpUse{OpSampler, 1})
}

// hasFrontier reports whether m needs frontierOps (the plain op list
// otherwise, so that the step times of other models keep their summation
// order bit for bit).
func hasFrontier(m RooflineModel) bool {
	return m.KVLoraRank > 0 || m.DenseLayers > 0 || m.LocalLayers > 0
}

// IsMLA reports a multi-head latent attention model.
func (r *Roofline) IsMLA() bool { return r.m.KVLoraRank > 0 }

// mlaQKVNs times MLA's projections before attention on one rank: the fused
// down-projection of the hidden state to the query latent and the KV
// latent with its rotary part (replicated on every rank), then the query
// up-projection to the rank's heads (without a query latent, one
// projection straight to the heads).
func (r *Roofline) mlaQKVNs(T float64) float64 {
	m := r.m
	qk := float64(m.QKNopeHeadDim + m.QKRopeHeadDim)
	kvA := float64(m.KVLoraRank + m.QKRopeHeadDim)
	if m.QLoraRank == 0 {
		return r.linear(T, r.h, kvA) + r.linear(T, r.h, r.heads*qk)
	}
	ql := float64(m.QLoraRank)
	return r.linear(T, r.h, ql+kvA) + r.linear(T, ql, r.heads*qk)
}

// MLACost is the work of one layer's MLA attention on one rank, split into
// the two forms vLLM runs (vllm/v1/attention/backends/mla/common.py):
//
//   - Prefill tokens run the expanded form: kv_b_proj expands the latent of
//     every context token (history and chunk) into the rank's heads' keys
//     (qk_nope) and values (v), then multi-head attention with head size
//     qk_nope + qk_rope for scores and v for values, causal within the
//     chunk.
//   - Decode tokens run the absorbed form: the query's nope part is
//     multiplied into the latent space by W_UK (per head qk_nope x
//     kv_lora_rank), attention runs over the cached latent itself (keys
//     kv_lora_rank + qk_rope wide, values kv_lora_rank wide; all heads
//     share one latent "KV head"), and the output leaves the latent through
//     W_UV (per head kv_lora_rank x v).
//
// Flops and bytes count both; the Proj fields are the parts computed as
// matrix products (kv_b_proj, W_UK, W_UV), the Attn fields the attention
// kernels. Bytes are device-memory traffic: weights once per step, the
// latent cache once per request (decode) or per context token (prefill,
// where the expanded keys and values are written and read back).
type MLACost struct {
	ProjFlops, ProjBytes float64
	AttnFlops, AttnBytes float64
}

// mlaCost is MLACost for pc prefill tokens over ps sequences with kp
// tokens of history, and n decode requests of q query rows each whose
// contexts sum to kvSum.
func (r *Roofline) mlaCost(pc, kp, ps, n, q, kvSum float64) MLACost {
	m := r.m
	H := r.heads
	dn, dr, dv, dl := float64(m.QKNopeHeadDim), float64(m.QKRopeHeadDim), float64(m.VHeadDim), float64(m.KVLoraRank)
	b, kvb := r.b, r.kvb
	var c MLACost
	if pc > 0 {
		ctx := kp + pc
		// kv_b_proj: latent -> per-head k_nope and v for every context token.
		c.ProjFlops += 2 * ctx * dl * H * (dn + dv)
		c.ProjBytes += dl*H*(dn+dv)*b + ctx*(dl+dr)*kvb + ctx*H*(dn+dv)*b
		// causal attention: positions visited per sequence.
		chunk, hist := pc/ps, kp/ps
		pos := ps * (chunk*hist + chunk*(chunk+1)/2)
		c.AttnFlops += H * pos * (2*(dn+dr) + 2*dv)
		c.AttnBytes += ctx*H*(dn+dr+dv)*b + pc*H*(dn+dr+dv)*b
	}
	if n > 0 {
		rows := n * q
		// W_UK and W_UV, batched over the rank's heads.
		c.ProjFlops += 2 * rows * H * dn * dl * 2
		c.ProjBytes += 2*H*dn*dl*b + rows*H*(dn+2*dl+dv)*b
		// latent attention: scores over dl+dr, values over dl.
		c.AttnFlops += q * kvSum * H * (2*(dl+dr) + 2*dl)
		c.AttnBytes += kvSum*(dl+dr)*kvb + rows*H*(dl+dr+dl)*b
	}
	return c
}

// MLACostOf is MLACost for one step's batch.
func (r *Roofline) MLACostOf(b *Batch) MLACost {
	if b == nil || !r.IsMLA() {
		return MLACost{}
	}
	pc, kp, ps, n, q, kvSum := attnInputs(b)
	return r.mlaCost(pc, kp, ps, n, q, kvSum)
}

// attnInputs are the attention model's inputs from a batch: prefill
// tokens, their history, prefill sequences (>= 1), decodes, query rows per
// decode and the decode contexts' sum.
func attnInputs(b *Batch) (pc, kp, ps, n, q, kvSum float64) {
	pc = float64(max(b.PrefillTokens, 0))
	n = float64(max(b.NumDecode, 0))
	kp = float64(max(b.PrefillKV, 0))
	ps = float64(max(b.PrefillSeqs, 1))
	kvSum = float64(max(b.DecodeKVSum, 0))
	q = 1.0
	if n > 0 && b.SpecTokens > 0 {
		q += float64(b.SpecTokens) / n
	}
	return pc, kp, ps, n, q, kvSum
}

// mlaAttention times one layer's MLA attention on one rank: the matrix
// products at the GEMM rate, the attention kernels at the attention rate;
// each blends compute and memory time with its sharpness. Pure-decode
// steps use the decode launch cost and memory efficiency (FlashMLA's
// path), others the prefill ones.
func (r *Roofline) mlaAttention(b *Batch) float64 {
	pc, kp, ps, n, q, kvSum := attnInputs(b)
	if pc == 0 && n == 0 {
		return 0
	}
	c := r.mlaCost(pc, kp, ps, n, q, kvSum)
	launch, mem := r.eff.AttnLaunchNs, r.attnMem
	if pc == 0 {
		launch, mem = r.eff.AttnDecodeLaunchNs, r.attnDecMem
	}
	proj := 2*r.eff.LaunchNs + softMax(c.ProjFlops/r.flopRate*1e9, c.ProjBytes/r.memRate*1e9, r.invP)
	attn := launch + softMax(c.AttnFlops/r.attnFlop*1e9, c.AttnBytes/mem*1e9, r.invAttnP)
	return proj + attn
}

// localAttention times one window-bounded layer's attention: the full
// attention model with each context cut to what the layer attends to.
// A sliding window of W tokens sees min(context, W) tokens of history; a
// chunked layer sees the tokens of its own chunk, on average half a chunk
// once contexts pass one chunk. The batch gives the decode contexts as a
// sum, a minimum and a maximum: the cut sum is exact when every context is
// on one side of the window and min(sum, n·W) otherwise.
func (r *Roofline) localAttention(b *Batch) float64 {
	pc, kp, ps, n, q, kvSum := attnInputs(b)
	if pc == 0 && n == 0 {
		return 0
	}
	w := float64(r.m.LocalWindow)
	seen := w
	if r.m.LocalChunked {
		seen = w / 2
	}
	if n > 0 {
		switch {
		case float64(b.DecodeKVMax) <= w && !r.m.LocalChunked:
		case r.m.LocalChunked && kvSum/n < w:
		case float64(b.DecodeKVMin) >= w:
			kvSum = n * seen
		default:
			kvSum = math.Min(kvSum, n*seen)
		}
	}
	if pc > 0 {
		kp = ps * math.Min(kp/ps, w)
	}
	t := r.attentionWindowed(pc, kp, ps, n, q, kvSum, w)
	a := r.eff.AttnSkew
	if pc == 0 {
		a = r.eff.AttnDecodeSkew
	}
	if kvMax := math.Min(float64(b.DecodeKVMax), seen); a > 0 && n > 1 && kvMax*n > kvSum {
		if tMax := r.attentionWindowed(pc, kp, ps, n, q, kvMax*n, w); tMax > t {
			t += a * (tMax - t)
		}
	}
	return t
}
