package config

import (
	"math"
	"strings"
	"testing"
)

func TestDefaultAcceptanceByHand(t *testing.T) {
	tests := []struct {
		method SpecMethod
		k      int
		want   []float64
		mean   float64 // 1 + Σ a_i, by hand
		source string
	}{
		// α = 0.56: 0.56, 0.3136.
		{"eagle", 2, []float64{0.56, 0.3136}, 1.8736, "PR #16035"},
		// α = 0.743; over 7 positions Σ_{i=0..7} αⁱ = 3.53, the measured
		// mean acceptance length it was fitted to.
		{"eagle3", 7, []float64{0.743, 0.552049, 0.410172, 0.304758, 0.226435, 0.168241, 0.125003}, 3.53, "issue #26191"},
		// One measured position (0.85); further ones keep 0.85.
		{"mtp", 3, []float64{0.85, 0.7225, 0.614125}, 3.186625, "DeepSeek-V3"},
		{"mtp", 1, []float64{0.85}, 1.85, "DeepSeek-V3"},
		// The measured five per draft times the share of steps with a
		// draft, 993/1814 = 0.547409; 1 + 0.547409 * 3.59 = 2.965, the
		// 5,376 tokens / 1,814 steps = 2.96 the run measured. Then the last
		// conditional rate 0.66/0.68.
		{"ngram", 6, []float64{0.443401, 0.405083, 0.383186, 0.372238, 0.361290, 0.361290 * 0.66 / 0.68}, 1 + 0.547409*3.59 + 0.361290*0.66/0.68, "PR #24344"},
		{"ngram", 5, []float64{0.443401, 0.405083, 0.383186, 0.372238, 0.361290}, 2.965, "PR #24344"},
	}
	for _, tt := range tests {
		rates, source, ok := DefaultAcceptance(tt.method, tt.k)
		if !ok || len(rates) != len(tt.want) || !strings.Contains(source, tt.source) {
			t.Fatalf("%s k=%d: %v %q %v", tt.method, tt.k, rates, source, ok)
		}
		mean := 1.0
		for i, a := range rates {
			if math.Abs(a-tt.want[i]) > 5e-7 {
				t.Errorf("%s k=%d: a%d = %v, want %v", tt.method, tt.k, i+1, a, tt.want[i])
			}
			mean += a
		}
		if math.Abs(mean-tt.mean) > 5e-3 {
			t.Errorf("%s k=%d: mean tokens per verification %.4f, want %.4f", tt.method, tt.k, mean, tt.mean)
		}
	}
	if _, _, ok := DefaultAcceptance("draft_model", 3); ok {
		t.Error("draft_model has a default")
	}
}

func TestSpeculativeWithoutAcceptance(t *testing.T) {
	// A method with a default needs no acceptance setting.
	if _, err := Parse([]byte("engine:\n  speculative: {method: eagle3, num_speculative_tokens: 3}\n"), "s.yaml"); err != nil {
		t.Errorf("eagle3 without acceptance: %v", err)
	}
	// draft_model has none: the error names the field and the choices.
	_, err := Parse([]byte("engine:\n  speculative: {method: draft_model, num_speculative_tokens: 3, draft_model: meta-llama/Llama-3.1-8B}\n"), "s.yaml")
	if err == nil || !strings.Contains(err.Error(), "engine.speculative: method draft_model has no default acceptance") {
		t.Errorf("draft_model without acceptance: %v", err)
	}
	// Two settings are still refused.
	_, err = Parse([]byte("engine:\n  speculative: {method: eagle, num_speculative_tokens: 2, acceptance_rate: 0.5, acceptance: trace}\n"), "s.yaml")
	if err == nil || !strings.Contains(err.Error(), "set at most one of") {
		t.Errorf("two acceptance settings: %v", err)
	}
}

// A huge num_speculative_tokens without an acceptance setting is refused
// by its range check; the default's lookup must not size a slice by it.
func TestSpeculativeHugeKWithoutAcceptance(t *testing.T) {
	_, err := Parse([]byte("engine:\n  speculative: {method: eagle, num_speculative_tokens: 4611686018427387904}\n"), "s.yaml")
	if err == nil || !strings.Contains(err.Error(), "engine.speculative.num_speculative_tokens") {
		t.Fatalf("got %v, want the num_speculative_tokens range error", err)
	}
	if _, _, ok := DefaultAcceptance("eagle", MaxSpecTokens+1); ok {
		t.Error("a default for more than MaxSpecTokens proposals")
	}
}
