package perf

import (
	"slices"
	"testing"

	_ "github.com/servesim/servesim/internal/testseed"
	"pgregory.net/rapid"
)

// vLLM 0.19's default capture list for max_num_seqs 128 and 256 (the
// latter is the resolved_config of the reference schema example).
func TestDefaultCaptureSizes(t *testing.T) {
	want256 := []int{1, 2, 4}
	for s := 8; s <= 256; s += 8 {
		want256 = append(want256, s)
	}
	if got := DefaultCaptureSizes(128, 2048); !slices.Equal(got, want256) {
		t.Fatalf("max_num_seqs 128: %v, want %v", got, want256)
	}
	want512 := slices.Clone(want256)
	for s := 272; s <= 512; s += 16 {
		want512 = append(want512, s)
	}
	if got := DefaultCaptureSizes(256, 2048); !slices.Equal(got, want512) || len(got) != 51 {
		t.Fatalf("max_num_seqs 256: %v (%d sizes), want the 51 sizes of meta-schema-example.json", got, len(got))
	}
	// Capped by max_num_batched_tokens and by 512.
	if got := DefaultCaptureSizes(256, 20); !slices.Equal(got, []int{1, 2, 4, 8, 16}) {
		t.Fatalf("token-capped: %v", got)
	}
	if got := DefaultCaptureSizes(1024, 8192); got[len(got)-1] != 512 {
		t.Fatalf("capped at 512: last %d", got[len(got)-1])
	}
}

func TestDispatchAndPadding(t *testing.T) {
	e := EngineTime{Mode: GraphsFullAndPiecewise, CaptureSizes: DefaultCaptureSizes(128, 2048)}
	for _, c := range []struct {
		name string
		b    Batch
		d    Dispatch
		pad  int
	}{
		{"decode 1", Batch{NumDecode: 1}, RunFull, 1},
		{"decode 3 pads to 4", Batch{NumDecode: 3}, RunFull, 4},
		{"decode 5 pads to 8", Batch{NumDecode: 5}, RunFull, 8},
		{"decode 121 pads to 128", Batch{NumDecode: 121}, RunFull, 128},
		{"mixed 100+30 pads to 136, piecewise", Batch{NumDecode: 100, PrefillTokens: 30, PrefillSeqs: 1}, RunPiecewise, 136},
		{"mixed 256 exact", Batch{NumDecode: 56, PrefillTokens: 200, PrefillSeqs: 1}, RunPiecewise, 256},
		{"mixed 257 eager", Batch{NumDecode: 57, PrefillTokens: 200, PrefillSeqs: 1}, RunEager, 257},
		{"prefill 2048 eager", Batch{PrefillTokens: 2048, PrefillSeqs: 1}, RunEager, 2048},
	} {
		d, pad := e.Dispatch(&c.b)
		if d != c.d || pad != c.pad {
			t.Errorf("%s: dispatch %d padded %d, want %d %d", c.name, d, pad, c.d, c.pad)
		}
	}
	for _, c := range []struct {
		mode GraphMode
		b    Batch
		d    Dispatch
	}{
		{GraphsPiecewise, Batch{NumDecode: 8}, RunPiecewise},
		{GraphsFull, Batch{NumDecode: 8, PrefillTokens: 8, PrefillSeqs: 1}, RunFull},
		{GraphsFullDecodeOnly, Batch{NumDecode: 8, PrefillTokens: 8, PrefillSeqs: 1}, RunEager},
		{GraphsFullDecodeOnly, Batch{NumDecode: 8}, RunFull},
		{GraphsNone, Batch{NumDecode: 8}, RunEager},
	} {
		e := EngineTime{Mode: c.mode, CaptureSizes: []int{8, 16}}
		if c.mode == GraphsNone {
			e.CaptureSizes = nil
		}
		if d, _ := e.Dispatch(&c.b); d != c.d {
			t.Errorf("mode %d batch %+v: dispatch %d, want %d", c.mode, c.b, d, c.d)
		}
	}
}

// tokenCost charges 1000 ns per token, padding included, plus 1 ns per
// sequence: it shows what WithEngineTime feeds the inner predictor.
type tokenCost struct{}

func (tokenCost) StepTime(b *Batch) int64 {
	return int64(1000*(b.Tokens()+b.PadTokens) + b.Seqs())
}

// Llama-3.1-8B kernel counts (10 per layer, 2 of them attention, 4 once
// per step + 20) with the default gaps, by hand:
//
//	kernels  = 32*10 + 24 = 344
//	full     = 344 * 500 ns                         = 172,000 ns
//	piecewise= (344-64) * 500 + 64 * 900            = 197,600 ns
//	eager    = 344 * 900                            = 309,600 ns
//	step kernels: 24 * 2,400 ns                     =  57,600 ns
func TestEngineTimeArithmetic(t *testing.T) {
	e := EngineTime{Mode: GraphsFullAndPiecewise, CaptureSizes: DefaultCaptureSizes(128, 2048),
		Layers: 32, LayerKernels: 10, AttnKernels: 2, StepKernels: 24,
		GapEagerNs: KernelGapEagerNs, GapGraphNs: KernelGapGraphNs, StepKernelNs: 2400,
		Async: true} // no host time first
	p := WithEngineTime(tokenCost{}, e)
	for _, c := range []struct {
		name string
		b    Batch
		want int64
	}{
		// decode 5 -> padded 8: 8,000 + 5 (seqs) + 172,000 + 57,600.
		{"full graph padded", Batch{NumDecode: 5}, 8000 + 5 + 172000 + 57600},
		// mixed 130 tokens -> 136: 136,000 + 2 + 197,600 + 57,600.
		{"piecewise padded", Batch{NumDecode: 1, PrefillTokens: 129, PrefillSeqs: 1}, 136000 + 2 + 197600 + 57600},
		// 2048 tokens eager: 2,048,000 + 1 + 309,600 + 57,600.
		{"eager", Batch{PrefillTokens: 2048, PrefillSeqs: 1}, 2048000 + 1 + 309600 + 57600},
		{"empty", Batch{}, 0},
	} {
		if got := p.StepTime(&c.b); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	// Host time: 300,000 + 3,000*1 + 100*1 = 303,100 ns exceeds the GPU's
	// 1,001 + 172,000 + 57,600 = 230,601 ns: async exposes the host time,
	// sync adds both.
	e.Host = DefaultHostTime
	b := Batch{NumDecode: 1}
	if got := WithEngineTime(tokenCost{}, e).StepTime(&b); got != 303100 {
		t.Errorf("async, host-bound: %d, want 303100", got)
	}
	e.Async = false
	if got := WithEngineTime(tokenCost{}, e).StepTime(&b); got != 303100+230601 {
		t.Errorf("sync: %d, want %d", got, 303100+230601)
	}
}

func TestEngineTimeDoesNotAllocate(t *testing.T) {
	p := WithEngineTime(tokenCost{}, EngineTime{Mode: GraphsFullAndPiecewise, CaptureSizes: DefaultCaptureSizes(256, 2048), Layers: 32, LayerKernels: 10, StepKernels: 24, Host: DefaultHostTime, Async: true})
	b := Batch{NumDecode: 77, PrefillTokens: 100, PrefillSeqs: 1}
	if n := testing.AllocsPerRun(100, func() { p.StepTime(&b) }); n != 0 {
		t.Fatalf("%v allocations per step", n)
	}
}

// The Llama bundle's shortest op at one token is final_layernorm or
// layernorm (2.416 µs in dense.csv).
func TestMinKernel(t *testing.T) {
	p := loadLlama(t)
	if got := p.MinKernelNs(); got < 2400 || got > 2430 {
		t.Fatalf("MinKernelNs = %g, want the 2,416 ns layernorm", got)
	}
}

// Padding reaches the profile's dense ops but not attention or lm_head.
func TestProfilePadsDenseOnly(t *testing.T) {
	p := loadLlama(t)
	b := Batch{NumDecode: 5, DecodeKVSum: 5000, DecodeKVMax: 1000, DecodeKVMin: 1000}
	pb := b
	pb.PadTokens = 3
	s, ps := p.Breakdown(&b), p.Breakdown(&pb)
	if ps.Attention != s.Attention || ps.PerSequence != s.PerSequence {
		t.Fatalf("padding changed attention or per-sequence ops: %+v vs %+v", ps, s)
	}
	if ps.Dense != p.dense.at(8) {
		t.Fatalf("padded dense %g, want dense(8) = %g", ps.Dense, p.dense.at(8))
	}
}

// TestCaptureIndexIsExact: the per-count capture index gives the same step
// time as the binary search over the capture sizes (the engine time with
// the index removed), for every mode, below, at and beyond the largest
// size, with data-parallel padding and synchronised modes.
func TestCaptureIndexIsExact(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		e := EngineTime{
			Mode:         GraphMode(rapid.IntRange(0, int(GraphsNone)).Draw(rt, "mode")),
			CaptureSizes: rapid.SliceOfN(rapid.IntRange(1, 600), 0, 40).Draw(rt, "sizes"),
			Layers:       32, LayerKernels: 10, StepKernels: 24, Host: DefaultHostTime,
			Async: rapid.Bool().Draw(rt, "async"),
		}
		fast := WithEngineTime(tokenCost{}, e).(*engineTime)
		slow := *fast
		slow.capIdx, slow.dec, slow.tmpl = nil, nil, &slow
		for range 30 {
			b := Batch{NumDecode: rapid.IntRange(0, 700).Draw(rt, "n"), PrefillTokens: rapid.IntRange(0, 700).Draw(rt, "pc")}
			if b.PrefillTokens > 0 {
				b.PrefillSeqs = 1
			}
			if rapid.Bool().Draw(rt, "dp") {
				b.DPPadTo = rapid.IntRange(0, 700).Draw(rt, "padTo")
				b.DPSynced = rapid.Bool().Draw(rt, "synced")
				b.DPMode = Dispatch(rapid.IntRange(0, int(RunFull)).Draw(rt, "dpMode"))
			}
			if got, want := fast.StepTime(&b), slow.StepTime(&b); got != want {
				rt.Fatalf("indexed %d ns, searched %d ns for %+v with %+v", got, want, b, e)
			}
		}
	})
}

// fracCost is a GPU time with a fractional rate per token, padding
// included, and per sequence, so that a wrong padding or term shows in
// the rounded step time.
type fracCost struct{ perTok, perSeq float64 }

func (c fracCost) StepTime(b *Batch) int64 {
	return int64(c.perTok*float64(b.Tokens()+b.PadTokens) + c.perSeq*float64(b.Seqs()))
}

// TestDecodeShapeIsExact: a plain decode step through the per-count
// shape table (engineTime.dec) takes the same time as through the general
// path (the engine time with the table removed), bit for bit, for every
// graph mode, capture list, gap, host and launch cost, at decode counts
// on both sides of the table's limit, next to steps the table does not
// serve; the caller's padding is restored.
func TestDecodeShapeIsExact(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ns := rapid.Float64Range(0, 20000)
		e := EngineTime{
			Mode:         GraphMode(rapid.IntRange(0, int(GraphsNone)).Draw(rt, "mode")),
			CaptureSizes: rapid.SliceOfN(rapid.IntRange(1, 1200), 0, 40).Draw(rt, "sizes"),
			Layers:       rapid.IntRange(1, 80).Draw(rt, "layers"), LayerKernels: rapid.IntRange(1, 12).Draw(rt, "lk"),
			AttnKernels: rapid.IntRange(0, 2).Draw(rt, "ak"), StepKernels: rapid.IntRange(0, 30).Draw(rt, "sk"),
			GapEagerNs: ns.Draw(rt, "gapE"), GapGraphNs: ns.Draw(rt, "gapG"), StepKernelNs: ns.Draw(rt, "skNs"),
			Host:     HostTime{ns.Draw(rt, "hostF") * 30, ns.Draw(rt, "hostS"), ns.Draw(rt, "hostT")},
			Async:    rapid.Bool().Draw(rt, "async"),
			LaunchNs: ns.Draw(rt, "launch"),
		}
		inner := fracCost{rapid.Float64Range(0, 3000).Draw(rt, "perTok"), rapid.Float64Range(0, 50).Draw(rt, "perSeq")}
		fast := WithEngineTime(inner, e).(*engineTime)
		slow := *fast
		slow.dec, slow.tmpl = nil, &slow
		for range 30 {
			b := Batch{NumDecode: rapid.IntRange(0, decodeShapeLimit+50).Draw(rt, "n"),
				PadTokens: rapid.IntRange(-3, 40).Draw(rt, "pad")}
			switch rapid.IntRange(0, 5).Draw(rt, "other") {
			case 0:
				b.PrefillTokens, b.PrefillSeqs = rapid.IntRange(1, 700).Draw(rt, "pc"), 1
			case 1:
				b.SpecTokens = rapid.IntRange(1, 3*b.NumDecode+1).Draw(rt, "spec")
			case 2:
				b.DPPadTo = rapid.IntRange(0, 700).Draw(rt, "padTo")
				b.DPSynced = rapid.Bool().Draw(rt, "synced")
				b.DPMode = Dispatch(rapid.IntRange(0, int(RunFull)).Draw(rt, "dpMode"))
			}
			pad := b.PadTokens
			got := fast.StepTime(&b)
			if b.PadTokens != pad {
				rt.Fatalf("padding %d left as %d", pad, b.PadTokens)
			}
			if want := slow.StepTime(&b); got != want {
				rt.Fatalf("shape table %d ns, general path %d ns for %+v with %+v", got, want, b, e)
			}
		}
	})
}

// TestEngineTimeLaunchFloor: a step whose kernels launched outside CUDA
// graphs take the CPU longer than the GPU takes to run it lasts as long as
// the launches (plus the host work, on the same thread). By hand, with 28
// layers of 11 kernels (2 of them attention), 30 once-per-step kernels and
// 8,680 ns per launch:
//
//	eager (600 tokens):    (28×11 + 30) × 8,680 = 338 × 8,680 = 2,933,840 ns
//	piecewise (300 tok.):  (28×2 + 30) × 8,680  =  86 × 8,680 =   746,480 ns
//	full decode (4):                  30 × 8,680              =   260,400 ns
//
// tokenCost charges 1,000 ns per token and 1 ns per sequence, no gaps.
func TestEngineTimeLaunchFloor(t *testing.T) {
	e := EngineTime{Mode: GraphsFullAndPiecewise, CaptureSizes: DefaultCaptureSizes(256, 8192),
		Layers: 28, LayerKernels: 11, AttnKernels: 2, StepKernels: 30,
		LaunchNs: KernelLaunchNs, Async: true}
	for _, c := range []struct {
		name string
		b    Batch
		want int64
	}{
		// 600 tokens, eager: launches 2,933,840 ns beat the GPU's 600,001.
		{"eager, launch-bound", Batch{PrefillTokens: 600, PrefillSeqs: 1}, 2933840},
		// 300 tokens, piecewise at 304: launches 746,480 ns beat 304,002.
		{"piecewise, launch-bound", Batch{NumDecode: 1, PrefillTokens: 299, PrefillSeqs: 1}, 746480},
		// 4 decodes, full graph at 4: launches 260,400 ns beat 4,004.
		{"full graph, launch-bound", Batch{NumDecode: 4}, 260400},
		// 5,000 tokens eager: the GPU's 5,000,001 ns beat the launches.
		{"eager, GPU-bound", Batch{PrefillTokens: 5000, PrefillSeqs: 1}, 5000001},
	} {
		if got := WithEngineTime(tokenCost{}, e).StepTime(&c.b); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	// The host work runs on the launching thread: with async scheduling
	// the CPU time is host + launches = 300,000 + 3,000 + 60,000 +
	// 2,933,840 = 3,296,840 ns; without, the host adds to max(GPU,
	// launches): 2,933,840 + 363,000 = 3,296,840 ns as well.
	e.Host = DefaultHostTime
	b := Batch{PrefillTokens: 600, PrefillSeqs: 1}
	if got := WithEngineTime(tokenCost{}, e).StepTime(&b); got != 3296840 {
		t.Errorf("async with host: %d, want 3296840", got)
	}
	e.Async = false
	if got := WithEngineTime(tokenCost{}, e).StepTime(&b); got != 3296840 {
		t.Errorf("sync with host: %d, want 3296840", got)
	}
	// A GPU-bound step without async scheduling: 5,000,001 + host 300,000
	// + 3,000 + 500,000 = 5,803,001 ns (the launches hide under the GPU).
	b = Batch{PrefillTokens: 5000, PrefillSeqs: 1}
	if got := WithEngineTime(tokenCost{}, e).StepTime(&b); got != 5803001 {
		t.Errorf("sync GPU-bound: %d, want 5803001", got)
	}
	// LaunchNs 0 leaves the step as before.
	e.LaunchNs, e.Host, e.Async = 0, HostTime{}, true
	if got := WithEngineTime(tokenCost{}, e).StepTime(&b); got != 5000001 {
		t.Errorf("no launch cost: %d, want 5000001", got)
	}
}
