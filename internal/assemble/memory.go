package assemble

import (
	"fmt"
	"math"
	"strings"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/kv"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/quant"
)

// An instance's memory: weights, activations and KV per GPU, and the
// nearest choices that fit when a model does not.

// gpuMemory is the memory budget of one GPU of an instance of tp x pp GPUs:
// it holds 1/(tp·pp) of the weights (linear layers in the format's
// quantised size) and, per token, the KV of its stage's layers on its
// share of the KV heads in the KV-cache dtype. Activations and the rotary
// cache stay in the compute dtype (bpe).
func gpuMemory(m *model.Config, memBytes int64, tp, pp, bpe int, qf quant.Format, eng config.Engine) kv.Memory {
	return gpuMemoryEP(m, memBytes, tp, pp, 1, bpe, qf, eng)
}

// gpuMemoryEP is gpuMemory for a GPU of a data-parallel rank with expert
// parallelism over ep GPUs (ep = dp·tp): the routed experts are sharded
// over the ep GPUs, everything else (attention, dense layers, norms,
// embeddings, lm_head) is replicated per DP rank and split over its tp
// GPUs; the KV is the rank's own. ep = 1 is gpuMemory.
func gpuMemoryEP(m *model.Config, memBytes int64, tp, pp, ep, bpe int, qf quant.Format, eng config.Engine) kv.Memory {
	inter := m.IntermediateSize
	if inter == 0 { // MoE-only: the routed experts' width per token
		inter = m.MoEIntermediateSize * max(m.ExpertsPerTok, 1)
	}
	return kv.Memory{
		Device:      memBytes,
		Utilization: eng.GPUMemoryUtilization,
		Weights:     weightsPerGPU(m, tp, pp, ep, bpe, qf.WeightBytes()) + m.RotaryCacheBytes(bpe),
		Activation: kv.ProfilePeak(kv.ProfileShape{Tokens: eng.MaxNumBatchedTokens, Seqs: min(eng.MaxNumSeqs, eng.MaxNumBatchedTokens),
			Hidden: m.HiddenSize, Intermediate: inter, QKV: (m.NumHeads + 2*m.NumKVHeads) * m.HeadDim, Vocab: m.VocabSize, TP: tp, BytesPerElem: bpe}),
		NonTorch:   kv.NonTorchBytes(tp * pp),
		KVPerToken: kvPerTokenPerGPU(m, qf.KVBytes(), tp, pp),
	}
}

// weightsPerGPU is one GPU's share of the weights: 1/(tp·pp) of them, or,
// with expert parallelism (ep > 1), 1/ep of the routed experts plus
// 1/(tp·pp) of the rest. Linear layers (routed experts included) take
// linearBytes per parameter, the rest bpe (model.QuantizedWeightBytes).
func weightsPerGPU(m *model.Config, tp, pp, ep, bpe int, linearBytes float64) int64 {
	all := m.QuantizedWeightBytes(bpe, linearBytes)
	if ep <= 1 {
		return all / int64(tp*pp)
	}
	// The routed experts are linear layers: they take the format's size.
	experts := m.RoutedExpertParams() * int64(bpe)
	if linearBytes != float64(bpe) {
		experts = int64(math.Ceil(float64(m.RoutedExpertParams()) * linearBytes))
	}
	return (all-experts)/int64(tp*pp) + experts/int64(ep)
}

// kvPerTokenPerGPU is the KV size of one token on one GPU: the tensor-
// parallel rank's share, for the layers of the largest pipeline stage
// (ceil(layers/pp); exactly 1/pp of the rank's KV when pp divides them).
func kvPerTokenPerGPU(m *model.Config, kvBytes, tp, pp int) int64 {
	perRank := m.KVBytesPerTokenPerRank(kvBytes, tp)
	if pp <= 1 || m.NumLayers <= 0 {
		return perRank
	}
	layers := (m.NumLayers + int64(pp) - 1) / int64(pp)
	return perRank / m.NumLayers * layers
}

// fitHint names the nearest valid choices when a model does not fit: the
// smallest tensor-parallel degree that fits this accelerator, and the
// catalog accelerators that hold it at this degree.
func fitHint(m *model.Config, acc hw.Accelerator, tp, pp, bpe int, qf quant.Format, eng config.Engine, memGB float64, hma bool) string {
	fits := func(a hw.Accelerator, t int) bool {
		memBytes := a.MemoryBytes
		if memGB > 0 && a.Name == acc.Name {
			memBytes = int64(memGB * 1e9)
		}
		mem := gpuMemory(m, memBytes, t, pp, bpe, qf, eng)
		n, err := mem.Blocks(eng.BlockSize)
		if hy, ok := hybridLayout(m, eng, t, pp, qf.KVBytes()); ok && hma {
			n, _, err = hy.Blocks(mem)
		}
		return err == nil && n > 0
	}
	var parts []string
	for t := tp * 2; t <= 64; t *= 2 {
		if fits(acc, t) {
			parts = append(parts, fmt.Sprintf("tp=%d on %s", t, acc.Name))
			break
		}
	}
	if cat, err := hw.Default(); err == nil {
		var accs []string
		for _, a := range cat.All() {
			if a.Name != acc.Name && fits(a, tp) {
				accs = append(accs, a.Name)
			}
		}
		if len(accs) > 0 {
			parts = append(parts, fmt.Sprintf("tp=%d on %s", tp, strings.Join(accs, ", ")))
		}
	}
	hint := checkpointHint(m, qf)
	if len(parts) == 0 {
		return hint
	}
	return " (it fits with " + strings.Join(parts, ", or ") + ")" + hint
}

// checkpointHint points at the checkpoint's own weight format when the
// scenario leaves a quantised checkpoint (DeepSeek-V3's fp8, gpt-oss's
// mxfp4) unquantised.
func checkpointHint(m *model.Config, qf quant.Format) string {
	if qf.Quantized() || m.QuantMethod == "" {
		return ""
	}
	return fmt.Sprintf("; the %s checkpoint ships %s weights (config.json quantization_config): set quantization: %s", m.Name, m.QuantMethod, m.QuantMethod)
}
