package calibrate

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/perfdb"
	"github.com/servesim/servesim/internal/quant"
)

// Tables of a per-op performance database (package perfdb) as a fit or
// check reports them.
const (
	// TableGEMM is the bf16 GEMM rows (gemm_perf), fitted.
	TableGEMM = "gemm"
	// TableContext is the context (prefill) attention rows with a bf16 KV
	// cache (context_attention_perf), fitted.
	TableContext = "context_attention"
	// TableGeneration is the generation (decode) attention rows with a
	// bf16 KV cache (generation_attention_perf), fitted.
	TableGeneration = "generation_attention"
	// TableGEMMFP8 is the fp8 (per-tensor W8A8) GEMM rows: fitted for the
	// fp8 terms only (fp8_compute_eff, fp8_quant_us; see FitPerfDB).
	TableGEMMFP8 = "gemm_fp8"
	// TableGEMMFP8Block is the block-scaled fp8 GEMM rows (gemm_dtype
	// fp8_block, 128×128 weight blocks): fitted for the block fp8 terms
	// only (perf.Efficiency.FP8Block).
	TableGEMMFP8Block = "gemm_fp8_block"
	// TableGEMMNVFP4 is the NVFP4 W4A4 GEMM rows: fitted for the NVFP4
	// terms only (perf.Efficiency.NVFP4).
	TableGEMMNVFP4 = "gemm_nvfp4"
	// TableAllReduce is vLLM's tensor-parallel all-reduce captured in a
	// CUDA graph (custom_allreduce_perf, backend vllm_graph) at 2, 4 and
	// 8 GPUs: fitted for the all-reduce constants only
	// (perf.Efficiency.Collective).
	TableAllReduce = "allreduce"
)

// PerfDBTables lists the database tables in report order.
var PerfDBTables = []string{TableGEMM, TableContext, TableGeneration, TableGEMMFP8, TableGEMMFP8Block, TableGEMMNVFP4, TableAllReduce}

// MaxAllReduceBytes bounds the all-reduce rows a database fit or check
// takes: the largest all-reduce a step of at most MaxStepTokens tokens
// sends for a hidden size of up to 8192 in bf16 (128 MiB).
const MaxAllReduceBytes = MaxStepTokens * 8192 * 2

// allReduceRow is one measured all-reduce: gpus ranks, bytes on each,
// ns.
type allReduceRow struct {
	gpus  int
	bytes int64
	ns    float64
}

// fp8BlockShape is the weight block of the database's fp8_block rows
// (AIConfigurator's collector quantises 128×128 blocks, DeepSeek-V3's).
var fp8BlockShape = []int{128, 128}

// OpGEMM is the op name of a database GEMM row.
const OpGEMM = "gemm"

// MaxStepTokens bounds the rows a database fit or check takes: GEMMs of
// M <= MaxStepTokens rows and context attention of Batch×Seq <=
// MaxStepTokens tokens. A serving step computes at most
// max_num_batched_tokens tokens, and vLLM's largest default budget is 8192
// (EngineArgs.get_batch_defaults, GPUs of 70 GiB or more); the database's
// larger shapes (M up to 32768, 16 sequences of 16k tokens) are prefills
// no step of a default server runs.
const MaxStepTokens = 8192

// KeepFrom is the calibration whose fields a database fit keeps: the
// RTX PRO 6000's, fitted on whole-step vLLM profile tables.
const KeepFrom = "RTXPRO6000"

// KeptFields names the efficiencies the database cannot inform, kept from
// the KeepFrom calibration: the elementwise ops' traffic multipliers and
// on-chip cache, the sampler, the attention skew terms (the database
// times uniform batches only) and the cost of an empty attention work unit
// (only mixed prefill-and-decode steps launch empty units, and the
// database times no mixed step).
const KeptFields = "op_scale, cache_mb, cache_speed, sampler_passes, sampler_us, attention skew, decode_skew, empty_us"

// decodeCopyParam is the cost of FlashAttention 2's query transpose before
// a pure-decode launch (perf.Efficiency.AttnDecodeCopyNs). Only a table
// that times decode batches of one request or one KV head beside larger
// ones tells it apart from the decode launch, so only the database fit of
// a GPU that runs that path (perf.RooflineHW.SwapGQADecode) frees it.
var decodeCopyParam = field("attn_decode_copy", func(e *perf.Efficiency) *float64 { return &e.AttnDecodeCopyNs }, 3000, 10, 1e5)

// fp8Params are the fp8 W8A8 GEMM terms (perf.Efficiency.FP8Compute,
// FP8QuantNs, FP8Sharpness and FP8QuantPsPerElem) fitted on the fp8 rows
// with every bf16 term held.
var fp8Params = []param{
	field("fp8_compute", func(e *perf.Efficiency) *float64 { return &e.FP8Compute }, 0.7, 0.05, 1.2),
	field("fp8_quant", func(e *perf.Efficiency) *float64 { return &e.FP8QuantNs }, 2000, 10, 1e5),
	field("fp8_sharpness", func(e *perf.Efficiency) *float64 { return &e.FP8Sharpness }, 2.5, 1, 50),
	field("fp8_quant_per_elem", func(e *perf.Efficiency) *float64 { return &e.FP8QuantPsPerElem }, 10, 0.01, 1e4),
}

// scaledParams are the GEMM terms of a block-scaled format (ScaledGEMM of
// the efficiency get returns), fitted on that format's rows with every
// bf16 term held.
func scaledParams(prefix string, get func(e *perf.Efficiency) *perf.ScaledGEMM) []param {
	return []param{
		field(prefix+".compute", func(e *perf.Efficiency) *float64 { return &get(e).Compute }, 0.6, 0.05, 1),
		field(prefix+".memory", func(e *perf.Efficiency) *float64 { return &get(e).Memory }, 0.6, 0.05, 1.2),
		field(prefix+".quant", func(e *perf.Efficiency) *float64 { return &get(e).QuantNs }, 3000, 10, 1e5),
		field(prefix+".sharpness", func(e *perf.Efficiency) *float64 { return &get(e).Sharpness }, 2.5, 1, 50),
		field(prefix+".quant_per_elem", func(e *perf.Efficiency) *float64 { return &get(e).QuantPsPerElem }, 10, 0.01, 1e4),
	}
}

var (
	fp8BlockParams = scaledParams("fp8_block", func(e *perf.Efficiency) *perf.ScaledGEMM { return &e.FP8Block })
	nvfp4Params    = scaledParams("nvfp4", func(e *perf.Efficiency) *perf.ScaledGEMM { return &e.NVFP4 })
)

// decodeUnitParam is the fixed cost of a pure-decode work unit
// (perf.Efficiency.AttnDecodeUnitNs), freed by the database fit of tables
// measured with vLLM's FlashInfer backend, whose decode and prefill are
// different kernels.
var decodeUnitParam = field("attn_decode_unit", func(e *perf.Efficiency) *float64 { return &e.AttnDecodeUnitNs }, 1000, 10, 1e5)

// perfDBAttnParams are the attention parameters the database's context
// and generation rows inform: all but attn_empty; the decode copy when
// swap (the accelerator transposes GQA decode queries), the decode unit
// cost when flashInfer (the tables time FlashInfer's separate decode
// kernel).
func perfDBAttnParams(swap, flashInfer bool) []param {
	var out []param
	for _, p := range attnParams {
		if p.name != "attn_empty" {
			out = append(out, p)
		}
	}
	if swap {
		out = append(out, decodeCopyParam)
	}
	if flashInfer {
		out = append(out, decodeUnitParam)
	}
	return out
}

// PerfDBInput is one system's database rows ready for the roofline: each
// row evaluated by the roofline's own op model at the row's shape. GEMM
// rows are linear layers (perf.Roofline.LinearNs) of the model's dtype
// (bf16); fp8 rows the same layer with 1-byte weights at the accelerator's
// FP8 tensor rate (RooflineHW.QuantPeakFLOPS, QuantFP8), the way a W8A8
// model is timed: the bf16 efficiencies plus the fp8 terms fitted on
// them. Attention rows are
// a one-layer model with the row's per-GPU query and KV heads and head
// size at tp 1: a context row is a step of Batch prefill chunks of Seq
// tokens each, no history (PrefillTokens Batch×Seq over Batch sequences);
// a generation row Batch decodes of Seq context each (DecodeKVSum
// Batch×Seq, DecodeKVMax = DecodeKVMin = Seq).
type PerfDBInput struct {
	// Accelerator is the catalog name of the system's GPU.
	Accelerator string
	// System and Version are the database system and framework version.
	System, Version string
	// Source names the tables: "perfdb:<system>/vllm/<version>".
	Source string

	// Dropped counts, per table, the rows faster than the accelerator can
	// physically run them (see NewPerfDBInput), left out.
	Dropped map[string]int
	// FlashInfer reports that the selected attention rows were measured
	// with vLLM's FlashInfer backend (kernel_source vllm_flashinfer*),
	// whose decodes run a kernel of their own (see FitPerfDB).
	FlashInfer bool

	tables map[string][]sample
	inputs []*Input
	// allReduce is the TableAllReduce rows, timed by perf.NewAllReduce on
	// link (the accelerator's catalog link).
	allReduce []allReduceRow
	link      perf.Interconnect
	// native is the extra quantisation cost the fp8 rows were timed with
	// (nativeQuantTables), nil when they were not.
	native *nativeQuant
	// eager is the host's issue time the block fp8 rows were timed with
	// (eagerBlockTables), nil when they ran in CUDA graphs.
	eager *eagerIssue
}

// AcceleratorOfSystem returns the catalog accelerator whose perfdb_system
// is system.
func AcceleratorOfSystem(system string) (hw.Accelerator, error) {
	cat, err := hw.Default()
	if err != nil {
		return hw.Accelerator{}, err
	}
	var known []string
	for _, a := range cat.All() {
		if a.PerfDBSystem == system {
			return a, nil
		}
		if a.PerfDBSystem != "" {
			known = append(known, a.PerfDBSystem)
		}
	}
	sort.Strings(known)
	return hw.Accelerator{}, fmt.Errorf("no catalog accelerator has perfdb_system %q (known: %s)", system, strings.Join(known, ", "))
}

// NewPerfDBInput selects the rows of db a calibration is fitted and
// checked on, for accelerator acc (its catalog peaks and bandwidth): bf16
// GEMMs with M <= MaxStepTokens; full-attention (no window) rows with a
// bf16 KV cache, context rows of Batch×Seq <= MaxStepTokens; fp8 and
// block-scaled fp8 GEMMs (same M bound) when acc has FP8 tensor cores,
// NVFP4 GEMMs when it has FP4 ones (each timed as a linear layer of that
// format, perf.RooflineHW.QuantFP8 or Scaled); vLLM's all-reduce
// captured in a CUDA graph at 2, 4 and 8 GPUs of one node, messages up
// to MaxAllReduceBytes, timed by perf.NewAllReduce on acc's catalog link.
//
// Rows faster than a serving step can run are left out and counted
// (Dropped): a context row whose causal attention FLOPs (4·heads·head_dim·
// Batch·Seq(Seq+1)/2) would run above the accelerator's peak bf16 rate
// (not a timing of that computation: h200_sxm's context table holds rows
// up to 78× above peak), and a generation row whose KV (Batch·Seq·2·
// kv_heads·head_dim·2 bytes) would stream above its memory bandwidth (read
// from an L2 the benchmark left warm, see impossible).
//
// A context row of one-token sequences measured with vLLM's FlashInfer
// backend is a decode batch: that backend classifies a request by its
// query length (at most reorder_batch_threshold = 1 token is a decode,
// vllm/v1/attention/backends/flashinfer.py, split_decodes_and_prefills),
// so the row ran the decode kernel on Batch requests of one token of
// context, not the prefill kernel; AIConfigurator's collector records it
// so (collector/vllm/collect_attn.py). FlashAttention runs every request
// in one varlen kernel, so its one-token rows stay prefills.
func NewPerfDBInput(db *perfdb.DB, acc hw.Accelerator) (*PerfDBInput, error) {
	hwBF16, err := HWOf(acc, "bfloat16")
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	version := tablesVersion(db)
	in := &PerfDBInput{Accelerator: acc.Name, System: db.System, Version: version,
		Source: fmt.Sprintf("perfdb:%s/%s/%s", db.System, db.Framework, version), tables: map[string][]sample{}, Dropped: map[string]int{}}
	// Any valid shape: only LinearNs is evaluated.
	gm := perf.RooflineModel{Layers: 1, Hidden: 128, Intermediate: 128, Heads: 1, KVHeads: 1, HeadDim: 128, Vocab: 1, BytesPerElem: 2}
	bf16 := in.input(gm, hwBF16)
	var fp8 *Input
	if acc.PeakFLOPSFP8 > 0 {
		q := gm
		q.WeightBytes = 1
		h := hwBF16
		h.QuantPeakFLOPS = acc.PeakFLOPSFP8
		h.QuantFP8 = true
		fp8 = in.input(q, h)
	}
	scaled := func(peak float64, f perf.ScaledFormat, qf quant.Format) *Input {
		if peak == 0 {
			return nil
		}
		q := gm
		q.WeightBytes = qf.WeightBytes()
		h := hwBF16
		h.QuantPeakFLOPS, h.Scaled = peak, f
		return in.input(q, h)
	}
	block, err := quant.Parse(quant.Spec{Dtype: "bf16", Quantization: quant.FP8, WeightBlockSize: fp8BlockShape})
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	fp4, err := quant.Parse(quant.Spec{Dtype: "bf16", Quantization: quant.NVFP4})
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	byDtype := map[string]*Input{"bfloat16": bf16, "fp8": fp8,
		"fp8_block": scaled(acc.PeakFLOPSFP8, perf.ScaledFP8Block, block), "nvfp4": scaled(acc.PeakFLOPSFP4, perf.ScaledNVFP4, fp4)}
	tableOf := map[string]string{"bfloat16": TableGEMM, "fp8": TableGEMMFP8, "fp8_block": TableGEMMFP8Block, "nvfp4": TableGEMMNVFP4}
	shapes, err := gemmGrid(db.GEMM)
	if err != nil {
		return nil, err
	}
	if nativeQuantTables(db) {
		in.native = &nativeQuant{fixedNs: 3000, l2Bytes: 64e6}
	}
	if eagerBlockTables(db) {
		in.eager = &eagerIssue{hostNs: 20000}
	}
	for _, g := range db.GEMM {
		if g.M < 1 || g.M > MaxStepTokens || g.N < 1 || g.K < 1 || !(g.Ms > 0) || !shapes[[2]int{g.N, g.K}] {
			continue
		}
		s := sample{p: perf.Point{Op: OpGEMM, X: g.M, Ns: g.Ms * 1e6}, mkn: [3]int{g.M, g.K, g.N}}
		if s.in = byDtype[g.Dtype]; s.in == nil {
			continue // a dtype the accelerator cannot run, or not modelled
		}
		s.p.Category = tableOf[g.Dtype]
		switch s.p.Category {
		case TableGEMMFP8:
			s.coll.native = in.native
		case TableGEMMFP8Block:
			s.coll.eager = in.eager
		}
		in.tables[s.p.Category] = append(in.tables[s.p.Category], s)
	}
	serving, err := ServingAttentionShapes()
	if err != nil {
		return nil, err
	}
	attnShapes := map[[3]int]*Input{}
	attn := func(rows []perfdb.AttnRow, table string, batch func(r perfdb.AttnRow) perf.Batch) {
		for _, r := range rows {
			if r.KVDtype != "bfloat16" || r.Window != 0 || r.Batch < 1 || r.Seq < 1 || !(r.Ms > 0) ||
				r.Heads < 1 || r.KVHeads < 1 || r.HeadDim < 1 || r.Heads%r.KVHeads != 0 {
				continue
			}
			if table == TableContext && r.Batch*r.Seq > MaxStepTokens || !serving[[3]int{r.Heads, r.KVHeads, r.HeadDim}] {
				continue
			}
			if impossible(r, table, acc) {
				in.Dropped[table]++
				continue
			}
			key := [3]int{r.Heads, r.KVHeads, r.HeadDim}
			ip, ok := attnShapes[key]
			if !ok {
				m := perf.RooflineModel{Layers: 1, Hidden: r.Heads * r.HeadDim, Intermediate: 128, Heads: r.Heads,
					KVHeads: r.KVHeads, HeadDim: r.HeadDim, Vocab: 1, BytesPerElem: 2}
				ip = in.input(m, hwBF16)
				attnShapes[key] = ip
			}
			in.FlashInfer = in.FlashInfer || strings.HasPrefix(r.Kernel, "vllm_flashinfer")
			b := batch(r)
			in.tables[table] = append(in.tables[table], sample{in: ip, b: &b,
				p: perf.Point{Category: table, Op: perf.OpAttention, Ns: r.Ms * 1e6}})
		}
	}
	attn(db.Context, TableContext, func(r perfdb.AttnRow) perf.Batch {
		if r.Seq == 1 && strings.HasPrefix(r.Kernel, "vllm_flashinfer") {
			return perf.Batch{NumDecode: r.Batch, DecodeKVSum: int64(r.Batch), DecodeKVMax: 1, DecodeKVMin: 1}
		}
		return perf.Batch{PrefillTokens: r.Batch * r.Seq, PrefillSeqs: r.Batch}
	})
	attn(db.Generation, TableGeneration, func(r perfdb.AttnRow) perf.Batch {
		return perf.Batch{NumDecode: r.Batch, DecodeKVSum: int64(r.Batch) * int64(r.Seq), DecodeKVMax: r.Seq, DecodeKVMin: r.Seq}
	})
	in.link = perf.Interconnect{NVLink: acc.Link.FullyConnected(), P2P: acc.Link.P2P, LinkBW: acc.Link.Bandwidth}
	for _, r := range db.CustomAR {
		n := r.GPUs
		if r.Backend != "vllm_graph" || r.Dtype != "bfloat16" || (n != 2 && n != 4 && n != 8) || !(r.Ms > 0) ||
			(acc.Node.GPUs > 0 && n > acc.Node.GPUs) || 2*r.Size > MaxAllReduceBytes || r.Size < 1 || in.link.LinkBW <= 0 {
			continue
		}
		in.allReduce = append(in.allReduce, allReduceRow{gpus: n, bytes: 2 * r.Size, ns: r.Ms * 1e6})
	}
	for _, t := range []string{TableGEMM, TableContext, TableGeneration} {
		if len(in.tables[t]) == 0 {
			return nil, fmt.Errorf("calibrate: %s has no usable %s rows (bf16, within %d tokens per step)", in.Source, t, MaxStepTokens)
		}
	}
	for _, ip := range in.inputs {
		if _, err := perf.NewRoofline(ip.Model, ip.HW, perf.Efficiency{}, ip.TP); err != nil {
			return nil, fmt.Errorf("calibrate: %s: %w", in.Source, err)
		}
	}
	return in, nil
}

// tablesVersion is the framework version the GEMM and attention tables
// were read from (a system without tables at the requested version is
// read at the nearest measured one): one version, or "gemm V1, attention
// V2" when they differ; db.Version when db records no tables.
func tablesVersion(db *perfdb.DB) string {
	vs := map[string]string{}
	for _, t := range db.Tables {
		switch t.Name {
		case "gemm_perf":
			vs["gemm"] = t.Version
		case "context_attention_perf", "generation_attention_perf":
			if v, ok := vs["attention"]; !ok || compareVersion(t.Version, v) > 0 {
				vs["attention"] = t.Version
			}
		}
	}
	g, a := vs["gemm"], vs["attention"]
	switch {
	case g == "" && a == "":
		return db.Version
	case g == a || a == "":
		return g
	case g == "":
		return a
	}
	return "gemm " + g + ", attention " + a
}

// compareVersion orders dotted version strings numerically where they
// are numbers.
func compareVersion(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		var x, y int
		_, ex := fmt.Sscan(pa[i], &x)
		_, ey := fmt.Sscan(pb[i], &y)
		switch {
		case ex == nil && ey == nil && x != y:
			return x - y
		case (ex != nil || ey != nil) && pa[i] != pb[i]:
			return strings.Compare(pa[i], pb[i])
		}
	}
	return len(pa) - len(pb)
}

// impossible reports whether attention row r of table is faster than a
// serving step on acc can run it: a context row above the peak bf16 FLOP
// rate, a generation row streaming its KV above the memory bandwidth. The
// latter read their KV from L2, left warm by the benchmark's previous
// repetition of the same one-layer kernel (the KV fits in L2); in a
// serving step every layer's KV is cold, evicted by the other layers'
// weights and KV since the previous step read it.
func impossible(r perfdb.AttnRow, table string, acc hw.Accelerator) bool {
	sec := r.Ms / 1e3
	b, seq := float64(r.Batch), float64(r.Seq)
	if table == TableContext {
		flops := 4 * float64(r.Heads*r.HeadDim) * b * seq * (seq + 1) / 2
		return flops/sec > acc.PeakFLOPSBF16
	}
	kv := b * seq * float64(2*r.KVHeads*r.HeadDim*2)
	return kv/sec > acc.MemBandwidth
}

func (in *PerfDBInput) input(m perf.RooflineModel, h perf.RooflineHW) *Input {
	ip := &Input{Model: m, HW: h, TP: 1}
	in.inputs = append(in.inputs, ip)
	return ip
}

// Rows returns the number of rows of each table.
func (in *PerfDBInput) Rows() map[string]int {
	out := map[string]int{}
	for k, v := range in.tables {
		out[k] = len(v)
	}
	if len(in.allReduce) > 0 {
		out[TableAllReduce] = len(in.allReduce)
	}
	return out
}

// Every returns a copy of in keeping every n-th row of each table (in the
// database's file order, from the first): a deterministic subsample for
// quick checks. n <= 1 keeps every row.
func (in *PerfDBInput) Every(n int) *PerfDBInput {
	out := *in
	out.tables = map[string][]sample{}
	for k, v := range in.tables {
		if n <= 1 {
			out.tables[k] = v
			continue
		}
		for i := 0; i < len(v); i += n {
			out.tables[k] = append(out.tables[k], v[i])
		}
	}
	return &out
}

// SMOccupancies are the attention CTAs per SM a database fit tries on an
// accelerator whose SM count the catalog gives: FlashAttention's and
// FlashInfer's prefill kernels hold one or two CTAs of a 128-row tile
// per SM (their shared memory and registers allow no more at head size
// 128), a 64-row tile up to four.
var SMOccupancies = []int{1, 2}

// DecodeOccupancies are the CTAs per SM of the pure-decode kernel a
// database fit with SMOccupancies tries: decode kernels' CTAs are small
// (one KV split of a few query heads each), so an SM may hold several.
var DecodeOccupancies = []int{1, 2, 4, 8}

// FitPerfDB fits an accelerator's efficiencies on its database rows: the
// GEMM parameters (compute and memory fractions, launch cost, sharpness)
// on the bf16 GEMM rows, the fp8 terms (the fraction of the FP8 rate, the
// activation quantisation kernel) on the fp8 rows with those held, the
// block-scaled fp8 and NVFP4 terms (perf.ScaledGEMM) on their rows, the
// all-reduce constants on the all-reduce rows (per algorithm of vLLM's
// dispatch, see fitAllReduce), then
// the attention parameters on the context and
// generation rows (tile and wave-width grid, then a full fit, as Fit does),
// each table weighing the same; the decode query copy too on an
// accelerator running FlashAttention 2 (perf.RooflineHW.SwapGQADecode),
// and the decode unit cost on tables measured with FlashInfer
// (PerfDBInput.FlashInfer). The fields the database cannot inform
// (KeptFields) are taken from keep, the calibration of keepName; the entry
// says so (Entry.Kept). The report is the in-sample accuracy over every
// selected row.
func FitPerfDB(in *PerfDBInput, keep *Entry, keepName string, opt Options) (*Entry, *Report, error) {
	if keep == nil {
		return nil, nil, errors.New("calibrate: no calibration to keep the elementwise, sampler and skew fields from")
	}
	eff := keep.Efficiency()
	// Terms of formats and collectives the tables lack are not kept: the
	// bf16 terms and the link's defaults stand for them.
	eff.FP8Block, eff.NVFP4, eff.Collective = perf.ScaledGEMM{}, perf.ScaledGEMM{}, perf.CollectiveEff{}
	gemm := subsample(in.tables[TableGEMM], maxDenseRows)
	opt.progress(fmt.Sprintf("fitting %d of %d bf16 GEMM rows of %s", len(gemm), len(in.tables[TableGEMM]), in.Source))
	var err error
	if eff, _, err = fitGroup(eff, denseParams[:4], gemm); err != nil {
		return nil, nil, err
	}
	if eff, err = fitFP8(eff, in, opt); err != nil {
		return nil, nil, err
	}
	for _, sc := range []struct {
		table  string
		params []param
	}{{TableGEMMFP8Block, fp8BlockParams}, {TableGEMMNVFP4, nvfp4Params}} {
		if eff, err = fitScaled(eff, sc.table, sc.params, in.tables[sc.table], opt); err != nil {
			return nil, nil, err
		}
	}
	if len(in.allReduce) > 0 {
		opt.progress(fmt.Sprintf("fitting the all-reduce constants on %d all-reduce rows", len(in.allReduce)))
		eff = fitAllReduce(eff, in)
	}
	attn := append(append([]sample(nil), in.tables[TableContext]...), in.tables[TableGeneration]...)
	opt.progress(fmt.Sprintf("fitting %d context and %d generation attention rows (tile and wave-width grid, then a full fit)",
		len(in.tables[TableContext]), len(in.tables[TableGeneration])))
	swap, sms := false, 0
	for _, ip := range in.inputs {
		swap = swap || ip.HW.SwapGQADecode
		sms = ip.HW.SMs
	}
	if sms == 0 {
		opt.UnitsPerSM, opt.DecodeUnitsPerSM = nil, nil // no SM count: a free wave width
	}
	if eff, err = fitAttentionParams(eff, perfDBAttnParams(swap, in.FlashInfer), attn, opt); err != nil {
		return nil, nil, err
	}
	if eff.AttnUnitsPerSM > 0 {
		eff.AttnUnits = sms * eff.AttnUnitsPerSM // the wave in use, for the reader
	}
	rep, err := CheckPerfDB(eff, in)
	if err != nil {
		return nil, nil, err
	}
	en := NewEntry(eff, in.Source, rep)
	en.Kept = keepName + ": " + KeptFields
	return en, rep, nil
}

// CheckPerfDB evaluates efficiencies eff on the database rows of in: the
// relative error |predicted/measured - 1| per table (PerfDBTables) and per
// op group (GEMMs by M range, attention by head size).
func CheckPerfDB(eff perf.Efficiency, in *PerfDBInput) (*Report, error) {
	if err := checkCollection(eff, in); err != nil {
		return nil, err
	}
	rs := map[*Input]*perf.Roofline{}
	for _, ip := range in.inputs {
		r, err := perf.NewRoofline(ip.Model, ip.HW, eff, ip.TP)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %s: %w", in.Source, err)
		}
		rs[ip] = r
	}
	byTable, byOp := map[string][]float64{}, map[string][]float64{}
	for _, t := range PerfDBTables {
		for i := range in.tables[t] {
			s := &in.tables[t][i]
			b := s.batch()
			e := s.predict(rs[s.in], &b)/s.p.Ns - 1
			byTable[t] = append(byTable[t], e)
			byOp[opGroup(s)] = append(byOp[opGroup(s)], e)
		}
	}
	for _, r := range in.allReduce {
		e := in.allReduceNs(r, eff.Collective)/r.ns - 1
		byTable[TableAllReduce] = append(byTable[TableAllReduce], e)
		g := fmt.Sprintf("%s/tp%d", TableAllReduce, r.gpus)
		byOp[g] = append(byOp[g], e)
	}
	return report(byTable, byOp), nil
}

// opGroup is the finer group of a database row in a report: GEMMs by M
// (decode-sized, up to 128 rows, or prefill-sized), attention by table
// and per-GPU head shape.
func opGroup(s *sample) string {
	if s.p.Op == OpGEMM {
		if s.mkn[0] <= 128 {
			return s.p.Category + "/m<=128"
		}
		return s.p.Category + "/m>128"
	}
	m := s.in.Model
	return fmt.Sprintf("%s/h%dkv%dd%d", s.p.Category, m.Heads, m.KVHeads, m.HeadDim)
}
