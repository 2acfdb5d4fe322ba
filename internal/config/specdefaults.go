package config

import "fmt"

// SpecDefault is the acceptance a speculative method gets when a scenario
// sets none: vLLM's per-position rates a1..am (unconditional: P(A >= i)),
// as measured at m proposals in a cited public run.
type SpecDefault struct {
	// Rates are the measured per-position rates; a geometric series αⁱ
	// where the source gives only a mean acceptance length.
	Rates []float64
	// Source cites the measurement.
	Source string
}

// specDefaults are the default acceptances per method. Each source is a
// public measurement (docs/speculative.md#default-acceptance lists the
// derivations). draft_model has none: its acceptance is a property of
// the draft/target pair.
var specDefaults = map[SpecMethod]SpecDefault{
	// Mean acceptance length 1.89 at k=2 and 2.08 at k=4 (MT-Bench,
	// Llama-3-8B-Instruct with the EAGLE head, vLLM V1): 1+α+α² = 1.89
	// gives α = 0.568, the k=4 figure α = 0.542; α = 0.56.
	SpecEagle: {Rates: geometric(0.56, 4), Source: "vLLM PR #16035, EAGLE on MT-Bench, Llama-3-8B-Instruct"},
	// Mean acceptance length 3.53 at k=7 (MT-Bench, Llama-3.1-8B-Instruct
	// with yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, temperature 0, vLLM):
	// Σ_{i=0..7} αⁱ = 3.53 gives α = 0.743.
	SpecEagle3: {Rates: geometric(0.743, 7), Source: "vLLM issue #26191, EAGLE-3 on MT-Bench, Llama-3.1-8B-Instruct"},
	// DeepSeek-V3 technical report (arXiv 2412.19437, §5.4.3): the second
	// token predicted by the MTP module is accepted 85 to 90 % of the
	// time; the lower end. One proposal: the one MTP module DeepSeek-V3
	// ships; longer drafts extend it geometrically.
	SpecMTP: {Rates: []float64{0.85}, Source: "DeepSeek-V3 technical report §5.4.3, MTP second-token acceptance 85-90 %"},
	// Per-position acceptance 0.81, 0.74, 0.70, 0.68, 0.66 per draft at
	// k=5 (prompt_lookup 2..5) on code edits (vdaita/edit_5k_char), vLLM;
	// the n-gram proposer found a match in 993 of the 1,814 decode steps
	// (821 tokens were generated without a draft), and servesim proposes
	// in every step, so the rates are per step: 993/1814 of each. A
	// workload that repeats its prompt; chat repeats far less.
	SpecNgram: {Rates: scaled(993.0/1814, 0.81, 0.74, 0.70, 0.68, 0.66), Source: "vLLM PR #24344, n-gram on code edits (edit_5k_char), per step"},
}

// scaled returns f times each rate.
func scaled(f float64, rates ...float64) []float64 {
	out := make([]float64, len(rates))
	for i, a := range rates {
		out[i] = f * a
	}
	return out
}

// geometric returns α, α², ..., αⁿ.
func geometric(alpha float64, n int) []float64 {
	out := make([]float64, n)
	a := 1.0
	for i := range out {
		a *= alpha
		out[i] = a
	}
	return out
}

// DefaultAcceptance returns method's default per-position acceptance for
// k proposals and its source; ok is false for a method without one
// (draft_model). Up to the measured length the rates are the measured
// ones; beyond it each further position keeps the last measured
// conditional rate (a_m / a_{m-1}, or a_1 for one measured position).
func DefaultAcceptance(method SpecMethod, k int) (rates []float64, source string, ok bool) {
	d, ok := specDefaults[method]
	if !ok || k < 1 || k > MaxSpecTokens {
		return nil, "", false
	}
	m := len(d.Rates)
	rates = make([]float64, k)
	copy(rates, d.Rates[:min(k, m)])
	cond := d.Rates[0]
	if m > 1 {
		cond = d.Rates[m-1] / d.Rates[m-2]
	}
	for i := m; i < k; i++ {
		rates[i] = rates[i-1] * cond
	}
	return rates, d.Source, true
}

// DefaultAcceptanceNote is how a run describes a default acceptance:
// "default (SOURCE)" with the rates used.
func DefaultAcceptanceNote(rates []float64, source string) string {
	mean := 1.0
	for _, a := range rates {
		mean += a
	}
	return fmt.Sprintf("acceptance per position %s, %.2f tokens per verification: default (%s)", formatRates(rates), mean, source)
}

func formatRates(r []float64) string {
	s := "["
	for i, a := range r {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%.3g", a)
	}
	return s + "]"
}
