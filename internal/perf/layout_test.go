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
// Profile holds the fields such a step reads (dec and its own profile
// run's up to plans) on its first line and starts on a line, and one
// over another predictor holds dec and inner on its first line; a plan's
// hot part is two whole lines, as newPlan allocates the hot parts,
// whatever the counts met.
func TestDecodeStateLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layout is laid out for 64-bit platforms")
	}
	var e engineTime
	if size := unsafe.Sizeof(e); size%64 != 0 {
		t.Errorf("engineTime is %d bytes, not a multiple of 64: set engineTimePad", size)
	}
	if end := unsafe.Offsetof(e.inner) + 16; end > 64 {
		t.Errorf("engineTime's inner ends at byte %d, past the first cache line", end)
	}
	var pe profileEngine
	if size := unsafe.Sizeof(pe); size != 128 {
		t.Errorf("profileEngine is %d bytes, not 128: set profileEnginePad", size)
	}
	if off := unsafe.Offsetof(pe.own); off != 8 {
		t.Errorf("own starts at byte %d, not right after dec", off)
	}
	if end := unsafe.Offsetof(pe.own) + unsafe.Offsetof(pe.own.plans); end > 64 {
		t.Errorf("the profile run's hot fields end at byte %d, past the first cache line", end)
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
		escaped = ForRun(WithEngineTime(p, EngineTime{Layers: 32, LayerKernels: 10}), nil)
		run := escaped.(*profileEngine)
		if run.own.p == nil {
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

// escaped holds a per-run copy the way a run does (on the heap).
var escaped Predictor

// TestRooflineRunLayout: a pure-decode step of the roofline's fast step
// reads the per-run copy's first 64 bytes and the first line of each of
// its two split memos, which start on lines.
func TestRooflineRunLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layout is laid out for 64-bit platforms")
	}
	var x rooflineRun
	if off := unsafe.Offsetof(x.splits); off != 64 {
		t.Errorf("the split memos start at byte %d, not 64", off)
	}
	var m splitMemo
	if size := unsafe.Sizeof(m); size != 128 {
		t.Errorf("splitMemo is %d bytes, not two cache lines", size)
	}
	if end := unsafe.Offsetof(m.extra) + unsafe.Sizeof(m.extra); end > 64 {
		t.Errorf("the fast step's fields of a split memo end at byte %d, past its first line", end)
	}
	r, err := NewRoofline(tinyModel, tinyHW, tinyEff, 1)
	if err != nil {
		t.Fatal(err)
	}
	escaped = r.ForRun(nil) // as a run's copy, on the heap
	run := escaped.(*rooflineRun)
	if at := uintptr(unsafe.Pointer(&run.splits[0][0])); at%64 != 0 {
		t.Errorf("the split memos start at %#x, not on a cache line", at)
	}
}
