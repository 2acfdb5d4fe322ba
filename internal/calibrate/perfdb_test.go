package calibrate

import (
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/perfdb"
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
