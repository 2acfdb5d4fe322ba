package assemble

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/quant"
)

// TestFP8KVBackendNote: an fp8 KV cache is flagged on the GPUs where
// vLLM's FlashAttention backend cannot store it (compute capability
// other than 9.x, whose FlashAttention 3 can, and 10.x, which runs
// FlashInfer), and nowhere else.
func TestFP8KVBackendNote(t *testing.T) {
	for _, c := range []struct {
		kv   string
		cc   float64
		want bool
	}{
		{quant.KVFP8E4M3, 8.0, true},  // A100
		{quant.KVFP8E4M3, 8.9, true},  // L40S
		{quant.KVFP8E4M3, 12.0, true}, // RTX PRO 6000
		{quant.KVFP8E5M2, 8.6, true},
		{quant.KVFP8E4M3, 9.0, false},  // H100
		{quant.KVFP8E4M3, 10.0, false}, // B200
		{quant.KVFP8E4M3, 10.3, false}, // B300
		{quant.KVFP8E4M3, 0, false},    // unknown
		{quant.KVAuto, 8.0, false},
	} {
		note := fp8KVBackendNote(quant.Format{KV: c.kv}, hw.Accelerator{Name: "X", ComputeCapability: c.cc})
		if (note != "") != c.want || (c.want && !strings.Contains(note, "FlashAttention 3")) {
			t.Errorf("kv %s, compute capability %g: note %q, want one: %v", c.kv, c.cc, note, c.want)
		}
	}
}
