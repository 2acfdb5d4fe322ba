package assemble

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/config"
)

// TestBatchDefaultsFollowVLLM: a scenario that leaves max_num_seqs and
// max_num_batched_tokens unset gets vLLM 0.19's `vllm serve` defaults for
// each group's accelerator (EngineArgs.get_batch_defaults): 1024 / 8192 on
// devices of at least 70 GiB other than the A100 (RTXPRO6000 94.97 GiB,
// H100 79.22 GiB), 256 / 2048 on the A100 and on smaller devices (RTX4090
// 23.65 GiB, L40S 48 GiB, an H100 group overridden to 64 GB). A value the
// scenario sets is kept, and each origin is reported.
func TestBatchDefaultsFollowVLLM(t *testing.T) {
	for _, c := range []struct {
		name, yaml         string
		seqs, tokens       int
		seqsFrom, toksFrom string
	}{
		{"big blackwell", "hardware: RTXPRO6000\n", 1024, 8192, "vLLM default for RTXPRO6000 (95.0 GiB >= 70 GiB)", "vLLM default for RTXPRO6000 (95.0 GiB >= 70 GiB)"},
		{"h100", "hardware: H100\npredictor: {kind: roofline}\n", 1024, 8192, "vLLM default for H100 (79.2 GiB >= 70 GiB)", "vLLM default for H100 (79.2 GiB >= 70 GiB)"},
		{"a100 is excluded", "hardware: A100\npredictor: {kind: roofline}\n", 256, 2048, "vLLM default for A100 (A100: the small defaults)", "vLLM default for A100 (A100: the small defaults)"},
		{"24 GB card", "hardware: RTX4090\n", 256, 2048, "vLLM default for RTX4090 (23.6 GiB < 70 GiB)", "vLLM default for RTX4090 (23.6 GiB < 70 GiB)"},
		{"memory override below 70 GiB", "hardware: H100\npredictor: {kind: roofline}\ninstances: [{memory_gb: 64}]\n", 256, 2048, "vLLM default for H100 (59.6 GiB < 70 GiB)", "vLLM default for H100 (59.6 GiB < 70 GiB)"},
		{"scenario sets seqs", "engine: {max_num_seqs: 128}\n", 128, 8192, FromScenario, "vLLM default for RTXPRO6000 (95.0 GiB >= 70 GiB)"},
		// Defaulted max_num_seqs is capped by a smaller token budget:
		// min(1024, 512) = 512.
		{"seqs capped by tokens", "engine: {max_num_batched_tokens: 512}\n", 512, 512, "vLLM default for RTXPRO6000 (95.0 GiB >= 70 GiB)", FromScenario},
		// Without chunked prefill the defaulted budget is at least
		// max_model_len: max(8192, 20000) = 20000.
		{"no chunked prefill", "engine: {enable_chunked_prefill: false, max_model_len: 20000}\n", 1024, 20000, "vLLM default for RTXPRO6000 (95.0 GiB >= 70 GiB)", "vLLM default for RTXPRO6000 (95.0 GiB >= 70 GiB)"},
		// And at most max_num_seqs x max_model_len: min(8192, 2 x 1000).
		{"budget capped by seqs x len", "engine: {max_num_seqs: 2, max_model_len: 1000}\n", 2, 2000, FromScenario, "vLLM default for RTXPRO6000 (95.0 GiB >= 70 GiB)"},
		{"group override", "engine: {max_num_seqs: 64}\ninstances: [{engine: {max_num_batched_tokens: 4096}}]\n", 64, 4096, FromScenario, FromScenario},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := mustBuild(t, "d.yaml", c.yaml)
			g := b.Describe().Groups[0]
			if g.MaxNumSeqs != c.seqs || g.MaxNumBatchedTokens != c.tokens {
				t.Errorf("max_num_seqs %d, max_num_batched_tokens %d; want %d, %d", g.MaxNumSeqs, g.MaxNumBatchedTokens, c.seqs, c.tokens)
			}
			if g.MaxNumSeqsFrom != c.seqsFrom || g.MaxNumBatchedTokensFrom != c.toksFrom {
				t.Errorf("origins %q, %q; want %q, %q", g.MaxNumSeqsFrom, g.MaxNumBatchedTokensFrom, c.seqsFrom, c.toksFrom)
			}
			in := b.instances[0].Engine
			if in.MaxNumSeqs != c.seqs || in.MaxNumBatchedTokens != c.tokens {
				t.Errorf("engine config %d / %d, want %d / %d", in.MaxNumSeqs, in.MaxNumBatchedTokens, c.seqs, c.tokens)
			}
		})
	}
}

// TestDefaultScenarioStatesItsBatchLimits: the embedded scenario sets the
// measured run's max_num_seqs 128 and max_num_batched_tokens 2048, and the
// header says they come from the scenario; a one-line file on the same
// accelerator gets vLLM's defaults and says so, so the two never differ
// silently.
func TestDefaultScenarioStatesItsBatchLimits(t *testing.T) {
	def, err := config.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	one, err := config.Parse([]byte("hardware: RTXPRO6000\n"), "one.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s    *config.Scenario
		want string
	}{
		{def, "max_num_seqs 128, max_num_batched_tokens 2048 (set by the scenario)"},
		{one, "max_num_seqs 1024, max_num_batched_tokens 8192 (vLLM default for RTXPRO6000 (95.0 GiB >= 70 GiB))"},
	} {
		b, err := Build(c.s, config.Source{})
		if err != nil {
			t.Fatal(err)
		}
		if text := strings.Join(b.Describe().Lines(), "\n"); !strings.Contains(text, c.want) {
			t.Errorf("header lacks %q:\n%s", c.want, text)
		}
	}
}

// TestResolvedReplaysTheSameEngines: the resolved scenario (what
// `run --print-config` prints) states every group's effective engine
// settings, and building it again gives the same engines, KV capacity and
// origins "scenario" for what were defaults.
func TestResolvedReplaysTheSameEngines(t *testing.T) {
	b := mustBuild(t, "r.yaml", "instances: [{count: 2}, {hardware: RTX4090, engine: {max_num_seqs: 64}}]\nworkload: {limit: 5}\n")
	r := b.Resolved()
	g1 := r.Instances[1].Engine
	// RTX4090 (23.65 GiB): the small defaults, max_num_seqs as set; the
	// model's 131072-token context; graphs up to min(2 x 64, 512, 2048).
	if g1.MaxNumSeqs != 64 || g1.MaxNumBatchedTokens != 2048 || g1.MaxModelLen != 131072 || g1.NumGPUBlocks != b.instances[2].NumBlocks ||
		g1.CUDAGraphMode != "full_and_piecewise" || g1.CUDAGraphCaptureSizes[len(g1.CUDAGraphCaptureSizes)-1] != 128 {
		t.Errorf("resolved group 1 engine %+v", *g1)
	}
	y, err := config.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	b2 := mustBuild(t, "resolved.yaml", string(y))
	for i := range b.instances {
		if b.instances[i].Engine != b2.instances[i].Engine {
			t.Errorf("instance %d: engine %+v, replayed %+v", i, b.instances[i].Engine, b2.instances[i].Engine)
		}
	}
	if got := b2.Describe().Groups[0].MaxNumSeqsFrom; got != FromScenario {
		t.Errorf("replayed origin %q, want scenario", got)
	}
}
