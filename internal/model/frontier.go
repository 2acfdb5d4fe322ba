package model

import (
	"fmt"
	"slices"
	"strings"
)

// AttnKind is the kind of attention one layer runs, which decides how much
// KV cache it keeps per request.
type AttnKind uint8

// Attention kinds. The names follow the layer_types values of HuggingFace
// configs ("full_attention", "sliding_attention") and vLLM's KV cache specs
// (FullAttentionSpec, SlidingWindowSpec, ChunkedLocalAttentionSpec).
const (
	// AttnFull attends to every earlier token.
	AttnFull AttnKind = iota
	// AttnSliding attends to the last SlidingWindow tokens (the query's
	// own included).
	AttnSliding
	// AttnChunked attends to the earlier tokens of the query's own chunk
	// of AttentionChunkSize tokens (Llama 4's local layers).
	AttnChunked
)

// String names the kind as vLLM's KV cache specs do.
func (k AttnKind) String() string {
	switch k {
	case AttnSliding:
		return "sliding_window"
	case AttnChunked:
		return "chunked_local"
	}
	return "full"
}

// Frontier holds the architecture features beyond a Llama-style block:
// multi-head latent attention, per-layer attention kinds, attention sinks,
// multi-token-prediction layers and expert biases. It is embedded in
// [Config]; every field is zero for a model without the feature.
type Frontier struct {
	// QLoraRank is the rank of MLA's query compression (q_lora_rank); 0
	// projects queries directly from the hidden state.
	QLoraRank int64
	// KVLoraRank is the rank of MLA's joint key-value compression
	// (kv_lora_rank); > 0 marks a multi-head latent attention model.
	KVLoraRank int64
	// QKNopeHeadDim and QKRopeHeadDim split an MLA query/key head into its
	// part without and with rotary embedding (qk_nope_head_dim,
	// qk_rope_head_dim); VHeadDim is the value head size (v_head_dim).
	QKNopeHeadDim, QKRopeHeadDim, VHeadDim int64
	// MTPLayers is the number of multi-token-prediction modules the
	// checkpoint carries beside the main model (num_nextn_predict_layers).
	// They are not part of ParamCount; see MTPParamCount.
	MTPLayers int64
	// LayerKinds is the attention kind of each layer; nil means every
	// layer is full attention.
	LayerKinds []AttnKind
	// AttentionChunkSize is the chunk of Llama 4's chunked local
	// attention layers (attention_chunk_size).
	AttentionChunkSize int64
	// AttentionSinks reports a learned sink logit per query head and layer
	// (gpt-oss): it takes part in the softmax, holds no KV.
	AttentionSinks bool
	// ExpertBias reports biases on the routed experts' projections
	// (gate_up: 2·i_e, down: h) and on the router (gpt-oss).
	ExpertBias bool
	// QuantMethod is the checkpoint's quantization_config.quant_method
	// ("fp8", "mxfp4", ...), "" when it ships unquantised.
	QuantMethod string
	// UnquantizedAttention reports that the checkpoint keeps the attention
	// projections in the compute dtype while other linear layers are
	// quantised (quantization_config.modules_to_not_convert names
	// self_attn, as gpt-oss does); LinearParamCount then leaves them out.
	UnquantizedAttention bool
	// NormsPerLayer is the number of h-wide RMSNorms of a block (Gemma 2
	// and 3 have four: around attention and around the MLP); 0 means 2.
	NormsPerLayer int64
}

// rawFrontier mirrors the config.json fields of Frontier. It is embedded in
// rawConfig, so its fields are decoded from the same JSON object.
type rawFrontier struct {
	QLoraRank              *int64   `json:"q_lora_rank"`
	QKNopeHeadDim          *int64   `json:"qk_nope_head_dim"`
	QKRopeHeadDim          *int64   `json:"qk_rope_head_dim"`
	VHeadDim               *int64   `json:"v_head_dim"`
	NumNextnPredictLayers  *int64   `json:"num_nextn_predict_layers"`
	LayerTypes             []string `json:"layer_types"`
	AttentionChunkSize     *int64   `json:"attention_chunk_size"`
	NoRopeLayers           []int64  `json:"no_rope_layers"`
	InterleaveMoELayerStep *int64   `json:"interleave_moe_layer_step"`
	IntermediateSizeMLP    *int64   `json:"intermediate_size_mlp"`
	SlidingWindowPattern   *int64   `json:"sliding_window_pattern"`
	MoELayerFreq           *int64   `json:"moe_layer_freq"`
	ExpertsPerToken        *int64   `json:"experts_per_token"`
	QuantizationConfig     *struct {
		QuantMethod         string   `json:"quant_method"`
		ModulesToNotConvert []string `json:"modules_to_not_convert"`
	} `json:"quantization_config"`
}

// frontier reads the architecture features of the model types this file
// adds (deepseek_v3 / kimi_k2, gpt_oss, llama4, gemma2, gemma3) into c,
// after the common fields are parsed. It runs before the MoE fields are
// read, so it can map a type's own MoE layout onto them.
func (r *rawConfig) frontier(c *Config) error {
	if q := r.QuantizationConfig; q != nil {
		c.QuantMethod = strings.ToLower(q.QuantMethod)
		c.UnquantizedAttention = slices.ContainsFunc(q.ModulesToNotConvert, func(m string) bool {
			return strings.Contains(m, "self_attn")
		})
	}
	if c.NumLayers > maxLayers {
		// Per-layer lists are allocated below; real models have < 1000 layers.
		return fmt.Errorf("num_hidden_layers %d exceeds %d", c.NumLayers, maxLayers)
	}
	var err error
	switch c.ModelType {
	case "deepseek_v3", "kimi_k2":
		if err = r.mla(c); err != nil {
			return err
		}
		if c.MTPLayers, err = optional(r.NumNextnPredictLayers, "num_nextn_predict_layers"); err != nil {
			return err
		}
		if f := r.MoELayerFreq; f != nil && *f > 1 {
			return fmt.Errorf("moe_layer_freq %d is not supported (only 1, an MoE block in every layer after first_k_dense_replace)", *f)
		}
	case "gpt_oss":
		c.AttentionSinks, c.ExpertBias = true, true
		if r.NumExpertsPerTok == nil && r.ExpertsPerToken != nil {
			r.NumExpertsPerTok = r.ExpertsPerToken
		}
		if c.LayerKinds, err = r.layerTypes(c, func(i int) AttnKind {
			if i%2 == 0 {
				return AttnSliding
			}
			return AttnFull
		}); err != nil {
			return err
		}
	case "llama4", "llama4_text":
		if err = r.llama4(c); err != nil {
			return err
		}
	case "gemma2":
		c.NormsPerLayer = 4
		c.TieWordEmbeddings = r.TieWordEmbeddings == nil || *r.TieWordEmbeddings
		// Gemma 2 alternates: even layers slide, odd layers are global
		// (transformers Gemma2Attention: sliding unless layer_idx % 2).
		if c.LayerKinds, err = r.layerTypes(c, func(i int) AttnKind {
			if i%2 == 0 {
				return AttnSliding
			}
			return AttnFull
		}); err != nil {
			return err
		}
	case "gemma3", "gemma3_text":
		c.NormsPerLayer, c.QKNorm = 4, true
		c.TieWordEmbeddings = r.TieWordEmbeddings == nil || *r.TieWordEmbeddings
		// Gemma 3: every sliding_window_pattern-th layer is global, the
		// rest slide (5 local : 1 global).
		p := int64(6)
		if r.SlidingWindowPattern != nil {
			if p, err = required(r.SlidingWindowPattern, "sliding_window_pattern"); err != nil {
				return err
			}
		}
		if c.LayerKinds, err = r.layerTypes(c, func(i int) AttnKind {
			if int64(i+1)%p == 0 {
				return AttnFull
			}
			return AttnSliding
		}); err != nil {
			return err
		}
	default:
		return nil
	}
	if slices.Contains(c.LayerKinds, AttnSliding) && c.SlidingWindow == 0 {
		return fmt.Errorf("layer_types has sliding_attention layers but sliding_window is missing or 0")
	}
	if !slices.ContainsFunc(c.LayerKinds, func(k AttnKind) bool { return k != AttnFull }) {
		c.LayerKinds = nil
	}
	return nil
}

// layerTypes is the per-layer attention kind: from layer_types when the
// config lists them, else from the model type's fixed pattern def.
func (r *rawConfig) layerTypes(c *Config, def func(int) AttnKind) ([]AttnKind, error) {
	kinds := make([]AttnKind, c.NumLayers)
	if len(r.LayerTypes) == 0 {
		for i := range kinds {
			kinds[i] = def(i)
		}
		return kinds, nil
	}
	if int64(len(r.LayerTypes)) != c.NumLayers {
		return nil, fmt.Errorf("layer_types lists %d layers, num_hidden_layers is %d", len(r.LayerTypes), c.NumLayers)
	}
	for i, t := range r.LayerTypes {
		switch t {
		case "full_attention":
			kinds[i] = AttnFull
		case "sliding_attention":
			kinds[i] = AttnSliding
		case "chunked_attention":
			kinds[i] = AttnChunked
		default:
			return nil, fmt.Errorf("layer_types[%d] = %q: want full_attention, sliding_attention or chunked_attention", i, t)
		}
	}
	return kinds, nil
}

// mla reads the multi-head latent attention fields (DeepSeek-V2/V3).
func (r *rawConfig) mla(c *Config) error {
	var err error
	if c.KVLoraRank, err = required(r.KVLoraRank, "kv_lora_rank"); err != nil {
		return err
	}
	if c.QLoraRank, err = optional(r.QLoraRank, "q_lora_rank"); err != nil {
		return err
	}
	if c.QKNopeHeadDim, err = required(r.QKNopeHeadDim, "qk_nope_head_dim"); err != nil {
		return err
	}
	if c.QKRopeHeadDim, err = required(r.QKRopeHeadDim, "qk_rope_head_dim"); err != nil {
		return err
	}
	if c.VHeadDim, err = required(r.VHeadDim, "v_head_dim"); err != nil {
		return err
	}
	// MLA has no separate K/V heads: the head size of attention is the
	// query/key head (nope + rope).
	c.NumKVHeads = c.NumHeads
	c.HeadDim = c.QKNopeHeadDim + c.QKRopeHeadDim
	return nil
}

// llama4 reads Llama 4's layout: chunked local attention on the layers that
// use rotary embedding (no_rope_layers[i] = 1) and full attention without
// it on the rest; an MoE block with one shared expert every
// interleave_moe_layer_step-th layer, whose experts are intermediate_size
// wide, and a dense MLP of intermediate_size_mlp on the others.
func (r *rawConfig) llama4(c *Config) error {
	var err error
	if c.AttentionChunkSize, err = optional(r.AttentionChunkSize, "attention_chunk_size"); err != nil {
		return err
	}
	if c.AttentionChunkSize > 0 {
		if len(r.NoRopeLayers) == 0 {
			// transformers' default: every fourth layer is a global NoPE layer.
			for i := range c.NumLayers {
				r.NoRopeLayers = append(r.NoRopeLayers, min(1, (i+1)%4))
			}
		}
		if int64(len(r.NoRopeLayers)) != c.NumLayers {
			return fmt.Errorf("no_rope_layers lists %d layers, num_hidden_layers is %d", len(r.NoRopeLayers), c.NumLayers)
		}
		c.LayerKinds = make([]AttnKind, c.NumLayers)
		for i, v := range r.NoRopeLayers {
			if v != 0 {
				c.LayerKinds[i] = AttnChunked
			}
		}
	}
	if r.NumLocalExperts == nil || *r.NumLocalExperts == 0 {
		return nil
	}
	// The experts and the shared expert are intermediate_size wide; the
	// dense layers' MLP is intermediate_size_mlp.
	if r.MoEIntermediateSize == nil {
		r.MoEIntermediateSize = r.IntermediateSize
	}
	r.IntermediateSize = r.IntermediateSizeMLP
	step := int64(1)
	if r.InterleaveMoELayerStep != nil {
		if step, err = required(r.InterleaveMoELayerStep, "interleave_moe_layer_step"); err != nil {
			return err
		}
	}
	r.DecoderSparseStep = &step
	if step > 1 && r.IntermediateSize == nil {
		return fmt.Errorf("missing required field %q (the dense layers' MLP width)", "intermediate_size_mlp")
	}
	one := int64(1)
	r.NSharedExperts = &one
	return nil
}

// maxLayers bounds num_hidden_layers of a parsed config.
const maxLayers = 1 << 16

// approxMLA estimates the MLA projections' parameters in float64 (see
// approxParams); 0 without MLA.
func (c *Config) approxMLA() float64 {
	if !c.IsMLA() {
		return 0
	}
	h, H := float64(c.HiddenSize), float64(c.NumHeads)
	ql, kvl := float64(c.QLoraRank), float64(c.KVLoraRank)
	nope, rope, v := float64(c.QKNopeHeadDim), float64(c.QKRopeHeadDim), float64(c.VHeadDim)
	layer := h*ql + ql*H*(nope+rope) + h*H*(nope+rope) + h*(kvl+rope) + kvl*H*(nope+v) + H*v*h
	return float64(c.NumLayers+c.MTPLayers) * layer
}

// IsMLA reports multi-head latent attention.
func (c *Config) IsMLA() bool { return c.KVLoraRank > 0 }

// LayerKind is the attention kind of layer (0-based).
func (c *Config) LayerKind(layer int) AttnKind {
	if layer < 0 || layer >= len(c.LayerKinds) {
		return AttnFull
	}
	return c.LayerKinds[layer]
}

// NumLayersOfKind counts the layers of attention kind k.
func (c *Config) NumLayersOfKind(k AttnKind) int {
	if c.LayerKinds == nil {
		if k == AttnFull {
			return int(c.NumLayers)
		}
		return 0
	}
	n := 0
	for _, v := range c.LayerKinds {
		if v == k {
			n++
		}
	}
	return n
}

// Window is the number of tokens a layer of kind k keeps in its KV cache
// at most (the sliding window, the attention chunk), 0 for full attention.
func (c *Config) Window(k AttnKind) int64 {
	switch k {
	case AttnSliding:
		return c.SlidingWindow
	case AttnChunked:
		return c.AttentionChunkSize
	}
	return 0
}

// KVElemsPerTokenLayer is the number of KV-cache elements one token takes
// in one layer on each rank of a tensor-parallel group of size tp: MLA
// caches one latent vector of kv_lora_rank + qk_rope_head_dim elements,
// replicated on every rank; other attention caches K and V of
// max(1, ⌈kv_heads/tp⌉) heads.
func (c *Config) KVElemsPerTokenLayer(tp int) int64 {
	if c.IsMLA() {
		return c.KVLoraRank + c.QKRopeHeadDim
	}
	tp = max(tp, 1)
	heads := max((c.NumKVHeads+int64(tp)-1)/int64(tp), 1)
	return 2 * heads * c.HeadDim
}

// attnParams is the parameter count of one layer's attention: its
// projections (linear, the weight matrices) and the rest (biases, norms,
// sinks).
func (c *Config) attnParams() (linear, other int64) {
	h := c.HiddenSize
	if c.IsMLA() {
		H, qk := c.NumHeads, c.QKNopeHeadDim+c.QKRopeHeadDim
		if c.QLoraRank > 0 {
			linear += h*c.QLoraRank + c.QLoraRank*H*qk // q_a_proj, q_b_proj
			other += c.QLoraRank                       // q_a_layernorm
		} else {
			linear += h * H * qk // q_proj
		}
		linear += h * (c.KVLoraRank + c.QKRopeHeadDim)              // kv_a_proj_with_mqa
		linear += c.KVLoraRank * H * (c.QKNopeHeadDim + c.VHeadDim) // kv_b_proj
		linear += H * c.VHeadDim * h                                // o_proj
		other += c.KVLoraRank                                       // kv_a_layernorm
		return linear, other
	}
	d := c.HeadDim
	q, kv := c.NumHeads*d, c.NumKVHeads*d
	linear = h*q + 2*h*kv + q*h
	switch {
	case c.AttentionBias:
		other += q + 2*kv + h
	case c.QKVBias:
		other += q + 2*kv
	}
	switch {
	case c.QKNormFull:
		other += q + kv
	case c.QKNorm:
		other += 2 * d
	}
	if c.AttentionSinks {
		other += c.NumHeads
	}
	return linear, other
}

// MTPParamCount is the size of the checkpoint's multi-token-prediction
// modules (DeepSeek-V3: num_nextn_predict_layers = 1), which share the
// embedding and output head with the main model: per module two
// RMSNorms (enorm, hnorm), the 2h x h projection eh_proj, one decoder
// layer with an MoE block, and the shared head's norm. 0 without MTP.
func (c *Config) MTPParamCount() int64 {
	if c.MTPLayers == 0 {
		return 0
	}
	h := c.HiddenSize
	lin, other := c.attnParams()
	layer := lin + other + c.normsPerLayer()*h + c.moeParams(c.NumExperts)
	return c.MTPLayers * (3*h + 2*h*h + layer)
}

func (c *Config) normsPerLayer() int64 {
	if c.NormsPerLayer > 0 {
		return c.NormsPerLayer
	}
	return 2
}

// moeParams is one MoE layer's parameters with experts routed experts
// counted (all of them for the total, the top-k for the active count).
func (c *Config) moeParams(experts int64) int64 {
	h := c.HiddenSize
	moe := experts*3*h*c.MoEIntermediateSize + h*c.NumExperts +
		c.NumSharedExperts*3*h*c.SharedExpertIntermediateSize
	if c.SharedExpertGate {
		moe += h
	}
	if c.ExpertBias {
		moe += experts*(2*c.MoEIntermediateSize+h) + c.NumExperts
	}
	return moe
}
