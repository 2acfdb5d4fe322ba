package calibrate

import (
	"testing"

	"github.com/servesim/servesim/internal/hw"
)

// vLLM runs FlashAttention 3, which packs GQA, on compute capability 9.x
// only: the H100 and H200 get packed attention, the others do not.
// TestHWOfPacksGQAOnHopper checks the attention kernel's shape by
// compute capability: FlashAttention 3 (GQA packed in every step) on 9.x,
// FlashInfer on 10.x, FlashAttention 2 (decode queries swapped by a
// transpose) on 8.x and 12.x.
func TestHWOfPacksGQAOnHopper(t *testing.T) {
	swap := map[string]bool{"H100": false, "H200": false, "B200": false, "GB300": false,
		"A100": true, "RTXPRO6000": true, "L40S": true, "RTX3090": true}
	for name, want := range map[string]bool{"H100": true, "H200": true, "A100": false, "RTXPRO6000": false, "B200": false, "GB300": false, "L40S": false, "RTX3090": false} {
		a, err := hw.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		rh, err := HWOf(a, "bf16")
		if err != nil {
			t.Fatal(err)
		}
		if rh.PackGQA != want {
			t.Errorf("%s (compute capability %v): PackGQA %v, want %v", name, a.ComputeCapability, rh.PackGQA, want)
		}
		if rh.SwapGQADecode != swap[name] {
			t.Errorf("%s (compute capability %v): SwapGQADecode %v, want %v", name, a.ComputeCapability, rh.SwapGQADecode, swap[name])
		}
	}
}
