package perf

import (
	"fmt"
	"math"
)

// Efficiency holds the calibrated constants that turn the ideal roofline of
// an accelerator into measured kernel times. They describe the accelerator
// (and the serving engine's kernels on it), not a model: one set is fitted
// per accelerator by package calibrate and applies to every model.
//
// Zero fields take the value of DefaultEfficiency, so a partly filled
// struct is valid.
type Efficiency struct {
	// Compute is the fraction of PeakFLOPS a large GEMM reaches.
	Compute float64
	// Memory is the fraction of MemBandwidth a streaming kernel reaches.
	Memory float64
	// LaunchNs is the fixed cost of one kernel (launch, tail, sync), ns.
	LaunchNs float64
	// Sharpness p blends the compute and memory times of a GEMM:
	// t = (tc^p + tm^p)^(1/p). Large p is the hard max of the textbook
	// roofline; small p charges the ridge region, where neither limit is
	// reached, a little of both.
	Sharpness float64
	// CacheBytes is the effective on-chip (L2) cache capacity: an
	// elementwise kernel whose working set is W bytes finds min(1,
	// CacheBytes/W) of its traffic in cache.
	CacheBytes float64
	// CacheSpeed is the cache bandwidth as a multiple of MemBandwidth×Memory.
	CacheSpeed float64
	// SamplerPasses is how many times the sampler streams the fp32 logits
	// (sequences × vocab × 4 bytes); SamplerNs its fixed cost, ns.
	SamplerPasses, SamplerNs float64

	// AttnCompute is the fraction of PeakFLOPS the attention kernel reaches
	// when every unit is busy with a full tile.
	AttnCompute float64
	// AttnMemory is the fraction of MemBandwidth the attention kernel reads
	// the KV cache at.
	AttnMemory float64
	// AttnLaunchNs is the fixed cost of the attention kernel, ns.
	AttnLaunchNs float64
	// AttnSharpness blends attention compute and memory time like Sharpness.
	AttnSharpness float64
	// AttnTileQ is the number of query rows one attention work unit (CTA)
	// computes: FlashAttention-style kernels pad every sequence's query rows
	// (per head) up to whole tiles.
	AttnTileQ int
	// AttnUnits is how many attention work units run at once (the wave
	// width); 0 disables wave quantisation.
	AttnUnits int
	// AttnUnitsPerSM, when the accelerator's SM count is known
	// (RooflineHW.SMs), replaces AttnUnits by SMs × AttnUnitsPerSM: the
	// CTAs of the attention kernel one SM holds at once (its occupancy), a
	// whole number. A wave of that width is the GPU's own; the compute
	// time of a launch is then also never less than its longest work unit,
	// which runs on one SM however many others are idle (a causal
	// prefill's last query tile attends to the whole sequence, twice its
	// tiles' mean). 0 (or an accelerator without an SM count): AttnUnits,
	// a fitted width, without that bound.
	AttnUnitsPerSM int
	// AttnDecodeUnitsPerSM replaces AttnUnitsPerSM for the launches of
	// pure-decode steps, where the decode kernel is not the prefill
	// kernel (FlashInfer on SM 10.x, see AttnDecodeUnitNs) and holds its
	// own number of CTAs per SM. 0: AttnUnitsPerSM.
	AttnDecodeUnitsPerSM int
	// AttnCacheBytes is the cache capacity seen by the attention kernel when
	// several query heads (GQA) or query tiles read the same KV: reads
	// beyond the first hit the cache for min(1, AttnCacheBytes/W) of the
	// traffic, W being one KV head's working set over the batch.
	AttnCacheBytes float64
	// AttnCacheSpeed is the speed of those cache hits as a multiple of
	// MemBandwidth×AttnMemory.
	AttnCacheSpeed float64
	// AttnDecodeMemory and AttnDecodeLaunchNs replace AttnMemory and
	// AttnLaunchNs for pure-decode steps, which run FlashAttention's
	// GQA-packed decode path (the query heads of one KV head in one unit).
	AttnDecodeMemory, AttnDecodeLaunchNs float64
	// AttnDecodeUnitNs replaces AttnUnitNs for the work units of a
	// pure-decode step where the decode kernel is not the prefill kernel's
	// (vLLM's FlashInfer backend on SM 10.x runs TensorRT-LLM's generation
	// kernel for decodes and its context kernel for prefills, each with its
	// own per-unit prologue and epilogue). 0: AttnUnitNs.
	AttnDecodeUnitNs float64
	// AttnEmptyNs is the cost of an empty work unit: the kernel launches
	// ceil(longest chunk/AttnTileQ) query tiles for every sequence and head,
	// and the tiles past a shorter sequence's end exit at once. ns per unit,
	// AttnUnits of them at a time.
	AttnEmptyNs float64
	// AttnUnitNs is the fixed cost of one attention work unit (prologue,
	// epilogue, output write), ns.
	AttnUnitNs float64
	// AttnSkew is the fraction of the way from the time of a uniform batch
	// at the mean decode context to that of a uniform batch at the longest
	// context that a skewed batch costs (see attention). 0 disables the
	// correction. AttnDecodeSkew replaces it for pure-decode steps, which
	// run the GQA-packed decode path (fewer, longer units per request).
	AttnSkew, AttnDecodeSkew float64
	// AttnDecodeCopyNs is the cost of the query transpose a pure-decode
	// step runs before the attention kernel on hardware that swaps GQA
	// groups (RooflineHW.SwapGQADecode), when the batch has two or more
	// requests of one query token and the GPU two or more KV heads, ns. 0
	// charges nothing (calibrations whose fit absorbed the copy in
	// AttnDecodeLaunchNs, having always measured it).
	AttnDecodeCopyNs float64

	// FP8Compute replaces Compute for the GEMMs of fp8 W8A8 linear layers
	// (RooflineHW.QuantFP8): the fraction of the FP8 tensor rate their
	// scaled-mm kernels reach, which one bf16 fraction does not carry to.
	// 0: Compute.
	FP8Compute float64
	// FP8QuantNs is the cost of the activation quantisation kernel an fp8
	// W8A8 linear layer runs before its GEMM (RooflineHW.QuantFP8), ns; 0
	// charges nothing.
	FP8QuantNs float64
	// FP8QuantPsPerElem is the part of that kernel's cost proportional to
	// the activations it quantises (M·K elements of the GEMM's input,
	// each read in the compute dtype and written in fp8), ps per element;
	// 0 charges only FP8QuantNs.
	FP8QuantPsPerElem float64
	// FP8Sharpness replaces Sharpness in the blend of compute and memory
	// time of the fp8 W8A8 GEMMs (a different kernel family, CUTLASS's
	// scaled-mm, whose transition from memory- to compute-bound differs).
	// 0: Sharpness.
	FP8Sharpness float64
	// FP8Waves quantises the compute time of fp8 W8A8 GEMMs in waves of
	// whole output tiles over the accelerator's SMs, as vLLM's SM90 and
	// SM120 scaled-mm kernels run them (RooflineHW.ScaledMMSM90 and
	// ScaledMMSM120; ignored elsewhere or without an SM count): a GEMM
	// whose tiles spill one past a multiple of the SM count costs a whole
	// wave more.
	FP8Waves bool

	// FP8Block and NVFP4 are the GEMM terms of block-scaled fp8 and NVFP4
	// W4A4 linear layers (RooflineHW.Scaled), which run other kernels
	// than per-tensor fp8: see ScaledGEMM. Zero values keep the bf16
	// terms at the format's tensor rate.
	FP8Block, NVFP4 ScaledGEMM

	// Collective is the all-reduce constants fitted on the accelerator's
	// measured all-reduces (zero: the link kind's defaults, see
	// NewAllReduce). The roofline itself does not use them: the
	// tensor-parallel collectives (WithCollectives) do.
	Collective CollectiveEff

	// OpScale multiplies the traffic of individual memory-bound ops, by op
	// name (embedding, layernorm, final_layernorm, qk_norm, rotary_emb,
	// act_fn): how far each kernel's access pattern is from a plain stream
	// of the bytes the roofline counts. Absent ops use 1.
	OpScale map[string]float64
}

// DefaultEfficiency is used for accelerators without calibration: typical
// values of the FlashAttention/cuBLAS kernels vLLM runs on recent NVIDIA
// GPUs.
var DefaultEfficiency = Efficiency{
	Compute:            0.8,
	Memory:             0.9,
	LaunchNs:           2500,
	Sharpness:          2.5,
	CacheBytes:         40e6,
	CacheSpeed:         2,
	SamplerPasses:      2,
	SamplerNs:          15000,
	AttnCompute:        0.55,
	AttnMemory:         0.95,
	AttnLaunchNs:       8000,
	AttnSharpness:      4,
	AttnTileQ:          128,
	AttnUnits:          0,
	AttnCacheBytes:     40e6,
	AttnCacheSpeed:     1.5,
	AttnUnitNs:         1000,
	AttnDecodeMemory:   0.95,
	AttnEmptyNs:        300,
	AttnDecodeLaunchNs: 8000,
}

// withDefaults fills zero fields from DefaultEfficiency.
func (e Efficiency) withDefaults() Efficiency {
	d := DefaultEfficiency
	f := func(v *float64, def float64) {
		if *v == 0 {
			*v = def
		}
	}
	f(&e.Compute, d.Compute)
	f(&e.Memory, d.Memory)
	f(&e.LaunchNs, d.LaunchNs)
	f(&e.Sharpness, d.Sharpness)
	f(&e.CacheBytes, d.CacheBytes)
	f(&e.CacheSpeed, d.CacheSpeed)
	f(&e.SamplerPasses, d.SamplerPasses)
	f(&e.SamplerNs, d.SamplerNs)
	f(&e.AttnCompute, d.AttnCompute)
	f(&e.AttnMemory, d.AttnMemory)
	f(&e.AttnLaunchNs, d.AttnLaunchNs)
	f(&e.AttnSharpness, d.AttnSharpness)
	f(&e.AttnCacheBytes, d.AttnCacheBytes)
	f(&e.AttnCacheSpeed, d.AttnCacheSpeed)
	f(&e.AttnUnitNs, d.AttnUnitNs)
	f(&e.AttnDecodeMemory, d.AttnDecodeMemory)
	f(&e.AttnEmptyNs, d.AttnEmptyNs)
	f(&e.AttnDecodeLaunchNs, d.AttnDecodeLaunchNs)
	if e.AttnTileQ == 0 {
		e.AttnTileQ = d.AttnTileQ
	}
	return e
}

// Validate checks that every field is finite and in range.
func (e Efficiency) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
		max  float64
	}{
		{"compute", e.Compute, 1.5}, {"memory", e.Memory, 1.5},
		{"attn_compute", e.AttnCompute, 1.5}, {"attn_memory", e.AttnMemory, 1.5},
		{"launch", e.LaunchNs, 1e9}, {"attn_launch", e.AttnLaunchNs, 1e9},
		{"sharpness", e.Sharpness, 1e3}, {"attn_sharpness", e.AttnSharpness, 1e3},
		{"cache_bytes", e.CacheBytes, 1e15}, {"attn_cache_bytes", e.AttnCacheBytes, 1e15},
		{"cache_speed", e.CacheSpeed, 1e3}, {"attn_cache_speed", e.AttnCacheSpeed, 1e3},
		{"attn_unit", e.AttnUnitNs, 1e9}, {"attn_empty", e.AttnEmptyNs, 1e9},
		{"attn_decode_memory", e.AttnDecodeMemory, 1.5}, {"attn_decode_launch", e.AttnDecodeLaunchNs, 1e9},
		{"sampler_passes", e.SamplerPasses, 1e3}, {"sampler", e.SamplerNs, 1e9},
		{"attn_skew", e.AttnSkew, 1}, {"attn_decode_skew", e.AttnDecodeSkew, 1},
		{"attn_decode_copy", e.AttnDecodeCopyNs, 1e9}, {"attn_decode_unit", e.AttnDecodeUnitNs, 1e9},
		{"fp8_compute", e.FP8Compute, 1.5}, {"fp8_quant", e.FP8QuantNs, 1e9}, {"fp8_quant_per_elem", e.FP8QuantPsPerElem, 1e6}, {"fp8_sharpness", e.FP8Sharpness, 1e3},
		{"fp8_block.compute", e.FP8Block.Compute, 1.5}, {"fp8_block.memory", e.FP8Block.Memory, 1.5}, {"fp8_block.quant", e.FP8Block.QuantNs, 1e9},
		{"fp8_block.quant_per_elem", e.FP8Block.QuantPsPerElem, 1e6}, {"fp8_block.sharpness", e.FP8Block.Sharpness, 1e3},
		{"nvfp4.compute", e.NVFP4.Compute, 1.5}, {"nvfp4.memory", e.NVFP4.Memory, 1.5}, {"nvfp4.quant", e.NVFP4.QuantNs, 1e9},
		{"nvfp4.quant_per_elem", e.NVFP4.QuantPsPerElem, 1e6}, {"nvfp4.sharpness", e.NVFP4.Sharpness, 1e3},
	} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > f.max {
			return fmt.Errorf("efficiency %s = %g: want a value in [0, %g]", f.name, f.v, f.max)
		}
	}
	if err := e.Collective.Validate(); err != nil {
		return fmt.Errorf("efficiency %w", err)
	}
	for op, v := range e.OpScale {
		if math.IsNaN(v) || v <= 0 || v > 1e3 {
			return fmt.Errorf("efficiency op_scale[%s] = %g: want a value in (0, 1000]", op, v)
		}
	}
	if e.AttnTileQ < 0 || e.AttnTileQ > 4096 {
		return fmt.Errorf("efficiency attn_tile_q = %d: want [0, 4096]", e.AttnTileQ)
	}
	if e.AttnUnits < 0 || e.AttnUnits > 1<<20 {
		return fmt.Errorf("efficiency attn_units = %d: want >= 0", e.AttnUnits)
	}
	if e.AttnUnitsPerSM < 0 || e.AttnUnitsPerSM > 64 || e.AttnDecodeUnitsPerSM < 0 || e.AttnDecodeUnitsPerSM > 64 {
		return fmt.Errorf("efficiency attn_units_per_sm = %d, attn_decode_units_per_sm = %d: want [0, 64]", e.AttnUnitsPerSM, e.AttnDecodeUnitsPerSM)
	}
	return nil
}

// ScaledGEMM is what a linear layer with block-scaled quantised weights and
// activations costs beyond the bf16 terms: the activation quantisation
// kernel vLLM runs before each GEMM and the GEMM kernel's own fractions of
// the format's tensor rate and of the memory bandwidth.
//
// Block-scaled fp8 (quantization fp8 with weight_block_size, 128×128
// weight blocks): vLLM's W8A8 block linear quantises the input per token
// group of 128 (per_token_group_quant_fp8, one fp32 scale per group) and
// runs DeepGEMM's fp8_gemm_nt (or CUTLASS's blockwise scaled-mm), which
// rescales every 128-deep slice of the product by both operands' scales.
// NVFP4 W4A4: scaled_fp4_quant packs the input into FP4 values with an
// FP8 scale per 16 (written in the swizzled layout the GEMM reads), then
// cutlass_scaled_fp4_mm (or FlashInfer's mm_fp4) multiplies.
type ScaledGEMM struct {
	// Compute is the fraction of the format's tensor rate the GEMM
	// reaches (0: the bf16 Compute); Memory its fraction of the memory
	// bandwidth (0: the bf16 Memory).
	Compute, Memory float64
	// QuantNs is the fixed cost of the activation quantisation kernel,
	// ns; QuantPsPerElem its cost per activation element (M·K), ps.
	QuantNs, QuantPsPerElem float64
	// Sharpness replaces Sharpness in the blend of compute and memory
	// time (0: Sharpness).
	Sharpness float64
}

// IsZero reports that no term is set (the bf16 terms apply).
func (g ScaledGEMM) IsZero() bool { return g == ScaledGEMM{} }
