package model

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestEveryEmbeddedModelLoads(t *testing.T) {
	names := List(Builtin())
	want := []string{
		"Qwen/Qwen3-30B-A3B-Instruct-2507",
		"Qwen/Qwen3-32B",
		"meta-llama/Llama-3.1-70B",
		"meta-llama/Llama-3.1-8B",
		"microsoft/Phi-mini-MoE-instruct",
		"mistralai/Mixtral-8x7B-v0.1",
	}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("List(Builtin()) = %v, missing %s", names, w)
		}
	}
	for _, n := range names {
		c, err := Load(Builtin(), n)
		if err != nil {
			t.Errorf("Load(%q): %v", n, err)
			continue
		}
		if c.Name != n {
			t.Errorf("Load(%q).Name = %q", n, c.Name)
		}
		if c.ParamCount() <= 0 || c.KVBytesPerToken(2) <= 0 {
			t.Errorf("%s: non-positive sizes", n)
		}
		if _, err := BytesPerElem(c.Dtype); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

func TestParamCountMatchesPublishedTotals(t *testing.T) {
	tests := []struct {
		name   string
		total  float64 // published parameter count
		active float64 // published active count (2 significant digits); 0: same as total
	}{
		{"meta-llama/Llama-3.1-8B", 8.03e9, 0},
		{"meta-llama/Llama-3.1-70B", 70.6e9, 0},
		{"Qwen/Qwen3-32B", 32.8e9, 0},
		{"Qwen/Qwen3-30B-A3B-Instruct-2507", 30.5e9, 3.3e9},
		{"mistralai/Mixtral-8x7B-v0.1", 46.7e9, 12.9e9},
		{"microsoft/Phi-mini-MoE-instruct", 7.6e9, 2.4e9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(Builtin(), tt.name)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, got int64, want, tol float64) {
				if rel := math.Abs(float64(got)-want) / want; rel > tol {
					t.Errorf("%s = %d, want %.4g within %.1f%% (off %.2f%%)", what, got, want, 100*tol, 100*rel)
				}
			}
			check("ParamCount", c.ParamCount(), tt.total, 0.015)
			if tt.active == 0 {
				if c.ActiveParamCount() != c.ParamCount() {
					t.Errorf("dense model: ActiveParamCount %d != ParamCount %d", c.ActiveParamCount(), c.ParamCount())
				}
				return
			}
			// Published active counts are rounded to 2 digits (3.3B is 3.25-3.35B).
			check("ActiveParamCount", c.ActiveParamCount(), tt.active, 0.03)
		})
	}
}

func TestKVBytes(t *testing.T) {
	llama8, err := Load(Builtin(), "meta-llama/Llama-3.1-8B")
	if err != nil {
		t.Fatal(err)
	}
	qwen32, err := Load(Builtin(), "Qwen/Qwen3-32B")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		c         *Config
		bytes, tp int
		want      int64
	}{
		{"llama8b bf16 tp1", llama8, 2, 1, 131072},
		{"llama8b fp8 tp1", llama8, 1, 1, 65536},
		{"llama8b bf16 tp2", llama8, 2, 2, 65536},
		{"llama8b bf16 tp8", llama8, 2, 8, 16384},
		{"llama8b bf16 tp16 replicates kv heads", llama8, 2, 16, 16384},
		{"llama8b tp0 counts as 1", llama8, 2, 0, 131072},
		{"llama8b zero bytes", llama8, 0, 1, 0},
		{"qwen3-32b bf16 tp1", qwen32, 2, 1, 2 * 64 * 8 * 128 * 2},
		{"qwen3-32b bf16 tp4", qwen32, 2, 4, 2 * 64 * 2 * 128 * 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.KVBytesPerTokenPerRank(tt.bytes, tt.tp); got != tt.want {
				t.Errorf("KVBytesPerTokenPerRank(%d, %d) = %d, want %d", tt.bytes, tt.tp, got, tt.want)
			}
		})
	}
	if got := llama8.KVBytesPerToken(2); got != 131072 {
		t.Errorf("KVBytesPerToken(2) = %d, want 131072", got)
	}
	if got, want := llama8.WeightBytes(2), 2*llama8.ParamCount(); got != want {
		t.Errorf("WeightBytes(2) = %d, want %d", got, want)
	}
	if got := llama8.WeightBytes(-1); got != 0 {
		t.Errorf("WeightBytes(-1) = %d, want 0", got)
	}
}

func TestDerivedFields(t *testing.T) {
	tests := []struct {
		name                              string
		headDim, kvHeads, experts, perTok int64
		moeInter, inter                   int64
		tied, qkNorm                      bool
		sliding, maxPos                   int64
	}{
		{"meta-llama/Llama-3.1-8B", 128, 8, 0, 0, 0, 14336, false, false, 0, 131072},
		{"Qwen/Qwen3-30B-A3B-Instruct-2507", 128, 4, 128, 8, 768, 6144, false, true, 0, 262144},
		{"mistralai/Mixtral-8x7B-v0.1", 128, 8, 8, 2, 14336, 14336, false, false, 0, 32768},
		{"microsoft/Phi-mini-MoE-instruct", 128, 8, 16, 2, 960, 960, false, false, 2047, 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(Builtin(), tt.name)
			if err != nil {
				t.Fatal(err)
			}
			got := []int64{c.HeadDim, c.NumKVHeads, c.NumExperts, c.ExpertsPerTok, c.MoEIntermediateSize, c.IntermediateSize, c.SlidingWindow, c.MaxPositionEmbeddings}
			want := []int64{tt.headDim, tt.kvHeads, tt.experts, tt.perTok, tt.moeInter, tt.inter, tt.sliding, tt.maxPos}
			if !slices.Equal(got, want) {
				t.Errorf("head_dim, kv_heads, experts, per_tok, moe_i, i, sliding, max_pos = %v, want %v", got, want)
			}
			if c.TieWordEmbeddings != tt.tied || c.QKNorm != tt.qkNorm {
				t.Errorf("tied=%v qknorm=%v, want %v %v", c.TieWordEmbeddings, c.QKNorm, tt.tied, tt.qkNorm)
			}
			if c.Dtype != "bfloat16" {
				t.Errorf("Dtype = %q", c.Dtype)
			}
		})
	}
}

const minimal = `{"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
 "num_attention_heads": 4, "vocab_size": 100, "some_unknown_field": {"x": [1, 2]}}`

func TestParseDefaults(t *testing.T) {
	c, err := Parse([]byte(minimal), "tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "tiny.json" || c.NumKVHeads != 4 || c.HeadDim != 16 || c.Dtype != DefaultDtype || c.IsMoE() {
		t.Errorf("got %+v", c)
	}
	// embeddings 100*64, lm_head 100*64, layers 2*(attn 4*64*64 + mlp 3*64*128 + norms 2*64), final norm 64
	want := int64(2*100*64 + 2*(4*64*64+3*64*128+2*64) + 64)
	if got := c.ParamCount(); got != want {
		t.Errorf("ParamCount = %d, want %d", got, want)
	}
}

func TestParseSharedExpertsAndDenseLayers(t *testing.T) {
	qwen2moe := `{"model_type": "qwen2_moe", "hidden_size": 8, "intermediate_size": 32,
	 "num_hidden_layers": 4, "num_attention_heads": 2, "vocab_size": 10,
	 "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 4,
	 "shared_expert_intermediate_size": 16, "decoder_sparse_step": 2, "mlp_only_layers": [3],
	 "tie_word_embeddings": true}`
	c, err := Parse([]byte(qwen2moe), "q2.json")
	if err != nil {
		t.Fatal(err)
	}
	// decoder_sparse_step 2: layers 1 and 3 are sparse; 3 is mlp-only.
	var moe []bool
	for l := range 4 {
		moe = append(moe, c.IsMoELayer(l))
	}
	if !slices.Equal(moe, []bool{false, true, false, false}) {
		t.Errorf("IsMoELayer = %v", moe)
	}
	h := int64(8)
	attn := 4*h*h + 2*h
	moeMLP := 4*3*h*4 + h*4 + 3*h*16 + h
	dense := 3 * h * 32
	want := 4*attn + moeMLP + 3*dense + 10*h + h
	if got := c.ParamCount(); got != want {
		t.Errorf("ParamCount = %d, want %d", got, want)
	}

	deepseekLike := `{"hidden_size": 8, "intermediate_size": 32, "num_hidden_layers": 3,
	 "num_attention_heads": 2, "vocab_size": 10, "n_routed_experts": 4, "num_experts_per_tok": 2,
	 "moe_intermediate_size": 4, "n_shared_experts": 2, "first_k_dense_replace": 1}`
	c, err = Parse([]byte(deepseekLike), "ds.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.NumMoELayers() != 2 || c.NumSharedExperts != 2 || c.SharedExpertIntermediateSize != 4 {
		t.Errorf("got moe layers %d, shared %d x %d", c.NumMoELayers(), c.NumSharedExperts, c.SharedExpertIntermediateSize)
	}
}

func TestParseTextConfig(t *testing.T) {
	data := `{"model_type": "llava", "torch_dtype": "float16", "text_config": ` + minimal + `}`
	c, err := Parse([]byte(data), "mm.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.HiddenSize != 64 || c.Dtype != "float16" || c.ModelType != "llava" {
		t.Errorf("got %+v", c)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"syntax", `{"hidden_size": 64,,}`, `model config src.json: invalid JSON at line 1, column 20`},
		{"type", "{\n \"hidden_size\": \"big\"}", `model config src.json: field "hidden_size" at line 2, column 21: JSON string is not a valid int64`},
		{"missing hidden", `{"intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": 1}`,
			`model config src.json: missing required field "hidden_size"`},
		{"zero layers", `{"hidden_size": 8, "intermediate_size": 1, "num_hidden_layers": 0, "num_attention_heads": 1, "vocab_size": 1}`,
			`model config src.json: field "num_hidden_layers" must be > 0, got 0`},
		{"missing heads", `{"hidden_size": 8, "intermediate_size": 1, "num_hidden_layers": 1, "vocab_size": 1}`,
			`missing required field "num_attention_heads"`},
		{"missing vocab", `{"hidden_size": 8, "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1}`,
			`missing required field "vocab_size"`},
		{"missing intermediate", `{"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": 1}`,
			`missing required field "intermediate_size"`},
		{"negative kv heads", `{"hidden_size": 8, "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": -2, "vocab_size": 1}`,
			`field "num_key_value_heads" must be > 0, got -2`},
		{"kv heads not dividing", `{"hidden_size": 12, "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 3, "num_key_value_heads": 2, "vocab_size": 1}`,
			`num_attention_heads (3) must be a multiple of num_key_value_heads (2)`},
		{"head dim not derivable", `{"hidden_size": 10, "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 3, "vocab_size": 1}`,
			`hidden_size (10) is not a multiple of num_attention_heads (3) and head_dim is absent`},
		{"zero head dim", `{"hidden_size": 8, "head_dim": 0, "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": 1}`,
			`field "head_dim" must be > 0, got 0`},
		{"moe without per tok", `{"hidden_size": 8, "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": 1, "num_local_experts": 8}`,
			`missing required field "num_experts_per_tok"`},
		{"moe per tok too big", `{"hidden_size": 8, "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": 1, "num_experts": 2, "num_experts_per_tok": 3}`,
			`num_experts_per_tok (3) exceeds num_experts (2)`},
		{"moe without widths", `{"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": 1, "num_experts": 2, "num_experts_per_tok": 1}`,
			`missing required field "moe_intermediate_size" (or "intermediate_size")`},
		{"mlp only layer out of range", `{"hidden_size": 8, "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": 1, "num_experts": 2, "num_experts_per_tok": 1, "mlp_only_layers": [5]}`,
			`mlp_only_layers: layer 5 out of range [0, 1)`},
		{"mla", `{"hidden_size": 8, "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": 1, "kv_lora_rank": 512}`,
			`multi-head latent attention (kv_lora_rank) is supported for model_type deepseek_v3 and kimi_k2 only`},
		{"not an object", `[1, 2]`, `model config src.json: line 1, column 1: config must be a JSON object, got array`},
		{"overflow", `{"hidden_size": 4611686018427387904, "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": 1}`,
			`model config src.json: implausible sizes: about 8.51e+37 parameters (limit 1e+15)`},
		{"empty", ``, `model config src.json: invalid JSON at line 1, column 1: unexpected end of JSON input`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.json), "src.json")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestMoEWithoutDenseWidth(t *testing.T) {
	// All layers sparse and only moe_intermediate_size given: accepted.
	data := `{"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 1, "vocab_size": 1,
	 "num_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 4}`
	c, err := Parse([]byte(data), "x")
	if err != nil {
		t.Fatal(err)
	}
	if c.IntermediateSize != 0 || c.MoEIntermediateSize != 4 {
		t.Errorf("i=%d moe_i=%d", c.IntermediateSize, c.MoEIntermediateSize)
	}
}

func TestLoad(t *testing.T) {
	user := fstest.MapFS{
		"acme/Tiny-1M.json":  {Data: []byte(minimal)},
		"acme/Broken.json":   {Data: []byte(`{"hidden_size": 8}`)},
		"acme/notes.txt":     {Data: []byte("ignored")},
		"README.md":          {Data: []byte("ignored")},
		"other/Tiny-2M.json": {Data: []byte(minimal)},
	}
	if got, want := List(user), []string{"acme/Broken", "acme/Tiny-1M", "other/Tiny-2M"}; !slices.Equal(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	// A file system with a "models" folder (like assets.FS()) is searched inside it.
	nested := fstest.MapFS{"models/acme/Tiny-1M.json": {Data: []byte(minimal)}, "profiles/x/y.json": {Data: []byte("{}")}}
	if got := List(nested); !slices.Equal(got, []string{"acme/Tiny-1M"}) {
		t.Errorf("List(nested) = %v", got)
	}
	if _, err := Load(nested, "acme/Tiny-1M"); err != nil {
		t.Errorf("Load(nested): %v", err)
	}

	c, err := Load(user, "ACME/tiny-1m")
	if err != nil {
		t.Fatalf("case-insensitive Load: %v", err)
	}
	if c.Name != "acme/Tiny-1M" {
		t.Errorf("Name = %q, want canonical acme/Tiny-1M", c.Name)
	}

	tests := []struct {
		name, model, want string
		unknown           bool
	}{
		{"unknown", "acme/Tiny-3M", `load model "acme/Tiny-3M": unknown model; closest known: acme/Tiny-1M, other/Tiny-2M, acme/Broken; to add a model, save its HuggingFace config.json as DIR/<org>/<name>.json and pass --models DIR`, true},
		{"no org", "Tiny-2M", `load model "Tiny-2M": name must have the form "org/name"; closest known: other/Tiny-2M, acme/Tiny-1M, acme/Broken;`, false},
		{"too deep", "a/b/c", `name must have the form "org/name"`, false},
		{"dot dot", "../x", `name must have the form "org/name"`, false},
		{"empty", "", `name must have the form "org/name"`, false},
		{"broken", "acme/Broken", `load model "acme/Broken": model config acme/Broken.json: missing required field "num_hidden_layers"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(user, tt.model)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load(%q) error = %v, want it to contain %q", tt.model, err, tt.want)
			}
			if got := errors.Is(err, ErrUnknownModel); got != tt.unknown {
				t.Errorf("errors.Is(err, ErrUnknownModel) = %v, want %v", got, tt.unknown)
			}
		})
	}

	if _, err := Load(fstest.MapFS{}, "a/b"); err == nil || !strings.Contains(err.Error(), "no model configs found") {
		t.Errorf("empty fs: %v", err)
	}
	if _, err := Load(nil, "a/b"); err == nil {
		t.Error("nil fs: no error")
	}
	if List(nil) != nil {
		t.Error("List(nil) != nil")
	}
}

func TestClosest(t *testing.T) {
	names := List(Builtin())
	tests := []struct {
		want string
		n    int
		top  string
	}{
		{"Llama-3.1-8B", 1, "meta-llama/Llama-3.1-8B"},
		{"meta-llama/llama-3.1-80b", 1, "meta-llama/Llama-3.1-70B"},
		{"qwen3-30b-a3b-instruct", 1, "Qwen/Qwen3-30B-A3B-Instruct-2507"},
		{"mixtral-8x7b", 1, "mistralai/Mixtral-8x7B-v0.1"},
	}
	for _, tt := range tests {
		got := Closest(names, tt.want, tt.n)
		if len(got) != tt.n || got[0] != tt.top {
			t.Errorf("Closest(%q) = %v, want first %q", tt.want, got, tt.top)
		}
	}
	if got := Closest(names, "x", -1); len(got) != 0 {
		t.Errorf("Closest n=-1 = %v", got)
	}
}

func TestBytesPerElem(t *testing.T) {
	tests := []struct {
		dtype string
		want  int
		err   string
	}{
		{"bfloat16", 2, ""}, {"BF16", 2, ""}, {"torch.bfloat16", 2, ""},
		{"float16", 2, ""}, {"fp16", 2, ""}, {"half", 2, ""},
		{"float32", 4, ""}, {"fp32", 4, ""},
		{"fp8", 1, ""}, {"fp8_e4m3", 1, ""}, {"float8_e4m3fn", 1, ""}, {"fp8_e5m2", 1, ""},
		{"int4", 0, `unknown dtype "int4" (want bfloat16, float16, float32 or fp8)`},
		{"", 0, `unknown dtype ""`},
	}
	for _, tt := range tests {
		got, err := BytesPerElem(tt.dtype)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("BytesPerElem(%q) error = %v, want %q", tt.dtype, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("BytesPerElem(%q) = %d, %v; want %d", tt.dtype, got, err, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte(`{"text_config": null}`))
	f.Add([]byte(`{"model_type": "deepseek_v3", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4, "vocab_size": 100, "kv_lora_rank": 16, "q_lora_rank": 24, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "n_shared_experts": 1, "first_k_dense_replace": 1, "num_nextn_predict_layers": 1}`))
	f.Add([]byte(`{"model_type": "gpt_oss", "hidden_size": 64, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100, "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 8, "layer_types": ["sliding_attention", "full_attention"]}`))
	f.Add([]byte(`{"model_type": "llama4", "text_config": {"model_type": "llama4_text", "hidden_size": 64, "intermediate_size": 32, "intermediate_size_mlp": 128, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100, "num_local_experts": 4, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2, "attention_chunk_size": 16}}`))
	f.Add([]byte(`{"hidden_size": 9223372036854775807, "intermediate_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": 1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz")
		if err == nil {
			if p := c.ParamCount(); p <= 0 {
				t.Errorf("ParamCount = %d for %s", p, data)
			}
			if kv := c.KVBytesPerTokenPerRank(2, 3); kv <= 0 {
				t.Errorf("KVBytesPerTokenPerRank = %d for %s", kv, data)
			}
		}
	})
}

// The rotary cos/sin cache of Llama-3.1-8B in bf16: 131072 positions x 128
// values x 2 bytes = 33,554,432 bytes.
func TestRotaryCacheBytes(t *testing.T) {
	m, err := Load(Builtin(), "meta-llama/Llama-3.1-8B")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.RotaryCacheBytes(2); got != 33_554_432 {
		t.Fatalf("RotaryCacheBytes = %d, want 33554432", got)
	}
	if got := m.RotaryCacheBytes(0); got != 0 {
		t.Fatalf("RotaryCacheBytes(0) = %d", got)
	}
}

// TestQuantizedWeightBytes checks the quantised weight size of
// Llama-3.1-8B by hand: per layer q 4096x4096, k and v 4096x1024, o
// 4096x4096 and MLP 3x4096x14336 = 218103808 linear parameters, 32 layers
// = 6979321856; the other 1050939392 (two 128256x4096 tables and 65 norms
// of 4096) stay bf16.
func TestQuantizedWeightBytes(t *testing.T) {
	c, err := Load(Builtin(), "meta-llama/Llama-3.1-8B")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.LinearParamCount(); got != 6979321856 {
		t.Errorf("LinearParamCount = %d, want 6979321856", got)
	}
	if got := c.ParamCount() - c.LinearParamCount(); got != 1050939392 {
		t.Errorf("other params = %d, want 1050939392", got)
	}
	for _, tt := range []struct {
		lin  float64
		want int64
	}{
		{2, c.WeightBytes(2)},
		{1, 2*1050939392 + 6979321856},
		// awq int4 g128: 0.51953125 B per linear weight.
		{0.51953125, 2*1050939392 + 3625975808},
	} {
		if got := c.QuantizedWeightBytes(2, tt.lin); got != tt.want {
			t.Errorf("QuantizedWeightBytes(2, %g) = %d, want %d", tt.lin, got, tt.want)
		}
	}
}
