package calibrate

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/perfdb"
	"github.com/servesim/servesim/internal/quant"
)

// testAccel is a made-up accelerator with round peaks for hand
// computations.
var testAccel = hw.Accelerator{Name: "T", MemBandwidth: 1e12, PeakFLOPSBF16: 100e12, PeakFLOPSFP8: 200e12, ComputeCapability: 8.0}

// TestPerfDBInputSelectsAndShapesRows checks the row selection rules and
// that each row is timed by the roofline at the shape the brief of the
// database gives it: a GEMM as a linear layer, hand-computed; a context
// row as Batch prefills of Seq tokens; a generation row as Batch decodes
// of Seq context.
func TestPerfDBInputSelectsAndShapesRows(t *testing.T) {
	db := &perfdb.DB{System: "t", Framework: "vllm", Version: "0.19.0",
		GEMM: []perfdb.GEMMRow{
			{Dtype: "bfloat16", M: 1024, N: 4096, K: 4096, Ms: 0.1},
			{Dtype: "bfloat16", M: 16384, N: 4096, K: 4096, Ms: 1}, // above the step budget
			{Dtype: "fp8", M: 1024, N: 4096, K: 4096, Ms: 0.06},
			{Dtype: "nvfp4", M: 1024, N: 4096, K: 4096, Ms: 0.04}, // not used
		},
		Context: []perfdb.AttnRow{
			{Batch: 4, Seq: 1024, Heads: 32, KVHeads: 8, HeadDim: 128, KVDtype: "bfloat16", Ms: 0.5},
			{Batch: 16, Seq: 1024, Heads: 32, KVHeads: 8, HeadDim: 128, KVDtype: "bfloat16", Ms: 2}, // 16k tokens
			{Batch: 4, Seq: 1024, Heads: 32, KVHeads: 8, HeadDim: 128, KVDtype: "fp8", Ms: 0.4},
			{Batch: 4, Seq: 1024, Heads: 32, KVHeads: 8, HeadDim: 128, Window: 128, KVDtype: "bfloat16", Ms: 0.2},
			{Batch: 4, Seq: 1024, Heads: 12, KVHeads: 8, HeadDim: 128, KVDtype: "bfloat16", Ms: 0.2}, // 12 % 8 != 0
			// 4·32·128·8192·8193/2 = 0.55 TFLOP takes at least 5.5 ms at 100 TFLOP/s.
			{Batch: 1, Seq: 8192, Heads: 32, KVHeads: 8, HeadDim: 128, KVDtype: "bfloat16", Ms: 1},
		},
		Generation: []perfdb.AttnRow{
			{Batch: 64, Seq: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, KVDtype: "bfloat16", Ms: 1.5},
			// No embedded model has 16 query heads of size 64 on a GPU.
			{Batch: 64, Seq: 4096, Heads: 16, KVHeads: 2, HeadDim: 64, KVDtype: "bfloat16", Ms: 0.3},
			// 32·8192·2·8·128·2 = 1.07 GB of KV takes at least 1.07 ms at 1 TB/s.
			{Batch: 32, Seq: 8192, Heads: 32, KVHeads: 8, HeadDim: 128, KVDtype: "bfloat16", Ms: 0.5},
			// 1·4096·2·4·128·2 = 8.4 MB takes at least 8.4 µs at 1 TB/s
			// (Llama-3.1-8B at tp 2: 16 and 4 heads): kept at 20 µs, dropped
			// at 1 µs (read from a warm L2, which a serving step never is).
			{Batch: 1, Seq: 4096, Heads: 16, KVHeads: 4, HeadDim: 128, KVDtype: "bfloat16", Ms: 0.02},
			{Batch: 1, Seq: 4096, Heads: 16, KVHeads: 4, HeadDim: 128, KVDtype: "bfloat16", Ms: 0.001},
		},
	}
	in, err := NewPerfDBInput(db, testAccel)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{TableGEMM: 1, TableGEMMFP8: 1, TableContext: 1, TableGeneration: 2}
	for k, n := range want {
		if got := in.Rows()[k]; got != n {
			t.Errorf("%s: %d rows, want %d", k, got, n)
		}
	}
	if in.Dropped[TableContext] != 1 || in.Dropped[TableGeneration] != 2 {
		t.Errorf("dropped %v, want one context and two generation rows", in.Dropped)
	}
	if in.Source != "perfdb:t/vllm/0.19.0" || in.Accelerator != "T" {
		t.Errorf("source %q accelerator %q", in.Source, in.Accelerator)
	}
	eff := perf.Efficiency{Compute: 0.5, Memory: 0.8, LaunchNs: 2000, Sharpness: 1000}
	rep, err := CheckPerfDB(eff, in)
	if err != nil {
		t.Fatal(err)
	}
	// bf16 GEMM by hand: 2·1024·4096·4096 = 34.36 GFLOP at 50 TFLOP/s =
	// 687.2 µs; bytes (4096² + 2·1024·4096)·2 = 50.3 MB at 0.8 TB/s = 62.9
	// µs; sharpness 1000 is the hard max: 2 + 687.19 µs against 100 µs.
	flops := 2.0 * 1024 * 4096 * 4096
	pred := 2000 + flops/50e12*1e9
	if got := rep.Tables[TableGEMM].Bias; math.Abs(got-(pred/1e5-1)) > 1e-6 {
		t.Errorf("gemm error %g, want %g", got, pred/1e5-1)
	}
	// fp8: the same FLOPs at 0.5 × 200 TFLOP/s.
	pred8 := 2000 + flops/100e12*1e9
	if got := rep.Tables[TableGEMMFP8].Bias; math.Abs(got-(pred8/0.6e5-1)) > 1e-6 {
		t.Errorf("fp8 gemm error %g, want %g", got, pred8/0.6e5-1)
	}
	// Attention rows are the roofline's attention op on the row's step.
	m := perf.RooflineModel{Layers: 1, Hidden: 32 * 128, Intermediate: 128, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 1}
	r, err := perf.NewRoofline(m, perf.RooflineHW{PeakFLOPS: 100e12, MemBandwidth: 1e12}, eff, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := perf.Batch{PrefillTokens: 4096, PrefillSeqs: 4}
	if got, want := rep.Tables[TableContext].Bias, r.OpNs(perf.OpAttention, &ctx)/0.5e6-1; math.Abs(got-want) > 1e-9 {
		t.Errorf("context error %g, want %g", got, want)
	}
	gen := perf.Batch{NumDecode: 64, DecodeKVSum: 64 * 4096, DecodeKVMax: 4096, DecodeKVMin: 4096}
	e1 := r.OpNs(perf.OpAttention, &gen)/1.5e6 - 1
	m2 := perf.RooflineModel{Layers: 1, Hidden: 16 * 128, Intermediate: 128, Heads: 16, KVHeads: 4, HeadDim: 128, Vocab: 1}
	r2, err := perf.NewRoofline(m2, perf.RooflineHW{PeakFLOPS: 100e12, MemBandwidth: 1e12}, eff, 1)
	if err != nil {
		t.Fatal(err)
	}
	one := perf.Batch{NumDecode: 1, DecodeKVSum: 4096, DecodeKVMax: 4096, DecodeKVMin: 4096}
	e2 := r2.OpNs(perf.OpAttention, &one)/20e3 - 1
	if got, want := rep.Tables[TableGeneration].Bias, (e1+e2)/2; math.Abs(got-want) > 1e-9 {
		t.Errorf("generation error (median of two) %g, want %g", got, want)
	}
	// Without FP8 tensor cores the fp8 rows are dropped; a table without
	// rows is an error naming it.
	noFP8 := testAccel
	noFP8.PeakFLOPSFP8 = 0
	if in, err := NewPerfDBInput(db, noFP8); err != nil || in.Rows()[TableGEMMFP8] != 0 {
		t.Errorf("no-FP8 accelerator: %v, %v", in.Rows(), err)
	}
	bad := *db
	bad.Generation = nil
	if _, err := NewPerfDBInput(&bad, testAccel); err == nil || !strings.Contains(err.Error(), "perfdb:t/vllm/0.19.0 has no usable generation_attention rows") {
		t.Errorf("missing table: %v", err)
	}
}

// TestPerfDBInputFlashInferOneTokenRowsAreDecodes checks that a context
// row of one-token sequences measured with vLLM's FlashInfer backend is
// timed as the decode batch that backend runs it as (Batch requests of
// one token of context), and the same row measured with FlashAttention,
// one varlen kernel for every request, as Batch one-token prefills.
func TestPerfDBInputFlashInferOneTokenRowsAreDecodes(t *testing.T) {
	row := func(batch, seq int, kernel string) perfdb.AttnRow {
		return perfdb.AttnRow{Batch: batch, Seq: seq, Heads: 32, KVHeads: 8, HeadDim: 128, KVDtype: "bfloat16", Ms: 0.05, Kernel: kernel}
	}
	db := &perfdb.DB{System: "t", Framework: "vllm", Version: "0.19.0",
		GEMM:       []perfdb.GEMMRow{{Dtype: "bfloat16", M: 1024, N: 4096, K: 4096, Ms: 0.1}},
		Context:    []perfdb.AttnRow{row(64, 1, "vllm_flashinfer"), row(64, 1, "vllm_flash_attn"), row(64, 16, "vllm_flashinfer")},
		Generation: []perfdb.AttnRow{row(64, 64, "vllm_flashinfer")},
	}
	in, err := NewPerfDBInput(db, testAccel)
	if err != nil {
		t.Fatal(err)
	}
	want := []perf.Batch{
		{NumDecode: 64, DecodeKVSum: 64, DecodeKVMax: 1, DecodeKVMin: 1},
		{PrefillTokens: 64, PrefillSeqs: 64},
		{PrefillTokens: 1024, PrefillSeqs: 64},
	}
	got := in.tables[TableContext]
	if len(got) != len(want) {
		t.Fatalf("%d context rows, want %d", len(got), len(want))
	}
	for i := range want {
		if b := got[i].batch(); b != want[i] {
			t.Errorf("context row %d: batch %+v, want %+v", i, b, want[i])
		}
	}
}

// TestFitPerfDBRecoversSynthetic fits database rows generated by a
// roofline with known efficiencies and checks that the fit reproduces the
// rows and the GEMM efficiencies, and keeps the fields it cannot fit.
func TestFitPerfDBRecoversSynthetic(t *testing.T) {
	truth := perf.Efficiency{Compute: 0.7, Memory: 0.85, LaunchNs: 3000, Sharpness: 3,
		AttnCompute: 0.5, AttnMemory: 0.8, AttnDecodeMemory: 0.9, AttnLaunchNs: 5000, AttnDecodeLaunchNs: 6000,
		AttnSharpness: 6, AttnTileQ: 64, AttnUnits: 96, AttnUnitNs: 500, AttnEmptyNs: 200, AttnDecodeCopyNs: 4000,
		FP8Compute: 0.45, FP8QuantNs: 1500, FP8Sharpness: 2}
	acc := testAccel // compute capability 8.0: FlashAttention 2, decode queries transposed
	h, err := HWOf(acc, "bfloat16")
	if err != nil {
		t.Fatal(err)
	}
	db := &perfdb.DB{System: "t", Framework: "vllm", Version: "0.19.0"}
	g, err := perf.NewRoofline(perf.RooflineModel{Layers: 1, Hidden: 128, Intermediate: 128, Heads: 1, HeadDim: 128, Vocab: 1}, h, truth, 1)
	if err != nil {
		t.Fatal(err)
	}
	hq := h
	hq.QuantPeakFLOPS, hq.QuantFP8 = acc.PeakFLOPSFP8, true
	gq, err := perf.NewRoofline(perf.RooflineModel{Layers: 1, Hidden: 128, Intermediate: 128, Heads: 1, HeadDim: 128, Vocab: 1, WeightBytes: 1}, hq, truth, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, nk := range [][2]int{{4096, 4096}, {14336, 4096}, {4096, 14336}, {1024, 8192}} {
		for m := 1; m <= 8192; m *= 4 {
			db.GEMM = append(db.GEMM, perfdb.GEMMRow{Dtype: "bfloat16", M: m, N: nk[0], K: nk[1], Ms: g.LinearNs(m, nk[1], nk[0]) / 1e6},
				perfdb.GEMMRow{Dtype: "fp8", M: m, N: nk[0], K: nk[1], Ms: gq.LinearNs(m, nk[1], nk[0]) / 1e6})
		}
	}
	a, err := perf.NewRoofline(perf.RooflineModel{Layers: 1, Hidden: 4096, Intermediate: 128, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 1}, h, truth, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, bs := range [][2]int{{1, 512}, {1, 4096}, {4, 1024}, {8, 256}, {2, 2048}, {16, 128}} {
		b := perf.Batch{PrefillTokens: bs[0] * bs[1], PrefillSeqs: bs[0]}
		db.Context = append(db.Context, perfdb.AttnRow{Batch: bs[0], Seq: bs[1], Heads: 32, KVHeads: 8, HeadDim: 128, KVDtype: "bfloat16", Ms: a.OpNs(perf.OpAttention, &b) / 1e6})
	}
	for _, bs := range [][2]int{{1, 1024}, {8, 4096}, {64, 2048}, {256, 512}, {32, 8192}, {128, 128}, {1, 128}, {2, 128}} {
		b := perf.Batch{NumDecode: bs[0], DecodeKVSum: int64(bs[0] * bs[1]), DecodeKVMax: bs[1], DecodeKVMin: bs[1]}
		db.Generation = append(db.Generation, perfdb.AttnRow{Batch: bs[0], Seq: bs[1], Heads: 32, KVHeads: 8, HeadDim: 128, KVDtype: "bfloat16", Ms: a.OpNs(perf.OpAttention, &b) / 1e6})
	}
	in, err := NewPerfDBInput(db, acc)
	if err != nil {
		t.Fatal(err)
	}
	keep := &Entry{SamplerUs: 12, CacheMB: 33, OpScale: map[string]float64{"act_fn": 1.5}, Attention: AttentionEntry{Skew: 0.1, DecodeSkew: 0.05, EmptyUs: 0.7}}
	en, rep, err := FitPerfDB(in, keep, "K", Options{TileQ: []int{64}, Units: []int{96}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range []string{TableGEMM, TableContext, TableGeneration, TableGEMMFP8} {
		if s := rep.Tables[tb]; s.Median > 0.01 || s.P90 > 0.03 {
			t.Errorf("%s: %s, want a near-exact fit", tb, s)
		}
	}
	if math.Abs(en.ComputeEff/0.7-1) > 0.03 || math.Abs(en.MemoryEff/0.85-1) > 0.05 {
		t.Errorf("compute %g memory %g, want 0.7 and 0.85", en.ComputeEff, en.MemoryEff)
	}
	// The fp8 rows carry the activation quantisation kernel and their own
	// fraction of the FP8 rate; the fit recovers both with the bf16 terms held.
	if math.Abs(en.FP8ComputeEff/0.45-1) > 0.05 || math.Abs(en.FP8QuantUs/1.5-1) > 0.1 {
		t.Errorf("fp8 compute %g quantise %g µs, want 0.45 and 1.5", en.FP8ComputeEff, en.FP8QuantUs)
	}
	// The one-request decodes have no query copy, the others do: the fit
	// tells the copy from the decode launch. Not FlashInfer tables: no
	// decode unit cost of its own.
	if a := en.Attention; math.Abs(a.DecodeCopyUs/4-1) > 0.1 || math.Abs(a.DecodeLaunchUs/6-1) > 0.1 || a.DecodeUnitUs != 0 {
		t.Errorf("decode copy %g launch %g unit %g µs, want 4, 6 and 0", a.DecodeCopyUs, a.DecodeLaunchUs, a.DecodeUnitUs)
	}
	if en.SamplerUs != 12 || en.CacheMB != 33 || en.OpScale["act_fn"] != 1.5 || en.Attention.Skew != 0.1 || en.Attention.DecodeSkew != 0.05 || en.Attention.EmptyUs != 0.7 {
		t.Errorf("kept fields changed: %+v", en)
	}
	if en.Source != "perfdb:t/vllm/0.19.0" || en.Kept != "K: "+KeptFields || en.Fit[TableGEMM].Rows != len(db.GEMM)/2 || en.Fit[TableGEMMFP8].Rows != len(db.GEMM)/2 {
		t.Errorf("source %q kept %q fit %+v", en.Source, en.Kept, en.Fit)
	}
	if l := en.Label(); !strings.Contains(l, "per-op kernel tables perfdb:t/vllm/0.19.0") || !strings.Contains(l, "kept from K: op_scale") {
		t.Errorf("label %q", l)
	}
	if _, _, err := FitPerfDB(in, nil, "", Options{}); err == nil {
		t.Error("fit without a calibration to keep from accepted")
	}
}

// overTarget lists the tables whose median error misses the 10 % target,
// by system, with the ceiling measured (docs/calibration.md says why):
// none now.
var overTarget = map[string]map[string]float64{}

// ceilings pins every table's median error of the embedded database
// calibrations a little above what it reaches (docs/calibration.md's
// table), so that a change which loses accuracy on any table fails here
// even below the 10 % target.
var ceilings = map[string][7]float64{ // gemm, context, generation, fp8, fp8_block, nvfp4 GEMM, all-reduce
	"a100_sxm": {0.074, 0.073, 0.049, 0, 0, 0, 0.049},
	"b200_sxm": {0.070, 0.073, 0.068, 0.062, 0.060, 0.082, 0.062},
	"b300_sxm": {0.070, 0.061, 0.064, 0.055, 0.057, 0.072, 0.062},
	"gb200":    {0.075, 0.067, 0.084, 0.047, 0.056, 0.075, 0.091},
	"gb300":    {0.065, 0.063, 0.086, 0.047, 0.053, 0.068, 0.067},
	"h100_sxm": {0.049, 0.063, 0.063, 0.049, 0.086, 0, 0.041},
	"h200_sxm": {0.070, 0.100, 0.079, 0.077, 0.100, 0, 0.040},
	"l40s":     {0.077, 0.066, 0.045, 0.096, 0, 0, 0.055},
}

// TestEmbeddedPerfDBCalibrations checks every embedded calibration fitted
// on the embedded database on its own tables: the median error of each
// fitted table at most 10 % (or, for the tables of overTarget, at most the
// ceiling documented there), the entry labelled with what it kept from
// RTXPRO6000, and the lender of uncalibrated accelerators still the
// RTX PRO 6000's whole-step calibration. The RTX PRO 6000's own
// calibration, fitted on LLMServingSim profile tables, is checked on the
// database too and pinned (docs/calibration.md's cross-check table).
func TestEmbeddedPerfDBCalibrations(t *testing.T) {
	file, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if lender, ok := file.Fallback(); !ok || lender != KeepFrom {
		t.Errorf("Fallback() = %q, %v; want %s", lender, ok, KeepFrom)
	}
	systems := perfdb.EmbeddedSystems()
	if len(systems) != 9 {
		t.Errorf("embedded systems %v, want 9", systems)
	}
	for _, sys := range systems {
		t.Run(sys, func(t *testing.T) {
			acc, err := AcceleratorOfSystem(sys)
			if err != nil {
				t.Fatal(err)
			}
			db, err := perfdb.Open(perfdb.Embedded(), sys, "vllm", "")
			if err != nil {
				t.Fatal(err)
			}
			in, err := NewPerfDBInput(db, acc)
			if err != nil {
				t.Fatal(err)
			}
			en, ok := file.Entry(acc.Name)
			if !ok {
				t.Fatalf("no embedded calibration for %s", acc.Name)
			}
			rep, err := CheckPerfDB(en.Efficiency(), in)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s (%s):\n%s", acc.Name, in.Source, rep.TableString())
			if acc.Name == KeepFrom {
				if en.Kept != "" {
					t.Errorf("%s keeps fields from %q; want its own profile fit", acc.Name, en.Kept)
				}
				// Pinned: see the cross-check table in docs/calibration.md.
				// The fp8 and NVFP4 terms (FitPerfDBFP8) and the
				// all-reduce constants (FitPerfDBAllReduce) alone are
				// fitted on the database: fp8 33.5 %, NVFP4 32.3 % and
				// all-reduce 34.4 % before; block fp8 is not fitted: its
				// rows, timed without CUDA graphs, are checked with the
				// collection's host issue time (eagerIssue), 52.8 %
				// without it.
				for tb, med := range map[string]float64{TableGEMM: 0.113, TableContext: 0.090, TableGeneration: 0.100, TableGEMMFP8: 0.033,
					TableGEMMFP8Block: 0.054, TableGEMMNVFP4: 0.088, TableAllReduce: 0.041} {
					if got := rep.Tables[tb].Median; math.Abs(got-med) > 0.002 {
						t.Errorf("%s: median %.4f, docs say %.3f", tb, got, med)
					}
				}
				if en.FP8Source != in.Source || !en.FP8Waves {
					t.Errorf("fp8 terms from %q (waves %v), want fitted on %s with tile waves", en.FP8Source, en.FP8Waves, in.Source)
				}
				if fs := en.Fit[TableGEMMFP8]; fs.Rows != rep.Tables[TableGEMMFP8].Count || math.Abs(fs.Median-rep.Tables[TableGEMMFP8].Median) > 0.002 {
					t.Errorf("gemm_fp8: entry fit %+v, check %s", fs, rep.Tables[TableGEMMFP8])
				}
				return
			}
			for i, tb := range PerfDBTables {
				med, ceil := rep.Tables[tb].Median, ceilings[sys][i]
				if ceil > 0 && med > ceil {
					t.Errorf("%s: median error %.2f %% above its pinned %.1f %%", tb, 100*med, 100*ceil)
				}
				if i >= 3 && rep.Tables[tb].Count == 0 {
					continue // a quantised format the system's tables lack
				}
				limit, over := overTarget[sys][tb]
				switch {
				case !over && med > 0.10:
					t.Errorf("%s: median error %.1f %% > 10 %%", tb, 100*med)
				case over && med > limit:
					t.Errorf("%s: median error %.1f %% above its documented %.1f %%", tb, 100*med, 100*limit)
				case over && med <= 0.10:
					t.Errorf("%s: median error %.1f %% now meets the 10 %% target: drop it from overTarget and the docs", tb, 100*med)
				}
			}
			if en.Source != in.Source || en.Kept != KeepFrom+": "+KeptFields || en.Derived != "" {
				t.Errorf("entry source %q kept %q derived %q", en.Source, en.Kept, en.Derived)
			}
			// The entry's fit stats are those of its own check (within
			// 0.2 points: the entry stores its efficiencies to 4 digits).
			for _, tb := range PerfDBTables {
				if rep.Tables[tb].Count == 0 {
					continue
				}
				if fs := en.Fit[tb]; fs.Rows != rep.Tables[tb].Count || math.Abs(fs.Median-rep.Tables[tb].Median) > 0.002 {
					t.Errorf("%s: entry fit %+v, check %s", tb, fs, rep.Tables[tb])
				}
			}
		})
	}
}

// The source names the version the tables were read at, which may not be
// the one asked for (a system measured only at an older version).
func TestTablesVersion(t *testing.T) {
	tab := func(name, v string) perfdb.Table { return perfdb.Table{Name: name, Version: v} }
	for _, c := range []struct {
		tables []perfdb.Table
		want   string
	}{
		{nil, "0.19.0"},
		{[]perfdb.Table{tab("gemm_perf", "0.14.0"), tab("context_attention_perf", "0.14.0"), tab("generation_attention_perf", "0.14.0"), tab("moe_perf", "0.19.0")}, "0.14.0"},
		{[]perfdb.Table{tab("gemm_perf", "0.19.0"), tab("context_attention_perf", "0.9.2"), tab("generation_attention_perf", "0.14.0")}, "gemm 0.19.0, attention 0.14.0"},
	} {
		if got := tablesVersion(&perfdb.DB{Version: "0.19.0", Tables: c.tables}); got != c.want {
			t.Errorf("%v: %q, want %q", c.tables, got, c.want)
		}
	}
}

// The GEMM rows kept are the grid points around the layers of the
// embedded models: Llama-3.1-8B's qkv_proj at tp 1 is N = (32+2·8)·128 =
// 6144, K = 4096, between the measured N 4096 and 8192; N and K of 32
// are no layer's and are left out; lm_head's N (vocab/tp, up to 151,936)
// lies beyond the grid's 65,536, which stands in for it.
func TestGEMMGrid(t *testing.T) {
	shapes, err := ServingGEMMShapes()
	if err != nil {
		t.Fatal(err)
	}
	has := func(n, k int) bool {
		for _, s := range shapes {
			if s == [2]int{n, k} {
				return true
			}
		}
		return false
	}
	for _, nk := range [][2]int{{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}, {768, 4096}, {4096, 512}, {128256, 4096}, {16032, 4096}} {
		if !has(nk[0], nk[1]) {
			t.Errorf("serving shapes lack %v", nk)
		}
	}
	grid := []int{32, 512, 4096, 8192, 65536}
	var rows []perfdb.GEMMRow
	for _, n := range grid {
		for _, k := range grid {
			rows = append(rows, perfdb.GEMMRow{Dtype: "bfloat16", M: 1, N: n, K: k, Ms: 1})
		}
	}
	keep, err := gemmGrid(rows)
	if err != nil {
		t.Fatal(err)
	}
	for nk, want := range map[[2]int]bool{{4096, 4096}: true, {8192, 4096}: true, {65536, 4096}: true, {4096, 512}: true,
		{32, 4096}: false, {4096, 32}: false, {32, 32}: false, {65536, 65536}: false} {
		if keep[nk] != want {
			t.Errorf("grid point %v kept %v, want %v", nk, keep[nk], want)
		}
	}
}

// TestFitPerfDBFlashInferDecodeUnit: on tables measured with FlashInfer
// (compute capability 10.x), the fit frees the decode work unit's own
// cost and recovers it beside the prefill unit's, and charges no query
// copy (FlashInfer packs GQA inside its decode kernel).
func TestFitPerfDBFlashInferDecodeUnit(t *testing.T) {
	truth := perf.Efficiency{Compute: 0.7, Memory: 0.85, LaunchNs: 3000, Sharpness: 3,
		AttnCompute: 0.5, AttnMemory: 0.8, AttnDecodeMemory: 0.9, AttnLaunchNs: 5000, AttnDecodeLaunchNs: 6000,
		AttnSharpness: 6, AttnTileQ: 128, AttnUnits: 96, AttnUnitNs: 2000, AttnDecodeUnitNs: 300, AttnEmptyNs: 200}
	acc := testAccel
	acc.ComputeCapability = 10.0
	h, err := HWOf(acc, "bfloat16")
	if err != nil {
		t.Fatal(err)
	}
	db := &perfdb.DB{System: "t", Framework: "vllm", Version: "0.19.0",
		GEMM: []perfdb.GEMMRow{{Dtype: "bfloat16", M: 1024, N: 4096, K: 4096, Ms: 0.1}}}
	a, err := perf.NewRoofline(perf.RooflineModel{Layers: 1, Hidden: 4096, Intermediate: 128, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 1}, h, truth, 1)
	if err != nil {
		t.Fatal(err)
	}
	row := func(b perf.Batch, batch, seq int) perfdb.AttnRow {
		return perfdb.AttnRow{Batch: batch, Seq: seq, Heads: 32, KVHeads: 8, HeadDim: 128, KVDtype: "bfloat16",
			Ms: a.OpNs(perf.OpAttention, &b) / 1e6, Kernel: "vllm_flashinfer"}
	}
	for _, bs := range [][2]int{{1, 512}, {1, 4096}, {4, 1024}, {8, 256}, {64, 16}, {256, 16}, {128, 64}, {16, 128}} {
		db.Context = append(db.Context, row(perf.Batch{PrefillTokens: bs[0] * bs[1], PrefillSeqs: bs[0]}, bs[0], bs[1]))
	}
	for _, bs := range [][2]int{{1, 1024}, {8, 4096}, {64, 2048}, {256, 512}, {32, 8192}, {128, 128}, {512, 64}, {1024, 16}} {
		db.Generation = append(db.Generation, row(perf.Batch{NumDecode: bs[0], DecodeKVSum: int64(bs[0] * bs[1]), DecodeKVMax: bs[1], DecodeKVMin: bs[1]}, bs[0], bs[1]))
	}
	in, err := NewPerfDBInput(db, acc)
	if err != nil {
		t.Fatal(err)
	}
	if !in.FlashInfer {
		t.Fatal("tables measured with vllm_flashinfer not recognised")
	}
	en, rep, err := FitPerfDB(in, &Entry{}, "K", Options{TileQ: []int{128}, Units: []int{96}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range []string{TableContext, TableGeneration} {
		if s := rep.Tables[tb]; s.Median > 0.01 {
			t.Errorf("%s: %s, want a near-exact fit", tb, s)
		}
	}
	if at := en.Attention; math.Abs(at.UnitUs/2-1) > 0.1 || math.Abs(at.DecodeUnitUs/0.3-1) > 0.2 || at.DecodeCopyUs != 0 {
		t.Errorf("unit %g decode unit %g copy %g µs, want 2, 0.3 and 0", at.UnitUs, at.DecodeUnitUs, at.DecodeCopyUs)
	}
}

// TestBlackwellSinglePrompts checks the attention wave of the SM count on
// the datacenter Blackwell calibrations (units_per_sm): the context rows
// of one prompt of 256 to 4,096 tokens, whose few query tiles leave SMs
// idle, are timed within 6 % at the median (with a fitted 38-unit wave
// narrower than the GPU they were 16.5-23.8 % too fast), and without a
// bias of more than 2 % either way.
func TestBlackwellSinglePrompts(t *testing.T) {
	file, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, sys := range []string{"b200_sxm", "b300_sxm", "gb200", "gb300"} {
		acc, err := AcceleratorOfSystem(sys)
		if err != nil {
			t.Fatal(err)
		}
		db, err := perfdb.Open(perfdb.Embedded(), sys, "vllm", "")
		if err != nil {
			t.Fatal(err)
		}
		in, err := NewPerfDBInput(db, acc)
		if err != nil {
			t.Fatal(err)
		}
		en, _ := file.Entry(acc.Name)
		if en.Attention.UnitsPerSM == 0 || acc.SMs == 0 {
			t.Errorf("%s: units_per_sm %d, catalog sms %d", sys, en.Attention.UnitsPerSM, acc.SMs)
			continue
		}
		var single []sample
		for _, s := range in.tables[TableContext] {
			if b := s.batch(); b.PrefillSeqs == 1 && b.PrefillTokens >= 256 && b.PrefillTokens <= 4096 {
				single = append(single, s)
			}
		}
		st, err := checkSamples(en.Efficiency(), single)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: single prompts %s", sys, st)
		if st.Count < 40 || st.Median > 0.06 || math.Abs(st.Bias) > 0.02 {
			t.Errorf("%s: single prompts of 256-4096 tokens %s; want median <= 6 %%, |bias| <= 2 %%", sys, st)
		}
	}
}

// TestFitOccupancyRecoversSynthetic fits rows made by a roofline with a
// wave of 2 CTAs on each of 100 SMs: the fit with SM waves finds the
// occupancy 2 from the single prompts that leave SMs idle (a prompt of
// 128-384 tokens on 32 heads is 32-96 tiles of 128 rows), and times
// every row near exactly.
func TestFitOccupancyRecoversSynthetic(t *testing.T) {
	truth := perf.Efficiency{Compute: 0.7, Memory: 0.85, LaunchNs: 3000, Sharpness: 3,
		AttnCompute: 0.5, AttnMemory: 0.8, AttnDecodeMemory: 0.9, AttnLaunchNs: 5000, AttnDecodeLaunchNs: 6000,
		AttnSharpness: 6, AttnTileQ: 64, AttnUnitsPerSM: 2, AttnUnitNs: 500, AttnEmptyNs: 200, AttnDecodeCopyNs: 4000}
	acc := testAccel
	acc.SMs = 100
	h, err := HWOf(acc, "bfloat16")
	if err != nil {
		t.Fatal(err)
	}
	db := &perfdb.DB{System: "t", Framework: "vllm", Version: "0.19.0"}
	g, err := perf.NewRoofline(perf.RooflineModel{Layers: 1, Hidden: 128, Intermediate: 128, Heads: 1, HeadDim: 128, Vocab: 1}, h, truth, 1)
	if err != nil {
		t.Fatal(err)
	}
	for m := 1; m <= 8192; m *= 4 {
		db.GEMM = append(db.GEMM, perfdb.GEMMRow{Dtype: "bfloat16", M: m, N: 4096, K: 4096, Ms: g.LinearNs(m, 4096, 4096) / 1e6})
	}
	a, err := perf.NewRoofline(perf.RooflineModel{Layers: 1, Hidden: 4096, Intermediate: 128, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 1}, h, truth, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, bs := range [][2]int{{1, 128}, {1, 256}, {1, 384}, {1, 512}, {1, 4096}, {4, 1024}, {8, 256}, {2, 2048}, {16, 128}} {
		b := perf.Batch{PrefillTokens: bs[0] * bs[1], PrefillSeqs: bs[0]}
		db.Context = append(db.Context, perfdb.AttnRow{Batch: bs[0], Seq: bs[1], Heads: 32, KVHeads: 8, HeadDim: 128, KVDtype: "bfloat16", Ms: a.OpNs(perf.OpAttention, &b) / 1e6})
	}
	for _, bs := range [][2]int{{1, 1024}, {8, 4096}, {64, 2048}, {256, 512}, {32, 8192}, {128, 128}, {1, 128}, {2, 128}} {
		b := perf.Batch{NumDecode: bs[0], DecodeKVSum: int64(bs[0] * bs[1]), DecodeKVMax: bs[1], DecodeKVMin: bs[1]}
		db.Generation = append(db.Generation, perfdb.AttnRow{Batch: bs[0], Seq: bs[1], Heads: 32, KVHeads: 8, HeadDim: 128, KVDtype: "bfloat16", Ms: a.OpNs(perf.OpAttention, &b) / 1e6})
	}
	in, err := NewPerfDBInput(db, acc)
	if err != nil {
		t.Fatal(err)
	}
	keep := &Entry{Attention: AttentionEntry{EmptyUs: 0.2}}
	en, rep, err := FitPerfDB(in, keep, "K", Options{TileQ: []int{64}, UnitsPerSM: []int{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if a := en.Attention; a.UnitsPerSM != 2 || a.Units != 200 {
		t.Errorf("units_per_sm %d (units %d), want 2 (200)", a.UnitsPerSM, a.Units)
	}
	for _, tb := range []string{TableContext, TableGeneration} {
		if s := rep.Tables[tb]; s.Median > 0.01 || s.P90 > 0.03 {
			t.Errorf("%s: %s, want a near-exact fit", tb, s)
		}
	}
	// Without an SM count the fit searches a free wave width instead.
	acc.SMs = 0
	in0, err := NewPerfDBInput(db, acc)
	if err != nil {
		t.Fatal(err)
	}
	en0, _, err := FitPerfDB(in0, keep, "K", Options{TileQ: []int{64}, Units: []int{96}, UnitsPerSM: []int{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if en0.Attention.UnitsPerSM != 0 || en0.Attention.Units != 96 {
		t.Errorf("without SMs: units_per_sm %d units %d, want 0 and 96", en0.Attention.UnitsPerSM, en0.Attention.Units)
	}
}

// TestFitPerfDBFP8RecoversSynthetic fits only the quantised GEMM terms
// of a calibration on fp8 and NVFP4 rows generated by a known truth on an
// RTX Blackwell part (compute capability 12.0, 16 SMs: the SM120
// scaled-mm tiles in waves, for NVFP4 too), with the other rows measured
// by a different GPU: the fp8 and NVFP4 terms are recovered, every other
// field of the base entry is held (the block fp8 terms too: no rows), the
// fit record gains the two tables and FP8Source names the tables.
func TestFitPerfDBFP8RecoversSynthetic(t *testing.T) {
	acc := testAccel
	acc.ComputeCapability, acc.SMs, acc.PeakFLOPSFP4 = 12.0, 16, 400e12
	block := &ScaledEntry{ComputeEff: 0.5, MemoryEff: 0.5, QuantUs: 1, QuantPsPerElem: 1, Sharpness: 2}
	base := &Entry{FP8Block: block, Source: "profiles", ComputeEff: 0.7, MemoryEff: 0.85, LaunchUs: 3, Sharpness: 3, SamplerUs: 12, CacheMB: 33,
		OpScale: map[string]float64{"act_fn": 1.5}, Attention: AttentionEntry{ComputeEff: 0.5, TileQ: 64, Units: 96, Skew: 0.1},
		Fit: map[string]FitStats{"dense": {Rows: 7, Median: 0.05, P90: 0.1}}}
	truth := base.Efficiency()
	truth.FP8Compute, truth.FP8QuantNs, truth.FP8Sharpness, truth.FP8QuantPsPerElem, truth.FP8Waves = 0.8, 4000, 3, 2, true
	h, err := HWOf(acc, "bfloat16")
	if err != nil {
		t.Fatal(err)
	}
	if h.ScaledMM != perf.ScaledMMSM120 {
		t.Fatalf("compute capability 12.0 runs scaled-mm kernel %d, want SM120", h.ScaledMM)
	}
	h.QuantPeakFLOPS, h.QuantFP8 = acc.PeakFLOPSFP8, true
	gq, err := perf.NewRoofline(perf.RooflineModel{Layers: 1, Hidden: 128, Intermediate: 128, Heads: 1, HeadDim: 128, Vocab: 1, WeightBytes: 1}, h, truth, 1)
	if err != nil {
		t.Fatal(err)
	}
	truth.NVFP4 = perf.ScaledGEMM{Compute: 0.6, Memory: 0.7, QuantNs: 3000, QuantPsPerElem: 5, Sharpness: 3}
	fp4, err := quant.Parse(quant.Spec{Dtype: "bf16", Quantization: quant.NVFP4})
	if err != nil {
		t.Fatal(err)
	}
	h4 := h
	h4.QuantFP8, h4.QuantPeakFLOPS, h4.Scaled = false, acc.PeakFLOPSFP4, perf.ScaledNVFP4
	g4, err := perf.NewRoofline(perf.RooflineModel{Layers: 1, Hidden: 128, Intermediate: 128, Heads: 1, HeadDim: 128, Vocab: 1, WeightBytes: fp4.WeightBytes()}, h4, truth, 1)
	if err != nil {
		t.Fatal(err)
	}
	db := &perfdb.DB{System: "t", Framework: "vllm", Version: "0.19.0",
		Context:    []perfdb.AttnRow{{Batch: 1, Seq: 512, Heads: 32, KVHeads: 8, HeadDim: 128, KVDtype: "bfloat16", Ms: 0.05}},
		Generation: []perfdb.AttnRow{{Batch: 8, Seq: 512, Heads: 32, KVHeads: 8, HeadDim: 128, KVDtype: "bfloat16", Ms: 0.05}}}
	for _, nk := range [][2]int{{4096, 4096}, {14336, 4096}, {4096, 14336}, {1024, 8192}} {
		for _, m := range []int{1, 16, 128, 129, 512, 1024, 2047, 2048, 2049, 4096, 8192} {
			db.GEMM = append(db.GEMM, perfdb.GEMMRow{Dtype: "bfloat16", M: m, N: nk[0], K: nk[1], Ms: 1},
				perfdb.GEMMRow{Dtype: "fp8", M: m, N: nk[0], K: nk[1], Ms: gq.LinearNs(m, nk[1], nk[0]) / 1e6},
				perfdb.GEMMRow{Dtype: "nvfp4", M: m, N: nk[0], K: nk[1], Ms: g4.LinearNs(m, nk[1], nk[0]) / 1e6})
		}
	}
	in, err := NewPerfDBInput(db, acc)
	if err != nil {
		t.Fatal(err)
	}
	en, rep, err := FitPerfDBFP8(in, base, Options{FP8Waves: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Tables[TableGEMMFP8]; s.Median > 0.01 || s.P90 > 0.03 {
		t.Errorf("fp8: %s, want a near-exact fit", s)
	}
	if math.Abs(en.FP8ComputeEff/0.8-1) > 0.03 || math.Abs(en.FP8QuantUs/4-1) > 0.1 || !en.FP8Waves {
		t.Errorf("fp8 compute %g quantise %g µs waves %v, want 0.8, 4 and true", en.FP8ComputeEff, en.FP8QuantUs, en.FP8Waves)
	}
	if s := rep.Tables[TableGEMMNVFP4]; s.Median > 0.01 || s.P90 > 0.03 {
		t.Errorf("nvfp4: %s, want a near-exact fit", s)
	}
	if en.NVFP4 == nil || math.Abs(en.NVFP4.ComputeEff/0.6-1) > 0.05 {
		t.Errorf("nvfp4 terms %+v, want compute 0.6", en.NVFP4)
	}
	held := *en
	held.FP8ComputeEff, held.FP8QuantUs, held.FP8Sharpness, held.FP8QuantPsPerElem, held.FP8Waves, held.FP8Source = 0, 0, 0, 0, false, ""
	held.NVFP4 = nil
	held.Fit = base.Fit
	if !reflect.DeepEqual(&held, base) {
		t.Errorf("fields other than the fp8 terms changed:\n got %+v\nwant %+v", held, *base)
	}
	if en.FP8Source != "perfdb:t/vllm/0.19.0" || en.Fit["dense"] != base.Fit["dense"] || en.Fit[TableGEMMFP8].Rows != len(db.GEMM)/3 || en.Fit[TableGEMMNVFP4].Rows != len(db.GEMM)/3 || len(base.Fit) != 1 {
		t.Errorf("fp8 source %q, fit %+v (base %+v)", en.FP8Source, en.Fit, base.Fit)
	}
	if _, _, err := FitPerfDBFP8(in, nil, Options{}); err == nil {
		t.Error("fit without a base calibration accepted")
	}
	noFP8 := testAccel
	noFP8.PeakFLOPSFP8 = 0
	in0, err := NewPerfDBInput(db, noFP8)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := FitPerfDBFP8(in0, base, Options{}); err == nil || !strings.Contains(err.Error(), "no fp8, block fp8 or nvfp4 GEMM rows") {
		t.Errorf("no fp8 rows: err %v", err)
	}
}

// TestFitPerfDBAllReducePCIe fits only the all-reduce constants of a
// calibration on all-reduce rows of a PCIe node (32 GB/s, peer-to-peer,
// 8 GPUs) generated by a known truth under vLLM's dispatch: the custom
// kernel at 2 GPUs below 8 MiB, NCCL at 2 GPUs from 8 MiB and at 4 and 8
// GPUs over a shared host path. Each algorithm's constants are recovered
// (the custom kernel's apart from NCCL's), the shared path is chosen,
// every other field is held; without all-reduce rows the fit is refused.
func TestFitPerfDBAllReducePCIe(t *testing.T) {
	acc := testAccel
	acc.Link = hw.Link{Kind: hw.LinkPCIe, Bandwidth: 32e9, P2P: true}
	acc.Node.GPUs = 8
	truth := perf.CollectiveEff{CustomLatencyNs: 5000, NCCLLatencyNs: 15000, BusEff: 0.25, CustomBusEff: 0.6, NCCLHostShared: true}
	link := perf.Interconnect{P2P: true, LinkBW: 32e9}
	db := &perfdb.DB{System: "t", Framework: "vllm", Version: "0.19.0",
		GEMM:       []perfdb.GEMMRow{{Dtype: "bfloat16", M: 16, N: 4096, K: 4096, Ms: 0.02}},
		Context:    []perfdb.AttnRow{{Batch: 1, Seq: 512, Heads: 32, KVHeads: 8, HeadDim: 128, KVDtype: "bfloat16", Ms: 0.05}},
		Generation: []perfdb.AttnRow{{Batch: 8, Seq: 512, Heads: 32, KVHeads: 8, HeadDim: 128, KVDtype: "bfloat16", Ms: 0.05}}}
	for _, n := range []int{2, 4, 8} {
		a := perf.NewAllReduce(n, link, false).With(truth, link)
		for size := int64(128); 2*size <= MaxAllReduceBytes; size *= 4 {
			db.CustomAR = append(db.CustomAR, perfdb.CommRow{Op: "all_reduce", Backend: "vllm_graph", Dtype: "bfloat16", GPUs: n, Size: size,
				Ms: float64(a.Ns(2*size)) / 1e6})
		}
	}
	in, err := NewPerfDBInput(db, acc)
	if err != nil {
		t.Fatal(err)
	}
	base := &Entry{Source: "profiles", ComputeEff: 0.7, MemoryEff: 0.85, LaunchUs: 3, Sharpness: 3,
		Attention: AttentionEntry{ComputeEff: 0.5, TileQ: 64, Units: 96}, Fit: map[string]FitStats{"dense": {Rows: 7, Median: 0.05, P90: 0.1}}}
	en, rep, err := FitPerfDBAllReduce(in, base)
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Tables[TableAllReduce]; s.Median > 0.01 || s.P90 > 0.03 {
		t.Errorf("allreduce: %s, want a near-exact fit", s)
	}
	got := en.AllReduce
	if got == nil || !got.NCCLHostShared || math.Abs(got.CustomBusEff/0.6-1) > 0.03 || math.Abs(got.BusEff/0.25-1) > 0.03 ||
		math.Abs(got.CustomLatencyUs/5-1) > 0.1 || math.Abs(got.NCCLLatencyUs/15-1) > 0.1 {
		t.Errorf("all-reduce constants %+v, want custom 5 µs at 0.6, NCCL 15 µs at 0.25, shared host path", got)
	}
	held := *en
	held.AllReduce, held.FP8Source, held.Fit = nil, "", base.Fit
	if !reflect.DeepEqual(&held, base) || en.Fit["dense"] != base.Fit["dense"] || en.Fit[TableAllReduce].Rows != len(db.CustomAR) {
		t.Errorf("fields other than the all-reduce constants changed, or fit record %+v", en.Fit)
	}
	db.CustomAR = nil
	in0, err := NewPerfDBInput(db, acc)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := FitPerfDBAllReduce(in0, base); err == nil || !strings.Contains(err.Error(), "no all-reduce rows") {
		t.Errorf("no all-reduce rows: err %v", err)
	}
}
