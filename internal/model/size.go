package model

import (
	"fmt"
	"math"
	"strings"
)

// ParamCount is the total number of parameters: token embeddings; per layer
// the attention projections q, k, v, o (with biases when AttentionBias and
// q/k norms when QKNorm; q/k/v biases only when QKVBias), the MLP (dense: gate, up and down,
// 3·h·i; MoE: E·3·h·i_e for the experts, h·E for the router, plus shared
// experts) and two norms (none with ParamFreeNorms); the final norm; and
// lm_head unless tied.
func (c *Config) ParamCount() int64 { return c.params(c.NumExperts) }

// ActiveParamCount is the number of parameters one token passes through:
// like ParamCount, but each MoE layer counts only ExpertsPerTok routed
// experts. It equals ParamCount for a dense model.
func (c *Config) ActiveParamCount() int64 { return c.params(c.ExpertsPerTok) }

func (c *Config) params(experts int64) int64 {
	h := c.HiddenSize
	lin, other := c.attnParams()
	attn := lin + other
	norms, finalNorm := c.normsPerLayer()*h, h
	if c.ParamFreeNorms {
		norms, finalNorm = 0, 0
	}

	dense := 3 * h * c.IntermediateSize
	if c.MLPBias {
		dense += 2*c.IntermediateSize + h
	}
	moe := c.moeParams(experts)

	nMoE := int64(c.NumMoELayers())
	total := c.NumLayers*(attn+norms) + nMoE*moe + (c.NumLayers-nMoE)*dense
	total += c.VocabSize * h // embeddings
	total += finalNorm
	if !c.TieWordEmbeddings {
		total += c.VocabSize * h
	}
	if c.LMHeadBias {
		total += c.VocabSize
	}
	return total
}

// RoutedExpertParams is the number of parameters of the routed experts of
// every MoE layer (E·3·h·i_e per layer): the part expert parallelism shards.
// 0 for a dense model.
func (c *Config) RoutedExpertParams() int64 {
	return int64(c.NumMoELayers()) * c.NumExperts * 3 * c.HiddenSize * c.MoEIntermediateSize
}

// WeightBytes is the size of all weights at bytesPerParam bytes each
// (see [BytesPerElem]); 0 when bytesPerParam <= 0.
func (c *Config) WeightBytes(bytesPerParam int) int64 {
	if bytesPerParam <= 0 {
		return 0
	}
	return c.ParamCount() * int64(bytesPerParam)
}

// LinearParamCount is the number of parameters in the weight matrices of
// the transformer blocks' linear layers, the ones a quantised checkpoint
// stores quantised: per layer the q, k, v and o projections and the MLP
// (dense: gate, up and down; MoE: every routed and shared expert). Biases,
// norms, the MoE router and shared-expert gate, embeddings and lm_head are
// not counted: vLLM keeps them in the compute dtype. Neither are the
// attention projections of a checkpoint that keeps them unquantised
// (UnquantizedAttention, gpt-oss).
func (c *Config) LinearParamCount() int64 {
	h := c.HiddenSize
	attn, _ := c.attnParams()
	if c.UnquantizedAttention {
		attn = 0
	}
	dense := 3 * h * c.IntermediateSize
	moe := c.NumExperts*3*h*c.MoEIntermediateSize + c.NumSharedExperts*3*h*c.SharedExpertIntermediateSize
	nMoE := int64(c.NumMoELayers())
	return c.NumLayers*attn + nMoE*moe + (c.NumLayers-nMoE)*dense
}

// QuantizedWeightBytes is the size of all weights when the linear layers
// (LinearParamCount) take linearBytes bytes each, scales included, and
// every other parameter bytesPerParam: rounded up to whole bytes. It
// equals WeightBytes(bytesPerParam) when linearBytes == bytesPerParam.
func (c *Config) QuantizedWeightBytes(bytesPerParam int, linearBytes float64) int64 {
	if bytesPerParam <= 0 || !(linearBytes > 0) {
		return 0
	}
	if linearBytes == float64(bytesPerParam) {
		return c.WeightBytes(bytesPerParam)
	}
	lin := c.LinearParamCount()
	return (c.ParamCount()-lin)*int64(bytesPerParam) + int64(math.Ceil(float64(lin)*linearBytes))
}

// RotaryCacheBytes is the size of the rotary-embedding cos/sin cache vLLM
// keeps on every rank next to the weights: max_position_embeddings ×
// head_dim values in the model dtype (33,554,432 bytes for Llama-3.1-8B in
// bf16, the gap between its 8.03e9 parameters and the 14.99 GiB vLLM
// reports for loading it). 0 when bytesPerElem <= 0.
func (c *Config) RotaryCacheBytes(bytesPerElem int) int64 {
	if bytesPerElem <= 0 {
		return 0
	}
	return c.MaxPositionEmbeddings * c.HeadDim * int64(bytesPerElem)
}

// KVBytesPerToken is the KV-cache size of one token for the whole model on
// one device: 2 (K and V) · layers · kv_heads · head_dim · bytesPerElem.
// Llama-3.1-8B in bf16 needs 131072 bytes.
func (c *Config) KVBytesPerToken(bytesPerElem int) int64 {
	return c.KVBytesPerTokenPerRank(bytesPerElem, 1)
}

// KVBytesPerTokenPerRank is the KV-cache size of one token held by each
// rank of a tensor-parallel group of size tp: 2 · layers ·
// max(1, ⌈kv_heads/tp⌉) · head_dim · bytesPerElem. KV heads are split across
// ranks and replicated when tp exceeds them. With MLA it is layers ·
// (kv_lora_rank + qk_rope_head_dim) · bytesPerElem on every rank (the latent
// is not split by heads). Every layer counts as full attention here (see
// KVGroups for the sliding-window and chunked layers). tp < 1 counts as 1;
// the result is 0 when bytesPerElem <= 0.
func (c *Config) KVBytesPerTokenPerRank(bytesPerElem, tp int) int64 {
	if bytesPerElem <= 0 {
		return 0
	}
	return c.NumLayers * c.KVElemsPerTokenLayer(tp) * int64(bytesPerElem)
}

// BytesPerElem is the size in bytes of one element of dtype. It accepts
// bfloat16/bf16, float16/fp16/half, float32/fp32/float, and fp8 with its
// variants (float8, fp8_e4m3, fp8_e5m2, float8_e4m3fn, ...); case and a
// "torch." prefix are ignored.
func BytesPerElem(dtype string) (int, error) {
	d := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(dtype)), "torch.")
	switch {
	case d == "bfloat16" || d == "bf16":
		return 2, nil
	case d == "float16" || d == "fp16" || d == "half":
		return 2, nil
	case d == "float32" || d == "fp32" || d == "float":
		return 4, nil
	case d == "fp8" || d == "float8" || strings.HasPrefix(d, "fp8_") || strings.HasPrefix(d, "float8_"):
		return 1, nil
	}
	return 0, fmt.Errorf("unknown dtype %q (want bfloat16, float16, float32 or fp8)", dtype)
}
