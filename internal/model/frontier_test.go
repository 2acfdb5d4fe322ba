package model

import (
	"math"
	"strings"
	"testing"
)

// The frontier architectures against their model cards. Conventions differ:
// DeepSeek's and OpenAI's activated counts leave out the input embedding (a
// table lookup, not a matrix product), so they are compared with the active
// count minus vocab x hidden; the other cards count it.
//
//   - DeepSeek-V3 / R1: 671B main model + 14B MTP module (of which 11.5B
//     unique), 36.6B activated incl. the 0.9B output head
//     (huggingface.co/deepseek-ai/DeepSeek-V3, README_WEIGHTS.md).
//   - gpt-oss-120b: 116.83B total, 5.13B active; gpt-oss-20b: 20.91B, 3.61B
//     (OpenAI, gpt-oss model card, table 1).
//   - Qwen3-235B-A22B: 235B total, 22B activated (huggingface.co/Qwen/Qwen3-235B-A22B).
//   - Llama 4 Maverick: 400B total, 17B active (huggingface.co/meta-llama).
//     Scout's card (109B) includes the vision encoder, which is not counted
//     here; its text model is compared with 109B at 1.5 %.
//   - Kimi-K2: "1T total, 32B activated" rounded to one digit
//     (huggingface.co/moonshotai/Kimi-K2-Instruct): within 3 %.
//   - Gemma 2 9B 9.24B, 27B 27.2B; Gemma 3 1B 1.00B, 27B 27B text model
//     (huggingface.co/google).
func TestFrontierParamCounts(t *testing.T) {
	tests := []struct {
		name          string
		total, active float64
		noEmbed       bool    // active count excludes the input embedding
		tol           float64 // relative tolerance
	}{
		{"deepseek-ai/DeepSeek-V3", 671e9, 36.6e9, true, 0.01},
		{"deepseek-ai/DeepSeek-R1", 671e9, 36.6e9, true, 0.01},
		{"openai/gpt-oss-120b", 116.83e9, 5.13e9, true, 0.01},
		{"openai/gpt-oss-20b", 20.91e9, 3.61e9, true, 0.01},
		{"Qwen/Qwen3-235B-A22B", 235e9, 22e9, false, 0.01},
		{"meta-llama/Llama-4-Maverick-17B-128E-Instruct", 400e9, 17e9, false, 0.0115},
		{"meta-llama/Llama-4-Scout-17B-16E-Instruct", 109e9, 17e9, false, 0.015},
		{"moonshotai/Kimi-K2-Instruct", 1e12, 32e9, false, 0.03},
		{"google/gemma-2-9b", 9.24e9, 0, false, 0.01},
		{"google/gemma-2-27b", 27.2e9, 0, false, 0.01},
		{"google/gemma-3-1b-it", 1.0e9, 0, false, 0.01},
		{"google/gemma-3-27b-it", 27e9, 0, false, 0.01},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(Builtin(), tt.name)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, got int64, want float64) {
				if rel := math.Abs(float64(got)-want) / want; rel > tt.tol {
					t.Errorf("%s = %d, want %.4g within %.1f%% (off %.2f%%)", what, got, want, 100*tt.tol, 100*rel)
				}
			}
			check("ParamCount", c.ParamCount(), tt.total)
			if tt.active == 0 {
				return
			}
			active := c.ActiveParamCount()
			if tt.noEmbed {
				active -= c.VocabSize * c.HiddenSize
			}
			check("ActiveParamCount", active, tt.active)
		})
	}
}

// DeepSeek-V3's MTP module: 11.5B unique parameters (README_WEIGHTS.md).
// By hand: enorm + hnorm + shared_head.norm 3x7168, eh_proj 14336x7168 =
// 102,760,448, and one MoE layer: MLA 187,107,328 + 2 norms 14,336 + 256
// experts x 44,040,192 + router 1,835,008 + shared expert 44,040,192.
func TestDeepSeekMTPParams(t *testing.T) {
	c, err := Load(Builtin(), "deepseek-ai/DeepSeek-V3")
	if err != nil {
		t.Fatal(err)
	}
	want := int64(3*7168 + 14336*7168 + 187_107_328 + 14_336 + 256*44_040_192 + 1_835_008 + 44_040_192)
	if got := c.MTPParamCount(); got != want {
		t.Errorf("MTPParamCount = %d, want %d", got, want)
	}
	if rel := math.Abs(float64(want)/11.5e9 - 1); rel > 0.01 {
		t.Errorf("MTP %d is %.2f%% from the card's 11.5B", want, 100*rel)
	}
	if c.MTPLayers != 1 || c.NumMoELayers() != 58 || !c.IsMLA() {
		t.Errorf("MTPLayers %d, MoE layers %d, MLA %v; want 1, 58, true", c.MTPLayers, c.NumMoELayers(), c.IsMLA())
	}
}

// KV bytes per token by hand.
func TestFrontierKVBytesPerToken(t *testing.T) {
	tests := []struct {
		name      string
		bpe, tp   int
		want      int64
		derivated string
	}{
		// MLA: one latent of kv_lora_rank 512 + rope 64 per layer, 61 layers,
		// on every TP rank.
		{"deepseek-ai/DeepSeek-V3", 2, 1, (512 + 64) * 2 * 61, "bf16"},
		{"deepseek-ai/DeepSeek-V3", 2, 8, (512 + 64) * 2 * 61, "bf16, tp 8: replicated"},
		{"deepseek-ai/DeepSeek-V3", 1, 1, (512 + 64) * 1 * 61, "fp8"},
		{"moonshotai/Kimi-K2-Instruct", 2, 1, (512 + 64) * 2 * 61, "bf16"},
		// gpt-oss-120b, every layer counted: 2 x 8 heads x 64 x 2 B x 36.
		{"openai/gpt-oss-120b", 2, 1, 2 * 8 * 64 * 2 * 36, "bf16"},
		// Llama 4 Scout: 2 x 8 x 128 x 2 B x 48.
		{"meta-llama/Llama-4-Scout-17B-16E-Instruct", 2, 1, 2 * 8 * 128 * 2 * 48, "bf16"},
		// Gemma 3 1B: 2 x 1 x 256 x 2 B x 26.
		{"google/gemma-3-1b-it", 2, 1, 2 * 1 * 256 * 2 * 26, "bf16"},
	}
	for _, tt := range tests {
		c, err := Load(Builtin(), tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.KVBytesPerTokenPerRank(tt.bpe, tt.tp); got != tt.want {
			t.Errorf("%s %s: KVBytesPerTokenPerRank = %d, want %d", tt.name, tt.derivated, got, tt.want)
		}
	}
}

// The per-layer attention kinds as the configs define them.
func TestLayerKinds(t *testing.T) {
	tests := []struct {
		name              string
		full, sw, chunked int
		window            int64
		first             AttnKind
	}{
		{"openai/gpt-oss-120b", 18, 18, 0, 128, AttnSliding},
		{"openai/gpt-oss-20b", 12, 12, 0, 128, AttnSliding},
		{"google/gemma-2-9b", 21, 21, 0, 4096, AttnSliding},
		{"google/gemma-3-1b-it", 4, 22, 0, 512, AttnSliding},
		{"google/gemma-3-27b-it", 10, 52, 0, 1024, AttnSliding},
		{"meta-llama/Llama-4-Scout-17B-16E-Instruct", 12, 0, 36, 8192, AttnChunked},
		{"deepseek-ai/DeepSeek-V3", 61, 0, 0, 0, AttnFull},
	}
	for _, tt := range tests {
		c, err := Load(Builtin(), tt.name)
		if err != nil {
			t.Fatal(err)
		}
		got := [3]int{c.NumLayersOfKind(AttnFull), c.NumLayersOfKind(AttnSliding), c.NumLayersOfKind(AttnChunked)}
		if got != [3]int{tt.full, tt.sw, tt.chunked} {
			t.Errorf("%s: full/sliding/chunked = %v, want %d/%d/%d", tt.name, got, tt.full, tt.sw, tt.chunked)
		}
		w := c.Window(AttnSliding) + c.Window(AttnChunked)
		if w != tt.window || c.LayerKind(0) != tt.first {
			t.Errorf("%s: window %d, layer 0 %v; want %d, %v", tt.name, w, c.LayerKind(0), tt.window, tt.first)
		}
	}
	// Gemma 3's global layers are every sixth: 5, 11, 17, 23.
	g, err := Load(Builtin(), "google/gemma-3-1b-it")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []int{5, 11, 17, 23} {
		if g.LayerKind(l) != AttnFull {
			t.Errorf("gemma-3-1b layer %d = %v, want full", l, g.LayerKind(l))
		}
	}
	// Llama 4 Maverick: MoE on odd layers only (interleave_moe_layer_step 2).
	m, err := Load(Builtin(), "meta-llama/Llama-4-Maverick-17B-128E-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	if m.IsMoELayer(0) || !m.IsMoELayer(1) || m.NumMoELayers() != 24 || m.IntermediateSize != 16384 || m.MoEIntermediateSize != 8192 {
		t.Errorf("Maverick: MoE layer 0 %v, 1 %v, %d MoE layers, widths %d/%d", m.IsMoELayer(0), m.IsMoELayer(1), m.NumMoELayers(), m.IntermediateSize, m.MoEIntermediateSize)
	}
}

func TestFrontierParseErrors(t *testing.T) {
	base := `"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100`
	tests := []struct {
		json, want string
	}{
		{`{"model_type": "deepseek_v3", ` + base + `, "kv_lora_rank": 16, "qk_nope_head_dim": 8, "v_head_dim": 8}`, `missing required field "qk_rope_head_dim"`},
		{`{"model_type": "deepseek_v3", ` + base + `}`, `missing required field "kv_lora_rank"`},
		{`{"model_type": "llama", ` + base + `, "kv_lora_rank": 16}`, `kv_lora_rank`},
		{`{"model_type": "gpt_oss", ` + base + `, "sliding_window": 8, "layer_types": ["full_attention"]}`, `layer_types lists 1 layers, num_hidden_layers is 2`},
		{`{"model_type": "gpt_oss", ` + base + `, "sliding_window": 8, "layer_types": ["full_attention", "local"]}`, `layer_types[1] = "local"`},
		{`{"model_type": "gemma2", ` + base + `}`, `sliding_window is missing`},
		{`{"model_type": "deepseek_v3", ` + base + `, "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "v_head_dim": 8, "moe_layer_freq": 2}`, `moe_layer_freq 2`},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.json), "x.json")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%s) error = %v, want it to contain %q", tt.json, err, tt.want)
		}
	}
}

// gpt-oss's attention sinks: one learned logit per query head and layer,
// 64 x 36 = 2,304 parameters of gpt-oss-120b, and no KV.
func TestAttentionSinkParams(t *testing.T) {
	c, err := Load(Builtin(), "openai/gpt-oss-120b")
	if err != nil {
		t.Fatal(err)
	}
	if !c.AttentionSinks || !c.ExpertBias || !c.UnquantizedAttention || c.QuantMethod != "mxfp4" {
		t.Fatalf("sinks %v, expert bias %v, unquantised attention %v, quant %q", c.AttentionSinks, c.ExpertBias, c.UnquantizedAttention, c.QuantMethod)
	}
	kv := c.KVBytesPerToken(2)
	without := *c
	without.AttentionSinks = false
	if d := c.ParamCount() - without.ParamCount(); d != 64*36 {
		t.Errorf("sinks add %d parameters, want 2304", d)
	}
	if without.KVBytesPerToken(2) != kv {
		t.Error("sinks change the KV size")
	}
	// The attention projections stay bf16: 36 x (2880 x 4096 + 2 x 2880 x
	// 512 + 4096 x 2880) = 955,514,880 parameters leave the linear count.
	with := *c
	with.UnquantizedAttention = false
	if d := with.LinearParamCount() - c.LinearParamCount(); d != 955_514_880 {
		t.Errorf("unquantised attention removes %d linear parameters, want 955514880", d)
	}
}

// Huge frontier fields are refused before any size is computed.
func TestFrontierBounds(t *testing.T) {
	for _, j := range []string{
		`{"model_type": "gpt_oss", "hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 1000000000000, "num_attention_heads": 1, "vocab_size": 1, "sliding_window": 4}`,
		`{"model_type": "deepseek_v3", "hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 2, "num_attention_heads": 1, "vocab_size": 1, "kv_lora_rank": 4611686018427387904, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "v_head_dim": 8}`,
	} {
		if _, err := Parse([]byte(j), "x.json"); err == nil {
			t.Errorf("Parse(%s): no error", j)
		}
	}
}

// A multimodal config's top-level quantization_config applies to the
// language model under text_config.
func TestQuantizationConfigOfTextConfig(t *testing.T) {
	j := `{"model_type": "llama4", "quantization_config": {"quant_method": "fp8", "modules_to_not_convert": ["model.layers.*.self_attn"]},
		"text_config": {"model_type": "llama4_text", "hidden_size": 64, "intermediate_size": 32, "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 100}}`
	c, err := Parse([]byte(j), "x.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.QuantMethod != "fp8" || !c.UnquantizedAttention {
		t.Errorf("quant method %q, unquantised attention %v; want fp8, true", c.QuantMethod, c.UnquantizedAttention)
	}
}
