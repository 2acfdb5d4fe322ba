package calibrate

import (
	"testing"

	"github.com/servesim/servesim/internal/hw"
)

// vLLM runs FlashAttention 3, which packs GQA, on compute capability 9.x
// only: the H100 and H200 get packed attention, the others do not.
func TestHWOfPacksGQAOnHopper(t *testing.T) {
	for name, want := range map[string]bool{"H100": true, "H200": true, "A100": false, "RTXPRO6000": false, "B200": false, "L40S": false, "RTX3090": false} {
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
	}
}
