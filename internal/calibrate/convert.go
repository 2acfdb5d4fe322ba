package calibrate

import (
	"fmt"

	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/perf"
)

// ModelOf converts a HuggingFace config into the roofline's model shape,
// with elements of dtype ("" uses the config's dtype).
func ModelOf(c *model.Config, dtype string) (perf.RooflineModel, error) {
	if dtype == "" {
		dtype = c.Dtype
	}
	b, err := model.BytesPerElem(dtype)
	if err != nil {
		return perf.RooflineModel{}, fmt.Errorf("roofline model %s: %w", c.Name, err)
	}
	m := perf.RooflineModel{
		Layers:             int(c.NumLayers),
		Hidden:             int(c.HiddenSize),
		Intermediate:       int(c.IntermediateSize),
		Heads:              int(c.NumHeads),
		KVHeads:            int(c.NumKVHeads),
		HeadDim:            int(c.HeadDim),
		Vocab:              int(c.VocabSize),
		Experts:            int(c.NumExperts),
		ExpertsPerTok:      int(c.ExpertsPerTok),
		MoEIntermediate:    int(c.MoEIntermediateSize),
		SharedIntermediate: int(c.NumSharedExperts * c.SharedExpertIntermediateSize),
		BytesPerElem:       b,
		QKNorm:             c.QKNorm,
		TieEmbeddings:      c.TieWordEmbeddings,
		RooflineFrontier:   frontierOf(c),
	}
	return m, nil
}

// frontierOf is the roofline's view of c's MLA, its window-bounded layers
// (sliding windows, or Llama 4's chunks when it has no sliding layer) and
// the dense layers of an MoE model.
func frontierOf(c *model.Config) perf.RooflineFrontier {
	f := perf.RooflineFrontier{
		QLoraRank: int(c.QLoraRank), KVLoraRank: int(c.KVLoraRank),
		QKNopeHeadDim: int(c.QKNopeHeadDim), QKRopeHeadDim: int(c.QKRopeHeadDim), VHeadDim: int(c.VHeadDim),
		AttnUnquantized: c.UnquantizedAttention,
	}
	if c.NumExperts > 0 {
		f.DenseLayers = int(c.NumLayers) - c.NumMoELayers()
	}
	if n := c.NumLayersOfKind(model.AttnSliding); n > 0 {
		f.LocalLayers, f.LocalWindow = n, int(c.SlidingWindow)
	} else if n := c.NumLayersOfKind(model.AttnChunked); n > 0 {
		f.LocalLayers, f.LocalWindow, f.LocalChunked = n, int(c.AttentionChunkSize), true
	}
	return f
}

// HWOf converts an accelerator into the roofline's hardware, computing in
// dtype (its tensor-core peak), with GQA-packed attention on Hopper and
// FlashAttention 2's swapped-GQA decode where vLLM runs FlashAttention 2.
func HWOf(a hw.Accelerator, dtype string) (perf.RooflineHW, error) {
	peak, err := a.PeakFLOPS(dtype)
	if err != nil {
		return perf.RooflineHW{}, err
	}
	// vLLM runs FlashAttention 3 on compute capability 9.x (Hopper) and
	// FlashAttention 2 elsewhere (vllm/attention/utils/fa_utils.py,
	// get_flash_attn_version); FA3 packs GQA for varlen calls
	// (flash-attention hopper/heuristics.h, should_pack_gqa).
	packGQA := a.ComputeCapability >= 9 && a.ComputeCapability < 10
	// FlashAttention 2 on compute capability 8.x and 12.x; vLLM 0.19
	// runs FlashInfer on 10.x (vllm/platforms/cuda.py,
	// _get_backend_priorities). A catalog entry without a compute
	// capability is taken as FlashAttention 2 too.
	swap := a.ComputeCapability < 9 || a.ComputeCapability >= 12
	return perf.RooflineHW{PeakFLOPS: peak, MemBandwidth: a.MemBandwidth, PackGQA: packGQA, SwapGQADecode: swap, SMs: a.SMs, ScaledMM: scaledMM(a.ComputeCapability)}, nil
}

// scaledMM is the CUTLASS fp8 scaled-mm kernel family vLLM runs on
// compute capability cc (csrc/quantization/w8a8/cutlass/
// scaled_mm_entry.cu dispatches by the device's capability): the 3.x
// SM90 kernels on 9.x, the 3.x SM120 kernel on 12.x; others are not
// modelled by tile.
func scaledMM(cc float64) perf.ScaledMMKernel {
	switch {
	case cc >= 9 && cc < 10:
		return perf.ScaledMMSM90
	case cc >= 12 && cc < 13:
		return perf.ScaledMMSM120
	}
	return perf.ScaledMMOther
}
