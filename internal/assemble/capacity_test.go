package assemble

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/config"
)

// buildOneGroup builds s with its instance groups replaced by one
// default group.
func buildOneGroup(t *testing.T, s *config.Scenario) *Built {
	t.Helper()
	s.Instances = nil
	s.FillGroups()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := Build(s, config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Llama-3.1-8B on one RTX 4090 (its embedded profile bundle) at 0.9: the
// KV capacity of docs/engine-time.md's worked example, 2,912 blocks at
// max_num_seqs 128 and 2,787 at 256 (the sampler's profiling pass doubles).
func TestRTX4090Capacity(t *testing.T) {
	for _, c := range []struct {
		seqs, want int
	}{{128, 2912}, {256, 2787}} {
		s := config.Default()
		s.Hardware = "RTX4090"
		s.Engine.MaxNumSeqs = c.seqs
		b := buildOneGroup(t, s)
		if got := b.instances[0].NumBlocks; got != c.want {
			t.Errorf("max_num_seqs %d: %d blocks, want %d", c.seqs, got, c.want)
		}
	}
}

// A pinned capacity (engine.num_gpu_blocks) is what the engines get, and
// the build still predicts the capacity from memory: the unpinned figure
// (2,912 blocks on the RTX 4090 above), or 0 with the reason when the model
// does not fit (Llama-3.1-70B on one 24 GB card).
func TestPinnedCapacityIsPredictedToo(t *testing.T) {
	for _, c := range []struct {
		model     string
		predicted int
		err       string
	}{{"meta-llama/Llama-3.1-8B", 2912, ""}, {"meta-llama/Llama-3.1-70B", 0, "RTX4090"}} {
		s := config.Default()
		s.Hardware, s.Model = "RTX4090", c.model
		s.Predictor.Kind = "roofline"
		s.Engine.MaxNumSeqs = 128
		s.Engine.NumGPUBlocks = 1000
		b := buildOneGroup(t, s)
		in := b.instances[0]
		if in.NumBlocks != 1000 || in.Engine.NumBlocks != 1000 || in.PredictedBlocks != c.predicted {
			t.Errorf("%s: %d blocks (engine %d), predicted %d; want 1000 and %d", c.model, in.NumBlocks, in.Engine.NumBlocks, in.PredictedBlocks, c.predicted)
		}
		if (c.err == "") != (in.PredictErr == nil) || in.PredictErr != nil && !strings.Contains(in.PredictErr.Error(), c.err) {
			t.Errorf("%s: prediction error %v, want one naming %q", c.model, in.PredictErr, c.err)
		}
	}
}

// TestLargeInstanceBlocks: a valid vLLM configuration with far more than
// 2^22 KV blocks per instance (Qwen3-30B-A3B at tp 4 x pp 2 on B200 with
// block_size 1: about 13 million) builds and runs; its blocks are those of
// block_size 16 times 16, to the block (each is the free KV memory divided
// by the bytes of one block, rounded down). Beyond the KV pool's own bound
// the error names the bound.
func TestLargeInstanceBlocks(t *testing.T) {
	const base = "predictor: {kind: roofline}\nmodel: Qwen/Qwen3-30B-A3B-Instruct-2507\nhardware: B200\nworkload: {limit: 5}\ninstances: [{tp: 4, pp: 2}]\n"
	one := mustBuild(t, "bs1.yaml", base+"engine: {block_size: 1}\n")
	sixteen := mustBuild(t, "bs16.yaml", base+"engine: {block_size: 16}\n")
	b1, b16 := one.instances[0].NumBlocks, sixteen.instances[0].NumBlocks
	if b1 <= 1<<22 || b1/16 != b16 {
		t.Fatalf("block_size 1: %d blocks, block_size 16: %d; want over %d and %d = %d / 16", b1, b16, 1<<22, b16, b1)
	}
	if done := runToEnd(t, "bs1.yaml", one); done != 5 {
		t.Fatalf("%d requests ended, want 5", done)
	}
	s, err := config.Parse([]byte(base+"engine: {block_size: 1, num_gpu_blocks: 134217729}\n"), "huge.yaml")
	if err == nil {
		_, err = Build(s, config.Source{})
	}
	if err == nil || !strings.Contains(err.Error(), "134217728") {
		t.Fatalf("num_gpu_blocks 2^27 + 1: got %v, want an error naming the bound 2^27", err)
	}
}
