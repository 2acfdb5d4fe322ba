package perf

import "math"

// ScaledMMKernel names a family of vLLM's CUTLASS fp8 scaled-mm kernels
// (csrc/quantization/w8a8/cutlass), each with its tile shapes chosen by
// the GEMM's M and N.
type ScaledMMKernel uint8

// The scaled-mm kernel families the roofline knows the tiles of.
const (
	// ScaledMMOther: tiles unknown, no wave quantisation.
	ScaledMMOther ScaledMMKernel = iota
	// ScaledMMSM90 is the persistent CUTLASS 3.x kernel of compute
	// capability 9.x (c3x/scaled_mm_sm90_fp8_dispatch.cuh).
	ScaledMMSM90
	// ScaledMMSM120 is the CUTLASS 3.x kernel of compute capability 12.x
	// (c3x/scaled_mm_sm120_fp8_dispatch.cuh before its small-M
	// configurations: one 128×128×128 tile configuration, clusters of one,
	// for every M, as the vLLM 0.19.0 rows of rtx_pro_6000_server show).
	ScaledMMSM120
)

// ScaledFormat names the block-scaled W8A8/W4A4 formats whose linear
// layers have GEMM terms of their own (Efficiency.FP8Block, NVFP4).
type ScaledFormat uint8

// The block-scaled formats.
const (
	// ScaledNone: per-tensor fp8, weight-only or unquantised layers.
	ScaledNone ScaledFormat = iota
	// ScaledFP8Block is fp8 weights in 2-D blocks with per-token-group
	// fp8 activations.
	ScaledFP8Block
	// ScaledNVFP4 is NVFP4 weights and activations (FP4 values, an FP8
	// scale per 16).
	ScaledNVFP4
)

// linear times a linear layer of a transformer block: a gemm whose
// weights may be quantised (read at wb bytes each, at the quantised
// format's tensor rate; activations and output stay in the compute dtype).
func (r *Roofline) linear(M, K, N float64) float64 {
	if !r.quant {
		return r.gemm(M, K, N)
	}
	if M <= 0 {
		return 0
	}
	flops := 2 * M * K * N
	bytes := K*N*r.wb + M*K*r.qActBytes + M*N*r.b
	tc := flops / r.qFlopRate * 1e9
	if r.qWaves {
		tc = r.fp8Waves(M, K, N, tc)
	}
	return r.eff.LaunchNs + r.qLaunch + M*K*r.qPerElem + softMax(tc, bytes/r.qMemRate*1e9, r.qInvP)
}

// scaledTerms are the efficiencies' GEMM terms of block-scaled format f
// (zero for ScaledNone).
func (r *Roofline) scaledTerms(f ScaledFormat) ScaledGEMM {
	switch f {
	case ScaledFP8Block:
		return r.eff.FP8Block
	case ScaledNVFP4:
		return r.eff.NVFP4
	}
	return ScaledGEMM{}
}

// fp8Waves is the compute time of an fp8 W8A8 GEMM of M rows run by
// vLLM's CUTLASS scaled-mm kernels: the GEMM lasts a whole number of
// waves of output tiles over the SMs, each tile a TM×TN×K product at one
// SM's share of the rate (ideal is the time without waves).
//
// SM90 (persistent: every SM computes whole tiles one after the other):
// for M > 128 tiles of 128×128 in clusters of two along M (M padded to
// 256 rows), for M in (64, 128] 64×128 in clusters of two; smaller M
// swap the operands into the narrow tiles of a memory-bound GEMM, where
// ideal is kept.
//
// SM120: 128×128 tiles for every M, no clusters and no operand swap, so
// even a one-row GEMM computes whole 128-row tiles: ceil(M/128)·ceil(N/128)
// CTAs, one per SM at a time.
//
// The block-fp8 GEMMs (RooflineHW.Scaled ScaledFP8Block) take the tiles
// of the accelerator's kernel: on SM90 DeepGEMM's persistent kernel,
// whose tile width it picks by shape (the SM90 tiles are an approximation
// that fits the database's block-fp8 rows better than no waves,
// docs/calibration.md); on SM120 vLLM's blockwise CUTLASS kernel, one
// 128×128×128 tile and no clusters
// (scaled_mm_blockwise_sm120_fp8_dispatch.cuh), as its NVFP4 kernel
// (nvfp4_scaled_mm_sm120_kernels.cu), which is waved on SM120 only.
//
// Other kernels keep ideal: the SM89 kernels of L40S-class GPUs
// (scaled_mm_c2x_sm89_fp8_dispatch.cuh) were tried with their tiles and
// fitted the database's fp8 rows worse (see docs/calibration.md).
func (r *Roofline) fp8Waves(M, K, N, ideal float64) float64 {
	sms := float64(r.hw.SMs)
	var tm, tn, ctas float64
	switch r.hw.ScaledMM {
	case ScaledMMSM90:
		if M <= 64 {
			return ideal
		}
		rows := 256.0 // a cluster of two 128-row tiles
		if M <= 128 {
			rows = 128 // two 64-row tiles
		}
		tm, tn = rows/2, 128
		ctas = math.Ceil(M/rows) * 2 * math.Ceil(N/tn)
	case ScaledMMSM120:
		tm, tn = 128, 128
		ctas = math.Ceil(M/tm) * math.Ceil(N/tn)
	default:
		return ideal
	}
	return math.Ceil(ctas/sms) * 2 * tm * tn * K / (r.qFlopRate / sms) * 1e9
}

// MemoryRate is the effective memory bandwidth of the roofline's
// memory-bound ops (bytes/s): the accelerator's bandwidth times
// Efficiency.Memory.
func (r *Roofline) MemoryRate() float64 { return r.memRate }
