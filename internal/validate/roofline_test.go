package validate

import (
	"math"
	"testing"
)

// TestLlamaMatchesVLLMWithRoofline pins the out-of-sample accuracy of the
// calibrated roofline predictor against the measured vLLM run: the embedded
// calibration was fitted on the Qwen3-32B tables only, yet every one of the
// 15 statistics of the Llama-3.1-8B run must be within 10 %. The run
// saturates at max_num_seqs, so TTFT (queueing) amplifies any bias of the
// step time several times.
func TestLlamaMatchesVLLMWithRoofline(t *testing.T) {
	rep, err := Run(Options{Measured: measured(t, "RTXPRO6000-Llama-3.1-8B"), Name: "RTXPRO6000-Llama-3.1-8B",
		Predictor: "roofline", CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.String())
	if len(rep.Stats) != 15 {
		t.Fatalf("%d statistics, want 15", len(rep.Stats))
	}
	for _, r := range rep.Stats {
		if r.Measured <= 0 || r.Simulated <= 0 {
			t.Errorf("%s %s: measured %.2f simulated %.2f", r.Metric, r.Stat, r.Measured, r.Simulated)
		}
		if math.Abs(r.DiffPct) >= 10 {
			t.Errorf("%s %s: %+.2f %% off the measured run (limit 10 %%)", r.Metric, r.Stat, r.DiffPct)
		}
	}
	if rep.MaxAbsDiffPct >= 10 {
		t.Errorf("max |diff| %.2f %% >= 10 %%", rep.MaxAbsDiffPct)
	}
}
