// Package quant describes the storage and compute formats of a model's
// weights and KV cache, with vLLM's names: the compute dtype (bf16, fp16),
// the weight quantization method (fp8, fp8 block-wise, AWQ and GPTQ
// weight-only integers, NVFP4) and the KV-cache dtype (auto, fp8,
// fp8_e4m3, fp8_e5m2).
//
// A Format answers three questions for the rest of the simulator:
//
//   - how many bytes one quantised weight takes, scales and zero points
//     included (WeightBytes), and how many bytes one KV element takes
//     (KVBytes);
//   - at which tensor-core rate the quantised GEMMs run (GEMM): the FP8 or
//     FP4 rate when activations are quantised too (W8A8, W4A4), the
//     compute dtype's rate when only the weights are (W4A16, W8A16: the
//     kernel dequantises them to bf16/fp16 in registers);
//   - which bundle variant of measured profiles matches it (Variant).
//
// Only the linear layers of the transformer blocks are quantised
// (attention projections and MLP or expert matrices); embeddings, lm_head,
// norms and the MoE router stay in the compute dtype, as vLLM keeps them.
// docs/quantization.md gives the formats' definitions and sources.
package quant
