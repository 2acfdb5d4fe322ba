package assemble

import (
	"fmt"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/config"
)

// gpt-oss-120b on one H100 with MXFP4 experts: the engine's blocks are
// vLLM's pool less ⌈128/16⌉ + 1 = 9 sliding blocks for each of the 256
// sequences (one full group, so one pool block per engine block); every
// request runs to its end.
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
	const head = "hybrid, 2 KV cache groups of 18 layers (1 full, 1 sliding-window 128), 9 local blocks per sequence; vLLM pool "
	if !strings.HasPrefix(in.KVLayout, head) {
		t.Fatalf("KV layout %q", in.KVLayout)
	}
	var pool int
	if _, err := fmt.Sscanf(strings.TrimPrefix(in.KVLayout, head), "%d blocks", &pool); err != nil {
		t.Fatal(err)
	}
	if in.NumBlocks != pool-256*9 || pool < 10000 {
		t.Errorf("engine blocks %d, pool %d; want pool - 2304 and a pool of over 10,000 blocks", in.NumBlocks, pool)
	}
	if done := runToEnd(t, "oss", b); done != 30 {
		t.Errorf("%d requests ended, want 30", done)
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
