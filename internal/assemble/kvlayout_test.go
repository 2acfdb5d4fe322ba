package assemble

import (
	"fmt"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/engine"
)

// gpt-oss-120b on one H100 with MXFP4 experts: the engine runs on vLLM's
// whole pool (one full group: the sliding group's blocks are freed as the
// window slides), a block of 18 layers x 16 tokens x 2 x 8 KV heads x 64 x
// 2 B = 589,824 B; the sliding layers hold 18 x 2,048 = 36,864 of the
// 73,728 KV bytes per token. Every request runs to its end.
func TestHybridKVOnOneH100(t *testing.T) {
	y := `predictor: {kind: roofline}
model: openai/gpt-oss-120b
hardware: H100
quantization: mxfp4
engine: {max_num_seqs: 256}
workload: {limit: 30}
check_invariants: true
`
	b := mustBuild(t, "oss.yaml", y)
	in := b.Instances()[0]
	const head = "hybrid, 2 KV cache groups of 18 layers (1 full, 1 sliding-window 128); one pool of "
	if !strings.HasPrefix(in.KVLayout, head) {
		t.Fatalf("KV layout %q", in.KVLayout)
	}
	var pool int
	if _, err := fmt.Sscanf(strings.TrimPrefix(in.KVLayout, head), "%d blocks", &pool); err != nil {
		t.Fatal(err)
	}
	if in.NumBlocks != pool || pool < 10000 || in.Engine.Local != (engine.LocalKV{Groups: 1, Window: 128}) {
		t.Errorf("engine blocks %d, pool %d, local groups %+v; want the pool, over 10,000 blocks, one sliding group of 128", in.NumBlocks, pool, in.Engine.Local)
	}
	if in.kvPerToken != 73728 || in.localKV != 36864 {
		t.Errorf("KV per token %d, of it in sliding layers %d; want 73728 and 36864", in.kvPerToken, in.localKV)
	}
	if done := runToEnd(t, "oss", b); done != 30 {
		t.Errorf("%d requests ended, want 30", done)
	}

	// A KV connector (kv_tiers here) turns vLLM 0.19's hybrid manager off:
	// every layer as full attention, 36 instead of 18 layers a block, half
	// the pool. Asked for with the connector, the engine keeps the static
	// reservation (its KV tiers do not follow windows).
	full := mustBuild(t, "oss.yaml", y+"kv_tiers: {}\n").Instances()[0]
	if !strings.HasPrefix(full.KVLayout, "every layer as full attention") || full.NumBlocks != pool/2 || full.Engine.Local.Groups != 0 {
		t.Errorf("with kv_tiers: layout %q, %d blocks; want every layer as full attention, %d blocks", full.KVLayout, full.NumBlocks, pool/2)
	}
	static := mustBuild(t, "oss.yaml", strings.Replace(y, "engine: {max_num_seqs: 256}", "engine: {max_num_seqs: 256, disable_hybrid_kv_cache_manager: false}", 1)+"kv_tiers: {}\n").Instances()[0]
	const staticHead = "hybrid, 2 KV cache groups of 18 layers (1 full, 1 sliding-window 128), 9 local blocks per sequence; vLLM pool "
	if !strings.HasPrefix(static.KVLayout, staticHead) || static.NumBlocks != pool-256*9 || static.Engine.Local.Groups != 0 || static.localKV != 0 {
		t.Errorf("with kv_tiers and the hybrid manager on: layout %q, %d blocks, local groups %d; want the static reservation, %d blocks", static.KVLayout, static.NumBlocks, static.Engine.Local.Groups, pool-256*9)
	}
}

// DeepSeek-V3's MLA latent is the KV of every tensor-parallel rank:
// (512 + 64) x 2 B x 61 layers = 70,272 B per token at tp 8.
func TestMLAKVPerGPU(t *testing.T) {
	y := `predictor: {kind: roofline}
model: deepseek-ai/DeepSeek-V3
hardware: H200
quantization: fp8
instances: [{name: v3, tp: 8}]
workload: {limit: 20}
`
	b := mustBuild(t, "v3.yaml", y)
	in := b.Instances()[0]
	if in.kvPerToken != 70272 || !strings.Contains(in.KVLayout, "MLA latent, 512 + 64 elements x 2 B") {
		t.Errorf("KV per token %d, layout %q; want 70272 and the MLA latent", in.kvPerToken, in.KVLayout)
	}
	if done := runToEnd(t, "v3", b); done != 20 {
		t.Errorf("%d requests ended, want 20", done)
	}
}

// A quantised checkpoint left unquantised by the scenario is pointed at
// its own format when it does not fit.
func TestCheckpointQuantHint(t *testing.T) {
	s, err := config.Parse([]byte("predictor: {kind: roofline}\nmodel: openai/gpt-oss-120b\nhardware: H100\n"), "oss.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(s, config.Source{})
	if err == nil || !strings.Contains(err.Error(), "the openai/gpt-oss-120b checkpoint ships mxfp4 weights (config.json quantization_config): set quantization: mxfp4") {
		t.Fatalf("want the checkpoint's format named, got %v", err)
	}
}

// vLLM turns its hybrid manager off for chunked local attention with an
// EAGLE-style proposer (Llama 4 Scout with eagle: every layer as full
// attention), not for sliding windows (gpt-oss with eagle keeps it; the
// head's one layer is full attention and runs).
func TestHybridManagerWithEagle(t *testing.T) {
	for _, c := range []struct{ model, extra, want string }{
		{"meta-llama/Llama-4-Scout-17B-16E-Instruct", "instances: [{tp: 8}]\n", "every layer as full attention (vLLM's hybrid KV cache manager off: chunked local attention with an EAGLE-style proposer)"},
		{"openai/gpt-oss-120b", "quantization: mxfp4\n", "hybrid, 2 KV cache groups of 18 layers (1 full, 1 sliding-window 128); one pool of "},
	} {
		y := "predictor: {kind: roofline}\nmodel: " + c.model + "\nhardware: H100\n" + c.extra +
			"engine: {max_num_seqs: 64, speculative: {method: eagle, num_speculative_tokens: 2}}\nworkload: {limit: 10}\ncheck_invariants: true\n"
		b := mustBuild(t, "eagle.yaml", y)
		if in := b.Instances()[0]; !strings.HasPrefix(in.KVLayout, c.want) {
			t.Errorf("%s with eagle: KV layout %q, want %q", c.model, in.KVLayout, c.want)
		}
		if done := runToEnd(t, "eagle", b); done != 10 {
			t.Errorf("%s with eagle: %d requests ended, want 10", c.model, done)
		}
	}
}
