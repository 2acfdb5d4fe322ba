package main

import (
	"strings"
	"testing"
)

// The frontier-model examples run to the end, and the summary names each
// pool's parallelism and KV layout.
func TestFrontierExamples(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"deepseek-r1-h200-dp8ep8.yaml", []string{"Instances r1: 1 x mixed on H200 tp 1 dp 8 ep 8", "KV cache: MLA latent, 512 + 64 elements x 2 B per token per layer (70272 B per token on every tp rank)"}},
		{"gpt-oss-120b-h100.yaml", []string{"Instances oss: 1 x mixed on H100 tp 1", "KV cache: hybrid, 2 KV cache groups of 18 layers (1 full, 1 sliding-window 128)"}},
		{"llama4-scout-h100x8.yaml", []string{"Instances scout: 1 x mixed on H100 tp 8", "KV cache: hybrid, 4 KV cache groups of 12 layers (1 full, 3 chunked-local 8192)"}},
		{"gemma-3-27b-h100.yaml", []string{"Instances gemma: 1 x mixed on H100 tp 1", "KV cache: hybrid, 7 KV cache groups of 10 layers (1 full, 6 sliding-window 1024)"}},
		{"pd-gpt-oss-h100.yaml", []string{"Instances prefill: 1 x prefill on H100 tp 1", "Instances decode: 1 x decode on H100 tp 1", "KV cache: every layer as full attention (vLLM's hybrid KV cache manager off: vLLM 0.19's default with a KV connector (P/D, kv_tiers))"}},
		{"pd-deepseek-v3.yaml", []string{"Instances prefill: 1 x prefill on H200 tp 8", "Instances decode: 1 x decode on H200 tp 8", "KV cache: MLA latent"}},
		{"deepseek-r1-h200-dp16ep16.yaml", []string{"Instances r1: 1 x mixed on H200 tp 1 dp 16 ep 16", "expert parallel: ep 16 over 2 nodes of 8 GPUs (dp 8 a node); all-to-all deepep_low_latency across the NICs"}},
		{"pd-deepseek-v3-wide-ep.yaml", []string{"Instances prefill: 1 x prefill on H200 tp 1 dp 16 ep 16", "all-to-all deepep_high_throughput", "Instances decode: 1 x decode on H200 tp 1 dp 32 ep 32", "ep 32 over 4 nodes of 8 GPUs", "all-to-all deepep_low_latency", "KV transfer"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			code, stdout, stderr := run(t, "run", "-c", "../../examples/"+tt.file, "--limit", "300", "--check-invariants")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, w := range append(tt.want, "finished:                                           300") {
				if !strings.Contains(stdout, w) {
					t.Errorf("summary lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}
