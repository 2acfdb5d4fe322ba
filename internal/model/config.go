package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// DefaultDtype is the weight dtype assumed when a config names none
// (neither torch_dtype nor dtype).
const DefaultDtype = "bfloat16"

// Config is the part of a HuggingFace config.json the simulator uses.
// All sizes are element counts, not bytes. Fields of features a model does
// not have are zero.
type Config struct {
	// Name identifies the model, "org/name" when loaded with [Load]; [Parse]
	// sets it to its source argument.
	Name string
	// ModelType is the HF model_type ("llama", "qwen3", "qwen3_moe",
	// "mixtral", "phimoe", ...); it selects the layer catalog.
	ModelType string
	// HiddenSize is the residual stream width h (hidden_size).
	HiddenSize int64
	// IntermediateSize is the dense MLP width i (intermediate_size). In
	// Mixtral-style MoE configs it is the width of each expert instead.
	IntermediateSize int64
	// NumLayers is the number of transformer blocks (num_hidden_layers).
	NumLayers int64
	// NumHeads is the number of query heads (num_attention_heads).
	NumHeads int64
	// NumKVHeads is the number of key/value heads (num_key_value_heads);
	// it equals NumHeads when the config omits it (no GQA).
	NumKVHeads int64
	// HeadDim is the per-head width: head_dim when given, else
	// HiddenSize/NumHeads.
	HeadDim int64
	// VocabSize is the vocabulary size (vocab_size).
	VocabSize int64
	// TieWordEmbeddings reports whether lm_head shares the embedding matrix
	// (tie_word_embeddings, false when absent).
	TieWordEmbeddings bool
	// MaxPositionEmbeddings is the longest context the model supports
	// (max_position_embeddings); 0 when the config omits it.
	MaxPositionEmbeddings int64
	// Dtype is the checkpoint dtype (torch_dtype or dtype), lower case;
	// DefaultDtype when absent.
	Dtype string
	// SlidingWindow is the attention window in tokens, 0 for full attention.
	// It is informational: KV sizes here assume full attention.
	SlidingWindow int64

	// AttentionBias reports biases on the q, k, v and o projections.
	AttentionBias bool
	// MLPBias reports biases on the dense MLP projections.
	MLPBias bool
	// LMHeadBias reports a bias on lm_head.
	LMHeadBias bool
	// QKNorm reports RMSNorm on queries and keys (Qwen3 family: per head).
	QKNorm bool
	// QKNormFull reports that the q/k norms span the whole q and k
	// projections (OLMo 2) rather than one head.
	QKNormFull bool
	// QKVBias reports biases on the q, k and v projections only (Qwen2),
	// which its config.json does not state.
	QKVBias bool
	// ParamFreeNorms reports LayerNorms without weights (OLMo 1).
	ParamFreeNorms bool

	// NumExperts is the number of routed experts per MoE layer
	// (num_experts, num_local_experts or n_routed_experts); 0 for a dense
	// model.
	NumExperts int64
	// ExpertsPerTok is the number of routed experts each token activates
	// (num_experts_per_tok).
	ExpertsPerTok int64
	// MoEIntermediateSize is the MLP width of one routed expert
	// (moe_intermediate_size, else intermediate_size).
	MoEIntermediateSize int64
	// NumSharedExperts is the number of always-active shared experts.
	NumSharedExperts int64
	// SharedExpertIntermediateSize is the MLP width of one shared expert.
	SharedExpertIntermediateSize int64
	// SharedExpertGate reports a sigmoid gate (h x 1) on the shared expert
	// output (Qwen2-MoE).
	SharedExpertGate bool
	// FirstDenseLayers is the number of leading layers with a dense MLP
	// instead of experts (first_k_dense_replace).
	FirstDenseLayers int64
	// DecoderSparseStep makes every step-th layer an MoE layer
	// (decoder_sparse_step); 0 or 1 means every layer.
	DecoderSparseStep int64
	// MLPOnlyLayers lists layer indices with a dense MLP (mlp_only_layers).
	MLPOnlyLayers []int64

	// Frontier holds MLA, per-layer attention kinds, sinks, MTP and the
	// other features of the frontier architectures (frontier.go).
	Frontier
}

// rawConfig mirrors the JSON fields read from config.json. Pointers tell
// "absent" from zero.
type rawConfig struct {
	ModelType             *string `json:"model_type"`
	HiddenSize            *int64  `json:"hidden_size"`
	IntermediateSize      *int64  `json:"intermediate_size"`
	NumHiddenLayers       *int64  `json:"num_hidden_layers"`
	NumAttentionHeads     *int64  `json:"num_attention_heads"`
	NumKeyValueHeads      *int64  `json:"num_key_value_heads"`
	HeadDim               *int64  `json:"head_dim"`
	VocabSize             *int64  `json:"vocab_size"`
	TieWordEmbeddings     *bool   `json:"tie_word_embeddings"`
	MaxPositionEmbeddings *int64  `json:"max_position_embeddings"`
	TorchDtype            *string `json:"torch_dtype"`
	Dtype                 *string `json:"dtype"`
	SlidingWindow         *int64  `json:"sliding_window"`
	UseSlidingWindow      *bool   `json:"use_sliding_window"`
	AttentionBias         *bool   `json:"attention_bias"`
	Bias                  *bool   `json:"bias"` // InternLM2's name for the attention biases
	MLPBias               *bool   `json:"mlp_bias"`
	LMHeadBias            *bool   `json:"lm_head_bias"`
	KVLoraRank            *int64  `json:"kv_lora_rank"`

	NumExperts                   *int64  `json:"num_experts"`
	NumLocalExperts              *int64  `json:"num_local_experts"`
	NRoutedExperts               *int64  `json:"n_routed_experts"`
	NumExpertsPerTok             *int64  `json:"num_experts_per_tok"`
	MoEIntermediateSize          *int64  `json:"moe_intermediate_size"`
	SharedExpertIntermediateSize *int64  `json:"shared_expert_intermediate_size"`
	NSharedExperts               *int64  `json:"n_shared_experts"`
	FirstKDenseReplace           *int64  `json:"first_k_dense_replace"`
	DecoderSparseStep            *int64  `json:"decoder_sparse_step"`
	MLPOnlyLayers                []int64 `json:"mlp_only_layers"`

	TextConfig json.RawMessage `json:"text_config"`

	rawFrontier
}

// Parse decodes a HuggingFace config.json. source names the data in error
// messages (a path or "org/name") and becomes Config.Name. Unknown JSON
// fields are ignored; required fields (hidden_size, intermediate_size or
// moe_intermediate_size, num_hidden_layers, num_attention_heads,
// vocab_size) must be present and > 0. Multimodal configs whose language
// model sits under "text_config" are read from there.
func Parse(data []byte, source string) (*Config, error) {
	var top rawConfig
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("model config %s: %w", source, describeJSONError(data, err))
	}
	r := top
	if r.HiddenSize == nil && len(r.TextConfig) > 0 && !bytes.Equal(bytes.TrimSpace(r.TextConfig), []byte("null")) {
		var inner rawConfig
		if err := json.Unmarshal(r.TextConfig, &inner); err != nil {
			return nil, fmt.Errorf("model config %s: text_config: %w", source, err)
		}
		if inner.ModelType == nil {
			inner.ModelType = top.ModelType
		}
		if inner.TieWordEmbeddings == nil {
			inner.TieWordEmbeddings = top.TieWordEmbeddings
		}
		if inner.TorchDtype == nil && inner.Dtype == nil {
			inner.TorchDtype, inner.Dtype = top.TorchDtype, top.Dtype
		}
		if inner.QuantizationConfig == nil {
			inner.QuantizationConfig = top.QuantizationConfig
		}
		r = inner
	}
	c, err := r.toConfig()
	if err != nil {
		return nil, fmt.Errorf("model config %s: %w", source, err)
	}
	c.Name = source
	return c, nil
}

// describeJSONError adds the line and column to a JSON syntax error.
func describeJSONError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(data, se.Offset)
		return fmt.Errorf("invalid JSON at line %d, column %d: %w", line, col, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		line, col := lineCol(data, te.Offset)
		if te.Field == "" {
			return fmt.Errorf("line %d, column %d: config must be a JSON object, got %s", line, col, te.Value)
		}
		return fmt.Errorf("field %q at line %d, column %d: JSON %s is not a valid %s", te.Field, line, col, te.Value, te.Type)
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// lineCol converts the offset encoding/json reports (bytes read, the
// offending byte last) into a 1-based line and column of that byte.
func lineCol(data []byte, offset int64) (line, col int) {
	offset = min(max(offset-1, 0), int64(len(data)))
	line, col = 1, 1
	for _, b := range data[:offset] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

// required returns *p, or an error naming the JSON field when it is absent
// or not > 0.
func required(p *int64, field string) (int64, error) {
	if p == nil {
		return 0, fmt.Errorf("missing required field %q", field)
	}
	if *p <= 0 {
		return 0, fmt.Errorf("field %q must be > 0, got %d", field, *p)
	}
	return *p, nil
}

// optional returns *p (0 when absent) and rejects negative values.
func optional(p *int64, field string) (int64, error) {
	if p == nil {
		return 0, nil
	}
	if *p < 0 {
		return 0, fmt.Errorf("field %q must be >= 0, got %d", field, *p)
	}
	return *p, nil
}

func flag(p *bool) bool { return p != nil && *p }

func (r *rawConfig) toConfig() (*Config, error) {
	if r.KVLoraRank != nil && *r.KVLoraRank > 0 && (r.ModelType == nil || (*r.ModelType != "deepseek_v3" && *r.ModelType != "kimi_k2")) {
		return nil, errors.New("multi-head latent attention (kv_lora_rank) is supported for model_type deepseek_v3 and kimi_k2 only")
	}
	c := &Config{
		TieWordEmbeddings: flag(r.TieWordEmbeddings),
		AttentionBias:     flag(r.AttentionBias),
		MLPBias:           flag(r.MLPBias),
		LMHeadBias:        flag(r.LMHeadBias),
		Dtype:             DefaultDtype,
	}
	if r.ModelType != nil {
		c.ModelType = *r.ModelType
	}
	applyArchitecture(r, c)
	switch {
	case r.TorchDtype != nil && *r.TorchDtype != "":
		c.Dtype = strings.ToLower(*r.TorchDtype)
	case r.Dtype != nil && *r.Dtype != "":
		c.Dtype = strings.ToLower(*r.Dtype)
	}

	var err error
	if c.HiddenSize, err = required(r.HiddenSize, "hidden_size"); err != nil {
		return nil, err
	}
	if c.NumLayers, err = required(r.NumHiddenLayers, "num_hidden_layers"); err != nil {
		return nil, err
	}
	if c.NumHeads, err = required(r.NumAttentionHeads, "num_attention_heads"); err != nil {
		return nil, err
	}
	if c.VocabSize, err = required(r.VocabSize, "vocab_size"); err != nil {
		return nil, err
	}
	c.NumKVHeads = c.NumHeads
	if r.NumKeyValueHeads != nil {
		if c.NumKVHeads, err = required(r.NumKeyValueHeads, "num_key_value_heads"); err != nil {
			return nil, err
		}
	}
	if c.NumKVHeads > c.NumHeads || c.NumHeads%c.NumKVHeads != 0 {
		return nil, fmt.Errorf("num_attention_heads (%d) must be a multiple of num_key_value_heads (%d)", c.NumHeads, c.NumKVHeads)
	}
	if r.HeadDim != nil {
		if c.HeadDim, err = required(r.HeadDim, "head_dim"); err != nil {
			return nil, err
		}
	} else {
		if c.HiddenSize%c.NumHeads != 0 {
			return nil, fmt.Errorf("hidden_size (%d) is not a multiple of num_attention_heads (%d) and head_dim is absent", c.HiddenSize, c.NumHeads)
		}
		c.HeadDim = c.HiddenSize / c.NumHeads
	}
	if c.MaxPositionEmbeddings, err = optional(r.MaxPositionEmbeddings, "max_position_embeddings"); err != nil {
		return nil, err
	}
	if r.UseSlidingWindow == nil || *r.UseSlidingWindow {
		if c.SlidingWindow, err = optional(r.SlidingWindow, "sliding_window"); err != nil {
			return nil, err
		}
	}
	if err := r.frontier(c); err != nil {
		return nil, err
	}

	if err := r.moe(c); err != nil {
		return nil, err
	}
	// A dense MLP width is needed unless every layer is an MoE layer.
	if r.IntermediateSize != nil || c.NumExperts == 0 || c.NumMoELayers() < int(c.NumLayers) {
		if c.IntermediateSize, err = required(r.IntermediateSize, "intermediate_size"); err != nil {
			return nil, err
		}
	}
	if c.NumExperts > 0 && c.MoEIntermediateSize == 0 {
		c.MoEIntermediateSize = c.IntermediateSize
	}
	if c.NumSharedExperts > 0 && c.SharedExpertIntermediateSize == 0 {
		c.SharedExpertIntermediateSize = c.MoEIntermediateSize
	}
	// Keep the int64 size arithmetic of ParamCount and KV bytes far from
	// overflow; real models are below 1e13 parameters.
	if p := c.approxParams(); p > maxParams {
		return nil, fmt.Errorf("implausible sizes: about %.3g parameters (limit %.0e)", p, maxParams)
	}
	return c, nil
}

// moe fills the mixture-of-experts fields of c.
func (r *rawConfig) moe(c *Config) error {
	expertsField := ""
	for _, f := range []struct {
		p    *int64
		name string
	}{{r.NumExperts, "num_experts"}, {r.NumLocalExperts, "num_local_experts"}, {r.NRoutedExperts, "n_routed_experts"}} {
		if f.p != nil && *f.p != 0 {
			var err error
			if c.NumExperts, err = required(f.p, f.name); err != nil {
				return err
			}
			expertsField = f.name
			break
		}
	}
	if c.NumExperts == 0 {
		return nil
	}
	var err error
	if c.ExpertsPerTok, err = required(r.NumExpertsPerTok, "num_experts_per_tok"); err != nil {
		return err
	}
	if c.ExpertsPerTok > c.NumExperts {
		return fmt.Errorf("num_experts_per_tok (%d) exceeds %s (%d)", c.ExpertsPerTok, expertsField, c.NumExperts)
	}
	if r.MoEIntermediateSize != nil {
		if c.MoEIntermediateSize, err = required(r.MoEIntermediateSize, "moe_intermediate_size"); err != nil {
			return err
		}
	} else if r.IntermediateSize == nil {
		return errors.New(`missing required field "moe_intermediate_size" (or "intermediate_size")`)
	}
	if r.SharedExpertIntermediateSize != nil && *r.SharedExpertIntermediateSize != 0 {
		// Qwen2-MoE: one gated shared expert of its own width.
		if c.SharedExpertIntermediateSize, err = required(r.SharedExpertIntermediateSize, "shared_expert_intermediate_size"); err != nil {
			return err
		}
		c.NumSharedExperts = 1
		c.SharedExpertGate = true
	} else if r.NSharedExperts != nil && *r.NSharedExperts != 0 {
		// DeepSeek style: n shared experts of the routed experts' width.
		// Their width is filled in by toConfig once the expert width is known.
		if c.NumSharedExperts, err = required(r.NSharedExperts, "n_shared_experts"); err != nil {
			return err
		}
	}
	if c.FirstDenseLayers, err = optional(r.FirstKDenseReplace, "first_k_dense_replace"); err != nil {
		return err
	}
	if c.DecoderSparseStep, err = optional(r.DecoderSparseStep, "decoder_sparse_step"); err != nil {
		return err
	}
	for _, l := range r.MLPOnlyLayers {
		if l < 0 || l >= c.NumLayers {
			return fmt.Errorf("mlp_only_layers: layer %d out of range [0, %d)", l, c.NumLayers)
		}
	}
	c.MLPOnlyLayers = slices.Clone(r.MLPOnlyLayers)
	return nil
}

// maxParams bounds the parameter count of a parsed config.
const maxParams = 1e15

// approxParams estimates ParamCount in float64 so overflow cannot occur.
func (c *Config) approxParams() float64 {
	h, L := float64(c.HiddenSize), float64(c.NumLayers)
	q, kv := float64(c.NumHeads)*float64(c.HeadDim), float64(c.NumKVHeads)*float64(c.HeadDim)
	mlp := 3 * h * (float64(c.IntermediateSize) +
		float64(c.NumExperts)*float64(c.MoEIntermediateSize) +
		float64(c.NumSharedExperts)*float64(c.SharedExpertIntermediateSize))
	return L*(2*h*q+2*h*kv+mlp+h*float64(c.NumExperts)+4*h) + 2*float64(c.VocabSize)*h + 2*float64(c.VocabSize) + c.approxMLA()
}

// IsMoE reports whether the model has routed experts.
func (c *Config) IsMoE() bool { return c.NumExperts > 0 }

// IsMoELayer reports whether layer (0-based) has routed experts rather than
// a dense MLP.
func (c *Config) IsMoELayer(layer int) bool {
	if c.NumExperts == 0 || layer < 0 || int64(layer) >= c.NumLayers || int64(layer) < c.FirstDenseLayers {
		return false
	}
	if slices.Contains(c.MLPOnlyLayers, int64(layer)) {
		return false
	}
	if c.DecoderSparseStep > 1 && int64(layer+1)%c.DecoderSparseStep != 0 {
		return false
	}
	return true
}

// NumMoELayers is the number of layers with routed experts.
func (c *Config) NumMoELayers() int {
	n := 0
	for l := range int(c.NumLayers) {
		if c.IsMoELayer(l) {
			n++
		}
	}
	return n
}
