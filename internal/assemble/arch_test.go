package assemble

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/perf"
)

// hfModels is the model package's folder of real dense configs.
const hfModels = "../model/testdata/hf"

func TestDenseFamiliesRunFromModelsDir(t *testing.T) {
	for _, name := range []string{
		"mistralai/Mistral-7B-Instruct-v0.3", "Qwen/Qwen2.5-7B-Instruct", "microsoft/phi-4",
		"ibm-granite/granite-3.1-8b-instruct", "allenai/OLMo-2-1124-7B", "allenai/OLMo-7B-0424-hf", "HuggingFaceTB/SmolLM3-3B", "internlm/internlm2_5-7b-chat",
	} {
		t.Run(name, func(t *testing.T) {
			b := mustBuild(t, name, "predictor: {kind: roofline}\nhardware: H100\nmodels: "+hfModels+"\nmodel: "+name+
				"\ninstances: [{tp: 2}]\nworkload: {limit: 20}\ncheck_invariants: true\n")
			if done := runToEnd(t, name, b); done != 20 {
				t.Fatalf("%d requests ended, want 20", done)
			}
		})
	}
}

// A Mistral config is timed exactly as the same config labelled llama:
// the registry maps mistral onto the Llama layer catalog.
func TestMistralTimedAsLlama(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(hfModels, "mistralai/Mistral-7B-Instruct-v0.3.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	relabelled := strings.Replace(string(data), `"model_type": "mistral"`, `"model_type": "llama"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "x", "as-llama.json"), []byte(relabelled), 0o644); err != nil {
		t.Fatal(err)
	}
	step := func(models, name string) int64 {
		b := mustBuild(t, name, "predictor: {kind: roofline}\nhardware: H100\nmodels: "+models+"\nmodel: "+name+"\n")
		return b.Instance(0).Predictor.StepTime(&perf.Batch{NumDecode: 16, DecodeKVSum: 16000, DecodeKVMax: 1000, DecodeKVMin: 1000, PrefillSeqs: 1, PrefillTokens: 512})
	}
	m, l := step(hfModels, "mistralai/Mistral-7B-Instruct-v0.3"), step(dir, "x/as-llama")
	if m != l || m <= 0 {
		t.Errorf("mistral step %d ns, llama-labelled %d ns: want equal and > 0", m, l)
	}
}

func TestUnsupportedArchitectureAndSlidingWindowErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "g"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `{"model_type":"gpt_bigcode","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100}`
	if err := os.WriteFile(filepath.Join(dir, "g", "m.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ yaml, want string }{
		{"models: " + dir + "\nmodel: g/m\n", `"gpt_bigcode" is not supported; supported: `},
		{"models: " + hfModels + "\nmodel: mistralai/Mistral-7B-v0.1\n", "instances[0]: model mistralai/Mistral-7B-v0.1: sliding-window attention (sliding_window 4096 tokens)"},
	}
	for _, tt := range tests {
		s, err := config.Parse([]byte("predictor: {kind: roofline}\nhardware: H100\n"+tt.yaml), "s.yaml")
		if err != nil {
			t.Fatal(err)
		}
		_, err = Build(s, config.Source{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("got %v, want %q", err, tt.want)
		}
		if strings.Contains(tt.want, "supported") {
			for _, mt := range model.SupportedModelTypes() {
				if !strings.Contains(err.Error(), mt) {
					t.Errorf("error %q does not list %s", err, mt)
				}
			}
		}
	}
	// Within the window the same config runs: full attention is exact.
	mustBuild(t, "win", "predictor: {kind: roofline}\nhardware: H100\nmodels: "+hfModels+"\nmodel: mistralai/Mistral-7B-v0.1\nengine: {max_model_len: 4096}\n")
}
