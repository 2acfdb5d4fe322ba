package assemble

import (
	"testing"

	"github.com/servesim/servesim/internal/config"
)

// TestFP8BlocksByHand checks the hand computation of docs/quantization.md
// on examples/h100-70b-fp8.yaml (Llama-3.1-70B, tp 4): FP8 weights save
// one byte on each of the 80 x (8192*10240 + 8192*8192 + 3*8192*28672) =
// 68,451,041,280 linear parameters, 17,112,760,320 B per tp-4 rank, which
// is 13,056 blocks of 16 x 2*80*(8/4)*128*2 = 1,310,720 B; an FP8 KV cache
// then holds exactly twice the blocks.
func TestFP8BlocksByHand(t *testing.T) {
	blocks := func(quant, kv string) int {
		t.Helper()
		s, src, err := config.Load("../../examples/h100-70b-fp8.yaml")
		if err != nil {
			t.Fatal(err)
		}
		s.Quantization, s.KVCacheDtype = quant, kv
		b, err := Build(s, src)
		if err != nil {
			t.Fatal(err)
		}
		return b.Instances()[0].NumBlocks
	}
	const linear = 80 * (8192*10240 + 8192*8192 + 3*8192*28672)
	const block = 16 * 2 * 80 * (8 / 4) * 128 * 2
	if linear != 68_451_041_280 || linear/4/block != 13_056 || (linear/4)%block != 0 {
		t.Fatalf("hand figures: %d parameters, %d blocks", linear, linear/4/block)
	}
	bf16, fp8 := blocks("", "auto"), blocks("fp8", "auto")
	if fp8-bf16 != 13_056 {
		t.Errorf("fp8 weights: %d blocks against bf16's %d, +%d; want +13,056", fp8, bf16, fp8-bf16)
	}
	if kv := blocks("fp8", "fp8"); kv != 2*fp8 {
		t.Errorf("fp8 KV: %d blocks, want 2 x %d", kv, fp8)
	}
}
