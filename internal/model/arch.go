package model

import (
	"fmt"
	"slices"
	"strings"
)

// Architecture is how servesim reads and times one HuggingFace model_type:
// the layer catalog that lists its ops, and the structure its
// config.json leaves implicit (Qwen2's q/k/v biases, OLMo 2's norms).
// The table [architectures] is the one place a model_type is accepted;
// adding a family is adding a row (and, if its layer sequence is new, a
// layer catalog).
type Architecture struct {
	// ModelType is the config.json model_type, e.g. "mistral".
	ModelType string
	// LayerCatalog names the layer catalog (layer-catalogs/<name>.yaml)
	// that times the architecture: its own, or that of a family with the
	// same op sequence (Mistral runs Llama's).
	LayerCatalog string
	// Note says in a few words what the family is and how it maps.
	Note string
	// SlidingWindow reports that the simulator models the family's
	// sliding-window (or chunked local) attention, per layer
	// (Config.LayerKinds). When false, a config whose sliding_window
	// is shorter than the longest context a scenario allows is refused
	// (see [CheckSlidingWindow]).
	SlidingWindow bool
	// apply sets the structure config.json does not state, or states
	// under a family's own key (InternLM2's "bias"); nil when the generic
	// reading is exact.
	apply func(r *rawConfig, c *Config)
}

// architectures is the registry of supported model_types, sorted by
// ModelType.
var architectures = []Architecture{
	{ModelType: "deepseek_v3", LayerCatalog: "deepseek_v3", Note: "DeepSeek-V3/R1: multi-head latent attention, MoE with shared experts (docs/attention.md)"},
	{ModelType: "gemma2", LayerCatalog: "gemma2", Note: "Gemma 2: alternating sliding-window and global layers, four norms per layer", SlidingWindow: true},
	{ModelType: "gemma3", LayerCatalog: "gemma3_text", Note: "Gemma 3: five sliding-window layers per global one, q/k norms", SlidingWindow: true},
	{ModelType: "gemma3_text", LayerCatalog: "gemma3_text", Note: "Gemma 3 text model (as gemma3)", SlidingWindow: true},
	{ModelType: "gpt_oss", LayerCatalog: "gpt_oss", Note: "gpt-oss: alternating sliding-window layers, attention sinks, MoE with biases", SlidingWindow: true},
	{ModelType: "granite", LayerCatalog: "llama", Note: "IBM Granite 3.x dense: the Llama layer with scalar multipliers (no parameters)"},
	{ModelType: "internlm2", LayerCatalog: "llama", Note: "InternLM2/2.5: the Llama layer with fused wqkv (the same weights)", apply: func(r *rawConfig, c *Config) { c.AttentionBias = c.AttentionBias || flag(r.Bias) }},
	{ModelType: "kimi_k2", LayerCatalog: "kimi_k2", Note: "Kimi K2: DeepSeek-V3's architecture, more experts"},
	{ModelType: "llama", LayerCatalog: "llama", Note: "Llama 2/3.x dense"},
	{ModelType: "llama4", LayerCatalog: "llama4_text", Note: "Llama 4: chunked local attention layers, MoE", SlidingWindow: true},
	{ModelType: "llama4_text", LayerCatalog: "llama4_text", Note: "Llama 4 text model (as llama4)", SlidingWindow: true},
	{ModelType: "mistral", LayerCatalog: "llama", Note: "Mistral dense: the Llama layer"},
	{ModelType: "mixtral", LayerCatalog: "mixtral", Note: "Mixtral mixture of experts"},
	{ModelType: "olmo", LayerCatalog: "llama", Note: "OLMo 1: the Llama layer with parameter-free LayerNorms", apply: func(_ *rawConfig, c *Config) { c.ParamFreeNorms = true }},
	{ModelType: "olmo2", LayerCatalog: "qwen3", Note: "OLMo 2: RMSNorm after attention and MLP, q/k RMSNorm over the whole projection", apply: func(_ *rawConfig, c *Config) { c.QKNorm, c.QKNormFull = true, true }},
	{ModelType: "phi3", LayerCatalog: "llama", Note: "Phi-3/Phi-4 dense: fused qkv and gate_up projections, the Llama layer"},
	{ModelType: "phimoe", LayerCatalog: "phimoe", Note: "Phi-3.5-MoE mixture of experts"},
	{ModelType: "qwen2", LayerCatalog: "llama", Note: "Qwen2/Qwen2.5 dense: the Llama layer with q/k/v biases", apply: func(_ *rawConfig, c *Config) { c.QKVBias = true }},
	{ModelType: "qwen3", LayerCatalog: "qwen3", Note: "Qwen3 dense: per-head q/k RMSNorm", apply: func(_ *rawConfig, c *Config) { c.QKNorm = true }},
	{ModelType: "qwen3_moe", LayerCatalog: "qwen3_moe", Note: "Qwen3 mixture of experts: per-head q/k RMSNorm", apply: func(_ *rawConfig, c *Config) { c.QKNorm = true }},
	{ModelType: "smollm3", LayerCatalog: "llama", Note: "SmolLM3: the Llama layer; every fourth layer skips RoPE (timed as if it did not)"},
}

// Architectures returns the supported architectures, sorted by model_type.
func Architectures() []Architecture { return slices.Clone(architectures) }

// SupportedModelTypes lists the accepted model_type values, sorted.
func SupportedModelTypes() []string {
	out := make([]string, len(architectures))
	for i, a := range architectures {
		out[i] = a.ModelType
	}
	return out
}

// LookupArchitecture returns the architecture of model_type modelType.
// An unknown or empty model_type is an error listing the supported ones.
func LookupArchitecture(modelType string) (Architecture, error) {
	for _, a := range architectures {
		if a.ModelType == modelType {
			return a, nil
		}
	}
	if modelType == "" {
		return Architecture{}, fmt.Errorf("config.json has no model_type; supported: %s", strings.Join(SupportedModelTypes(), ", "))
	}
	return Architecture{}, fmt.Errorf("architecture (model_type) %q is not supported; supported: %s (a model whose layers are one of these runs with that model_type in its config.json; docs/accelerators.md, Model architectures)", modelType, strings.Join(SupportedModelTypes(), ", "))
}

// Architecture returns c's architecture; see [LookupArchitecture].
func (c *Config) Architecture() (Architecture, error) {
	a, err := LookupArchitecture(c.ModelType)
	if err != nil {
		return a, fmt.Errorf("model %s: %w", c.Name, err)
	}
	return a, nil
}

// applyArchitecture sets the structure of a known model_type that the
// config does not state. Unknown types are left alone: they fail when a
// scenario uses them ([Config.Architecture]), not when listed.
func applyArchitecture(r *rawConfig, c *Config) {
	for _, a := range architectures {
		if a.ModelType == c.ModelType && a.apply != nil {
			a.apply(r, c)
		}
	}
}

// CheckSlidingWindow refuses a model whose attention window is shorter
// than maxLen, the longest context a scenario allows (engine.max_model_len,
// else the model's max_position_embeddings), unless its architecture
// models sliding windows. A window at least maxLen never slides, so full
// attention is then exact.
func (c *Config) CheckSlidingWindow(maxLen int64) error {
	a, err := c.Architecture()
	if err != nil {
		return err
	}
	if a.SlidingWindow || c.SlidingWindow <= 0 || maxLen <= c.SlidingWindow {
		return nil
	}
	return fmt.Errorf("model %s: sliding-window attention (sliding_window %d tokens) is not modelled for %s, and contexts up to %d tokens would use it; set engine.max_model_len to at most %d (the window then never slides and full attention is exact), or set sliding_window to null in the config to simulate full attention (an upper bound on KV memory and attention time)",
		c.Name, c.SlidingWindow, a.ModelType, maxLen, c.SlidingWindow)
}
