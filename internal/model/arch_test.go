package model

import (
	"math"
	"os"
	"strings"
	"testing"
)

// hfDir holds real config.json files of the dense families (see its
// README.md).
var hfDir = os.DirFS("testdata/hf")

func TestDenseFamiliesMatchPublishedParameterCounts(t *testing.T) {
	tests := []struct {
		name      string
		modelType string
		published float64 // model card / Hub safetensors total
		tol       float64 // relative; the published figure's rounding
		exact     int64   // exact Hub safetensors count where known; 0: none
		catalog   string  // layer catalog it runs on
	}{
		// 7,241,732,096 in the Hub's safetensors metadata ("7.24B").
		{"mistralai/Mistral-7B-v0.1", "mistral", 7.24e9, 0.001, 7_241_732_096, "llama"},
		{"mistralai/Mistral-7B-Instruct-v0.3", "mistral", 7.25e9, 0.001, 7_248_023_552, "llama"},
		// Model card: "Number of Parameters: 7.61B" (q/k/v biases included).
		{"Qwen/Qwen2.5-7B-Instruct", "qwen2", 7.61e9, 0.002, 0, "llama"},
		// Model card: "Number of Parameters: 0.49B" (tied embeddings).
		{"Qwen/Qwen2.5-0.5B-Instruct", "qwen2", 0.494e9, 0.002, 0, "llama"},
		// 3,821,079,552 (Hub; model card "3.8B").
		{"microsoft/Phi-3-mini-4k-instruct", "phi3", 3.8e9, 0.01, 3_821_079_552, "llama"},
		// Hub: 14.7B (model card "14B parameters").
		{"microsoft/phi-4", "phi3", 14.7e9, 0.005, 0, "llama"},
		// Hub: 8.17B (tied embeddings, vocabulary 49,155).
		{"ibm-granite/granite-3.1-8b-instruct", "granite", 8.17e9, 0.002, 0, "llama"},
		// Hub: 7.30B (q/k norms over the whole projections).
		{"allenai/OLMo-2-1124-7B", "olmo2", 7.30e9, 0.002, 0, "qwen3"},
		// Hub: 7.74B (the Mistral body with a 92,544-token vocabulary).
		{"internlm/internlm2_5-7b-chat", "internlm2", 7.74e9, 0.002, 0, "llama"},
		// Hub: 3.08B (tied embeddings, vocabulary 128,256).
		{"HuggingFaceTB/SmolLM3-3B", "smollm3", 3.08e9, 0.002, 0, "llama"},
		// Hub: 6.89B (LayerNorms without weights).
		{"allenai/OLMo-7B-0424-hf", "olmo", 6.89e9, 0.002, 0, "llama"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(hfDir, tt.name)
			if err != nil {
				t.Fatal(err)
			}
			a, err := c.Architecture()
			if err != nil {
				t.Fatal(err)
			}
			if a.ModelType != tt.modelType || a.LayerCatalog != tt.catalog {
				t.Errorf("architecture %s on catalog %s, want %s on %s", a.ModelType, a.LayerCatalog, tt.modelType, tt.catalog)
			}
			got := c.ParamCount()
			if rel := math.Abs(float64(got)-tt.published) / tt.published; rel > tt.tol {
				t.Errorf("ParamCount = %d, want %.4g within %.2f%% (off %.3f%%)", got, tt.published, 100*tt.tol, 100*rel)
			}
			if tt.exact != 0 && got != tt.exact {
				t.Errorf("ParamCount = %d, want exactly %d", got, tt.exact)
			}
			if c.ActiveParamCount() != got {
				t.Errorf("dense: ActiveParamCount %d != ParamCount %d", c.ActiveParamCount(), got)
			}
		})
	}
}

// TestFamilyStructureByHand checks the per-family terms against a hand
// count on Qwen2.5-0.5B: h 896, 14 heads of 64, 2 KV heads, i 4864, 24
// layers, vocabulary 151,936, tied.
func TestFamilyStructureByHand(t *testing.T) {
	c, err := Load(hfDir, "Qwen/Qwen2.5-0.5B-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	const (
		h, q, kv, i, L, V = 896, 14 * 64, 2 * 64, 4864, 24, 151936
	)
	attn := int64(h*q + 2*h*kv + q*h + q + 2*kv) // q/k/v biases, no o bias
	layer := attn + 3*h*i + 2*h
	want := L*layer + V*h + h
	if got := c.ParamCount(); got != want {
		t.Errorf("Qwen2.5-0.5B ParamCount = %d, want %d by hand", got, want)
	}
	// The same config relabelled llama loses exactly the biases.
	ll := *c
	ll.QKVBias = false
	if d := c.ParamCount() - ll.ParamCount(); d != L*(q+2*kv) {
		t.Errorf("bias share = %d, want %d", d, L*(q+2*kv))
	}
}

func TestUnsupportedArchitectureListsSupported(t *testing.T) {
	c, err := Parse([]byte(`{"model_type":"gpt_bigcode","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100}`), "org/m")
	if err != nil {
		t.Fatal(err) // listing a config never fails on its type
	}
	_, err = c.Architecture()
	if err == nil {
		t.Fatal("gpt_bigcode accepted")
	}
	for _, w := range []string{`"gpt_bigcode" is not supported`, "granite", "llama", "mistral", "olmo2", "phi3", "qwen2", "qwen3_moe", "org/m"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	c.ModelType = ""
	if _, err := c.Architecture(); err == nil || !strings.Contains(err.Error(), "no model_type") {
		t.Errorf("empty model_type: %v", err)
	}
}

func TestRegistrySortedAndUnique(t *testing.T) {
	types := SupportedModelTypes()
	for k := 1; k < len(types); k++ {
		if types[k-1] >= types[k] {
			t.Errorf("registry not sorted/unique at %q, %q", types[k-1], types[k])
		}
	}
	for _, a := range Architectures() {
		if a.LayerCatalog == "" || a.Note == "" {
			t.Errorf("%s: empty layer catalog or note", a.ModelType)
		}
	}
}

func TestSlidingWindowRefusedBeyondTheWindow(t *testing.T) {
	c, err := Load(hfDir, "mistralai/Mistral-7B-v0.1")
	if err != nil {
		t.Fatal(err)
	}
	if c.SlidingWindow != 4096 {
		t.Fatalf("SlidingWindow = %d, want 4096", c.SlidingWindow)
	}
	if err := c.CheckSlidingWindow(4096); err != nil {
		t.Errorf("max_model_len 4096 = window: %v", err)
	}
	err = c.CheckSlidingWindow(32768)
	if err == nil {
		t.Fatal("contexts past the window accepted")
	}
	for _, w := range []string{"sliding_window 4096", "engine.max_model_len to at most 4096", "null"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	// Qwen2.5 sets sliding_window but use_sliding_window false: full attention.
	q, err := Load(hfDir, "Qwen/Qwen2.5-7B-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	if err := q.CheckSlidingWindow(32768); err != nil {
		t.Errorf("Qwen2.5 (use_sliding_window false): %v", err)
	}
}

// InternLM2 names its attention biases "bias": true adds the q, k, v and o
// biases, L·(q + 2kv + h) parameters.
func TestInternLM2BiasKey(t *testing.T) {
	const cfg = `{"model_type":"internlm2","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100,"bias":%s}`
	without, err := Parse([]byte(strings.Replace(cfg, "%s", "false", 1)), "a")
	if err != nil {
		t.Fatal(err)
	}
	with, err := Parse([]byte(strings.Replace(cfg, "%s", "true", 1)), "b")
	if err != nil {
		t.Fatal(err)
	}
	if !with.AttentionBias || without.AttentionBias {
		t.Fatalf("AttentionBias %v / %v, want true / false", with.AttentionBias, without.AttentionBias)
	}
	if d := with.ParamCount() - without.ParamCount(); d != 2*(64+2*32+64) {
		t.Errorf("bias parameters %d, want %d", d, 2*(64+2*32+64))
	}
}
