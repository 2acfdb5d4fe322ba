package runner

import (
	"maps"
	"math"
	"testing"

	"github.com/servesim/servesim/internal/metrics"
)

const specPD = `
name: spec-pd
model: meta-llama/Llama-3.1-8B
hardware: H100
predictor: {kind: roofline}
engine: {speculative: {method: eagle, num_speculative_tokens: 3, acceptance_per_position: [0.8, 0.6, 0.4]}}
instances:
  - {name: p, role: prefill}
  - {name: d, role: decode}
workload:
  synthetic:
    requests: 200
    arrival: {kind: poisson, rate: 8}
    input: {kind: lognormal, mean: 500, sigma: 0.5}
    output: {kind: lognormal, mean: 150, sigma: 0.5}
`

// TestSpecRunDeterministic: a disaggregated run with speculative decoding
// on both groups (the prefill side computes the head's KV of the prompt) (invariants checked) is byte-identical when
// repeated, every request finishes, and the summary's acceptance matches
// the per-position vector: rate (0.8+0.6+0.4)/3, mean accepted length
// 1 + 1.8 = 2.8, within sampling error.
func TestSpecRunDeterministic(t *testing.T) {
	a, b := runDigests(t, "spec-pd", specPD), runDigests(t, "spec-pd", specPD)
	if !maps.Equal(a, b) {
		t.Fatalf("same scenario and seed, different outputs:\n%v\n%v", a, b)
	}
	res, err := Run(buildYAML(t, "spec-pd.yaml", specPD), Options{})
	if err != nil {
		t.Fatal(err)
	}
	sp := res.Speculative
	if res.Finished != 200 || sp == nil || sp.Drafts < 10000 {
		t.Fatalf("finished %d, speculative %+v; want 200 and 10k+ verifications", res.Finished, sp)
	}
	// Per draft, A (accepted) has mean 1.8 and variance
	// E[A^2] - 1.8^2 = (0.2x1 + 0.2x4 + 0.4x9) - 3.24 = 1.36.
	se := math.Sqrt(1.36 / float64(sp.Drafts))
	if d := sp.MeanAcceptedLength - 2.8; math.Abs(d) > 4*se {
		t.Errorf("mean accepted length %.4f, want 2.8 ± %.4f", sp.MeanAcceptedLength, 4*se)
	}
	if d := sp.AcceptanceRate - 0.6; math.Abs(d) > 4*se/3 {
		t.Errorf("acceptance rate %.4f, want 0.6", sp.AcceptanceRate)
	}
	if !(sp.TokensPerStep <= sp.MeanAcceptedLength && sp.TokensPerStep > 1) || !(sp.DraftShare > 0 && sp.DraftShare < 1) {
		t.Errorf("tokens per step %.3f (mean accepted length %.3f), draft share %.3f", sp.TokensPerStep, sp.MeanAcceptedLength, sp.DraftShare)
	}
}

// TestSpecZeroAcceptanceCostsMore: on the calibrated roofline (H100,
// Llama-3.1-8B), EAGLE with α = 0 yields exactly one token per step, as
// without speculation, and every TPOT statistic is higher: each step
// verifies 3 more tokens per request and runs the head 3 times.
func TestSpecZeroAcceptanceCostsMore(t *testing.T) {
	const base = `
model: meta-llama/Llama-3.1-8B
hardware: H100
predictor: {kind: roofline}
workload:
  max_concurrency: 8
  synthetic: {requests: 64, arrival: {kind: burst}, input: {kind: fixed, mean: 500}, output: {kind: fixed, mean: 100}}
`
	run := func(extra string) metrics.Result {
		res, err := Run(buildYAML(t, "s.yaml", base+extra), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	off := run("")
	on := run("engine: {speculative: {method: eagle, num_speculative_tokens: 3, acceptance_rate: 0}}\n")
	sp := on.Speculative
	if sp == nil || sp.Accepted != 0 || sp.TokensPerStep != 1 || sp.MeanAcceptedLength != 1 || on.OutputTokens != off.OutputTokens {
		t.Fatalf("α = 0: %+v, %d output tokens (off: %d); want one token per step, none accepted", sp, on.OutputTokens, off.OutputTokens)
	}
	if !(on.TPOT.Min > off.TPOT.Min && on.TPOT.Mean > off.TPOT.Mean && on.TPOT.Max > off.TPOT.Max) {
		t.Errorf("TPOT min/mean/max %.3f/%.3f/%.3f ms with α = 0, %.3f/%.3f/%.3f without; want every one higher",
			on.TPOT.Min, on.TPOT.Mean, on.TPOT.Max, off.TPOT.Min, off.TPOT.Mean, off.TPOT.Max)
	}
}
