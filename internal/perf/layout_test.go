package perf

import (
	"io/fs"
	"testing"
	"unsafe"

	"github.com/servesim/servesim/internal/assets"
)

// TestDecodeStateLayout: in a cluster an instance's predictor state has
// left the first-level cache by its next step, so a plain decode step
// should read few cache lines of it. The per-run engine time over a
// Profile holds the fields such a step reads (dec, run and its own
// profile run's up to plans) on its first two lines and starts on a
// line; a plan's hot part is two whole lines, as growPlans allocates the
// hot parts, whatever the counts met.
func TestDecodeStateLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layout is laid out for 64-bit platforms")
	}
	var e engineTime
	if size := unsafe.Sizeof(e); size%64 != 0 {
		t.Errorf("engineTime is %d bytes, not a multiple of 64: set engineTimePad", size)
	}
	if off := unsafe.Offsetof(e.own); off != 16 {
		t.Errorf("own starts at byte %d, not right after dec and run", off)
	}
	if end := unsafe.Offsetof(e.own) + unsafe.Offsetof(e.own.plans); end > 128 {
		t.Errorf("the profile run's hot fields end at byte %d, past the second cache line", end)
	}
	if size := unsafe.Sizeof(planHot{}); size != 128 {
		t.Errorf("planHot is %d bytes, not two cache lines", size)
	}
	root, err := fs.Sub(assets.FS(), "profiles")
	if err != nil {
		t.Fatal(err)
	}
	p, _, _ := embeddedProfile(t, root, "RTXPRO6000", "meta-llama/Llama-3.1-8B", "llama", 1, 32, 0, 0)
	for range 4 {
		run := ForRun(WithEngineTime(p, EngineTime{Layers: 32, LayerKernels: 10}), nil).(*engineTime)
		if run.run != &run.own {
			t.Fatal("the per-run engine time does not hold the profile run")
		}
		if at := uintptr(unsafe.Pointer(run)); at%64 != 0 {
			t.Errorf("the per-run engine time starts at %#x, not on a cache line", at)
		}
		for _, n := range []int{1, 7, 8, 9, 100, 255, 256, 300, decodePlanLimit - 1} {
			run.StepTime(&Batch{NumDecode: n, DecodeKVSum: int64(n) * 900, DecodeKVMin: 10, DecodeKVMax: 4000})
			if at := uintptr(unsafe.Pointer(&run.own.hot[0])); at%64 != 0 {
				t.Errorf("after %d decodes the plans' hot parts start at %#x, not on a cache line", n, at)
			}
		}
	}
}
