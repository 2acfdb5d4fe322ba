package perf

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// RooflineModel is what the roofline predictor needs to know about a model:
// the unsharded dimensions of its HuggingFace config. The caller fills it
// from model.Config (perf does not import the model package).
type RooflineModel struct {
	Layers       int // num_hidden_layers
	Hidden       int // hidden_size
	Intermediate int // intermediate_size (dense MLP width)
	Heads        int // num_attention_heads
	KVHeads      int // num_key_value_heads (0: same as Heads)
	HeadDim      int // head_dim (0: Hidden / Heads)
	Vocab        int // vocab_size
	// Experts is the number of routed experts per layer; 0 for a dense
	// model. ExpertsPerTok is the top-k of the router and MoEIntermediate
	// the MLP width of one expert (0: Intermediate).
	Experts, ExpertsPerTok, MoEIntermediate int
	// SharedIntermediate is the total MLP width of the always-active shared
	// experts of an MoE layer (0 when there are none).
	SharedIntermediate int
	// BytesPerElem is the size of one weight/activation/KV element (2 for
	// bf16; 0 means 2).
	BytesPerElem int
	// WeightBytes is the size of one weight of the transformer blocks'
	// linear layers (qkv_proj, o_proj, gate_up_proj, down_proj and the
	// experts of moe) when they are quantised, scales and zero points
	// included (fractional for group-wise formats; see package quant). 0
	// means BytesPerElem. Embeddings, lm_head, norms and the MoE router
	// stay at BytesPerElem, as vLLM keeps them.
	WeightBytes float64
	// KVBytesPerElem is the size of one KV-cache element (1 for an fp8
	// cache); 0 means BytesPerElem.
	KVBytesPerElem int
	// QKNorm adds the per-head RMSNorm on queries and keys (Qwen3).
	QKNorm bool
	// TieEmbeddings reports that lm_head shares the embedding matrix. It does
	// not change the step time (the matrix is read by both ops either way)
	// and is kept for completeness.
	TieEmbeddings bool
	// RooflineFrontier: MLA, window-bounded layers, dense layers of an MoE
	// model (roofline_frontier.go).
	RooflineFrontier
}

// RooflineHW is what the roofline predictor needs to know about one
// accelerator (hw.Accelerator: PeakFLOPS(dtype), MemBandwidth).
type RooflineHW struct {
	PeakFLOPS    float64 // dense tensor FLOP/s for the model's dtype
	MemBandwidth float64 // device memory bytes/s
	// QuantPeakFLOPS is the dense tensor FLOP/s of the quantised linear
	// layers (the FP8 rate for fp8 W8A8, the FP4 rate for NVFP4 W4A4); 0
	// means PeakFLOPS (unquantised, or weight-only formats that
	// dequantise to the compute dtype).
	QuantPeakFLOPS float64
	// QuantFP8 says the quantised linear layers are fp8 W8A8 with dynamic
	// per-tensor activation scales (vLLM's Fp8LinearMethod): each runs an
	// activation quantisation kernel (scaled_fp8_quant) before the
	// scaled-mm GEMM, and reaches Efficiency.FP8Compute of QuantPeakFLOPS.
	QuantFP8 bool
	// Scaled says the quantised linear layers are block-scaled fp8 or
	// NVFP4 W4A4, timed with Efficiency.FP8Block or Efficiency.NVFP4
	// (ScaledNone: neither).
	Scaled ScaledFormat
	// PackGQA says the attention kernel packs the query heads of one KV
	// head into the same work units in every step, prefill and mixed
	// ones included (FlashAttention 3, which vLLM runs on Hopper, does so
	// for every varlen call), so each unit reads its KV head once. Without
	// it only pure-decode steps are packed (FlashAttention 2).
	PackGQA bool
	// SwapGQADecode says the pure-decode path packs GQA by transposing
	// the queries before the kernel rather than inside it (FlashAttention
	// 2's varlen call with one query token per request and more query
	// heads than KV heads, seqlenq_ngroups_swapped in flash_api.cpp): the
	// (request, KV head, group) query layout becomes (request, group, KV
	// head), which is a copy, one more kernel, whenever the batch has two
	// or more requests and two or more KV heads per GPU (with one of
	// either the transpose is a view). Efficiency.AttnDecodeCopyNs is its
	// cost.
	SwapGQADecode bool
	// SMs is the accelerator's streaming multiprocessor count (0:
	// unknown). With Efficiency.AttnUnitsPerSM it sets the attention
	// wave width (see Efficiency.AttnUnitsPerSM).
	SMs int
	// ScaledMM is the CUTLASS scaled-mm kernel family vLLM runs the fp8
	// W8A8 GEMMs with, whose output tiles the roofline quantises in waves
	// of SMs with Efficiency.FP8Waves (see fp8Waves).
	ScaledMM ScaledMMKernel
}

// Op names of the roofline, the same as the layer catalogs' and the profile
// tables'.
const (
	OpEmbedding      = "embedding"
	OpLayernorm      = "layernorm"
	OpQKVProj        = "qkv_proj"
	OpQKNorm         = "qk_norm"
	OpRotaryEmb      = "rotary_emb"
	OpAttention      = "attention"
	OpOProj          = "o_proj"
	OpGateUpProj     = "gate_up_proj"
	OpActFn          = "act_fn"
	OpDownProj       = "down_proj"
	OpMoE            = "moe"
	OpFinalLayernorm = "final_layernorm"
	OpLMHead         = "lm_head"
	OpSampler        = "sampler"
)

// OpUse is one op of a step and how often it runs (per-layer ops run once
// per layer; layernorm twice).
type OpUse struct {
	Op    string
	Count float64
}

// OpTime is one op's predicted time in a step.
type OpTime struct {
	Op    string
	Count float64 // occurrences in the step
	Ns    float64 // time of ONE occurrence, ns
}

// Roofline predicts step times from a model's shape and an accelerator's
// peak compute and bandwidth, with calibrated efficiencies. It is immutable
// and safe for concurrent use. Times are for one tensor-parallel rank
// (dimensions sharded by TP); collectives are not included (see
// WithCollectives).
type Roofline struct {
	m   RooflineModel
	hw  RooflineHW
	eff Efficiency
	tp  int
	ops []OpUse

	// per-rank dimensions
	b                  float64 // bytes per element
	h, inter, moeInter float64
	sharedInter        float64
	heads, kvHeads, hd float64
	vocab              float64
	qkvN               float64 // qkv_proj output width
	kvBytesPerTok      float64 // per layer, per rank: 2*kvHeads*hd*kvb
	flopRate, memRate  float64 // effective FLOP/s and bytes/s
	attnFlop, attnMem  float64
	attnDecMem         float64
	cacheRate          float64
	attnUnitNsPerKV    float64 // ns per KV position of one full tile work unit
	invP, invAttnP     float64
	attnPow            softPow // softMax's exponents for invAttnP
	tileQ, units       float64
	// smWave says the wave width is SMs × AttnUnitsPerSM: the attention
	// compute time is then never less than its longest work unit.
	smWave bool
	// decUnits and decNsPerKV are units and attnUnitNsPerKV for the
	// launches of pure-decode steps (Efficiency.AttnDecodeUnitsPerSM).
	decUnits, decNsPerKV float64
	gqa                  float64
	experts, expertsTopK int
	moeOp                int // index of OpMoE in ops, -1 for a dense model
	// traffic multipliers of the memory-bound ops
	scEmbed, scNorm, scFinalNorm, scQKNorm, scRotary, scAct float64

	cache *opCache // op times by token or sequence count
	// dec holds the pure-decode attention's predictor-only terms; plain
	// says the cache's program is plainProgram.
	dec   decodeConsts
	plain bool

	// kvb is the size of one KV element. wb and qFlopRate are the bytes
	// per weight and the effective FLOP/s of the quantised linear layers;
	// quant is false when they equal b and flopRate.
	kvb, wb, qFlopRate float64
	// qLaunch is the activation quantisation kernel of an fp8 W8A8
	// linear layer (Efficiency.FP8QuantNs), ns.
	qLaunch float64
	// qPerElem is that kernel's cost per activation element
	// (Efficiency.FP8QuantPsPerElem), ns.
	qPerElem float64
	// qInvP is 1/Efficiency.FP8Sharpness for fp8 W8A8 layers, else invP.
	qInvP float64
	// qWaves: the fp8 GEMMs' compute time is quantised in tile waves
	// (Efficiency.FP8Waves on an accelerator with a known ScaledMM and SMs).
	qWaves bool
	// qMemRate is the effective bytes/s of the quantised linear layers
	// (ScaledGEMM.Memory of a block-scaled format), else memRate.
	qMemRate float64
	// qActBytes is the size of one input activation element the
	// quantised GEMM reads: the compute dtype's, except for a
	// block-scaled format (ScaledGEMM), whose GEMM reads the activations
	// its quantisation kernel wrote, at the weights' size (the
	// activations' group scales, under 3 %, are not counted).
	qActBytes float64
	quant     bool
}

// NewRoofline builds the roofline predictor of model m on accelerator acc at
// tensor-parallel degree tp. Query heads, intermediate sizes and the
// vocabulary are divided by tp; KV heads become max(1, KVHeads/tp).
func NewRoofline(m RooflineModel, acc RooflineHW, eff Efficiency, tp int) (*Roofline, error) {
	if tp < 1 {
		return nil, fmt.Errorf("roofline: tensor-parallel degree must be >= 1, got %d", tp)
	}
	if m.KVHeads == 0 {
		m.KVHeads = m.Heads
	}
	if m.HeadDim == 0 && m.Heads > 0 {
		m.HeadDim = m.Hidden / m.Heads
	}
	if m.BytesPerElem == 0 {
		m.BytesPerElem = 2
	}
	if m.MoEIntermediate == 0 {
		m.MoEIntermediate = m.Intermediate
	}
	switch {
	case m.Layers < 1 || m.Hidden < 1 || m.Heads < 1 || m.HeadDim < 1 || m.Vocab < 1 || m.KVHeads < 1:
		return nil, fmt.Errorf("roofline: layers, hidden, heads, kv heads, head dim and vocab must be >= 1 (got %+v)", m)
	case m.Experts == 0 && m.Intermediate < 1:
		return nil, errors.New("roofline: a dense model needs intermediate >= 1")
	case m.Experts < 0 || (m.Experts > 0 && (m.ExpertsPerTok < 1 || m.ExpertsPerTok > m.Experts)):
		return nil, fmt.Errorf("roofline: experts per token must be in [1, experts=%d], got %d", m.Experts, m.ExpertsPerTok)
	case m.Heads%m.KVHeads != 0:
		return nil, fmt.Errorf("roofline: heads %d not a multiple of kv heads %d", m.Heads, m.KVHeads)
	case m.Heads%tp != 0:
		return nil, fmt.Errorf("roofline: heads %d not divisible by tp %d", m.Heads, tp)
	case !(acc.PeakFLOPS > 0) || !(acc.MemBandwidth > 0) || math.IsInf(acc.PeakFLOPS, 0) || math.IsInf(acc.MemBandwidth, 0):
		return nil, fmt.Errorf("roofline: accelerator peak FLOP/s and bandwidth must be positive (got %g, %g)", acc.PeakFLOPS, acc.MemBandwidth)
	case math.IsNaN(m.WeightBytes) || m.WeightBytes < 0 || m.WeightBytes > 8 || m.KVBytesPerElem < 0 || m.KVBytesPerElem > 8:
		return nil, fmt.Errorf("roofline: bytes per quantised weight must be in [0, 8] and per KV element in [0, 8] (got %g, %d)", m.WeightBytes, m.KVBytesPerElem)
	case math.IsNaN(acc.QuantPeakFLOPS) || acc.QuantPeakFLOPS < 0 || math.IsInf(acc.QuantPeakFLOPS, 0):
		return nil, fmt.Errorf("roofline: quantised GEMM peak FLOP/s must be finite and >= 0 (got %g)", acc.QuantPeakFLOPS)
	}
	if err := validateFrontier(m); err != nil {
		return nil, err
	}
	if m.WeightBytes == 0 {
		m.WeightBytes = float64(m.BytesPerElem)
	}
	if m.KVBytesPerElem == 0 {
		m.KVBytesPerElem = m.BytesPerElem
	}
	if acc.QuantPeakFLOPS == 0 {
		acc.QuantPeakFLOPS = acc.PeakFLOPS
	}
	if err := eff.Validate(); err != nil {
		return nil, fmt.Errorf("roofline: %w", err)
	}
	e := eff.withDefaults()
	t := float64(tp)
	r := &Roofline{m: m, hw: acc, eff: e, tp: tp}
	r.b = float64(m.BytesPerElem)
	r.h = float64(m.Hidden)
	r.inter = float64(m.Intermediate) / t
	r.moeInter = float64(m.MoEIntermediate) / t
	r.sharedInter = float64(m.SharedIntermediate) / t
	r.heads = float64(m.Heads) / t
	r.kvHeads = math.Max(1, float64(m.KVHeads)/t)
	r.hd = float64(m.HeadDim)
	r.vocab = float64(m.Vocab) / t
	r.qkvN = (r.heads + 2*r.kvHeads) * r.hd
	r.kvb = float64(m.KVBytesPerElem)
	r.kvBytesPerTok = 2 * r.kvHeads * r.hd * r.kvb
	r.gqa = r.heads / r.kvHeads
	r.flopRate = acc.PeakFLOPS * e.Compute
	r.memRate = acc.MemBandwidth * e.Memory
	r.wb, r.qFlopRate = m.WeightBytes, acc.QuantPeakFLOPS*e.Compute
	if acc.QuantFP8 {
		if e.FP8Compute > 0 {
			r.qFlopRate = acc.QuantPeakFLOPS * e.FP8Compute
		}
		r.qLaunch = e.FP8QuantNs
		r.qPerElem = e.FP8QuantPsPerElem / 1e3
		r.qWaves = e.FP8Waves && acc.ScaledMM != ScaledMMOther && acc.SMs > 0
		if e.FP8Sharpness > 0 {
			r.qInvP = 1 / e.FP8Sharpness
		}
	}
	r.qMemRate, r.qActBytes = r.memRate, r.b
	if g := r.scaledTerms(acc.Scaled); !g.IsZero() {
		r.qActBytes = r.wb
		if g.Compute > 0 {
			r.qFlopRate = acc.QuantPeakFLOPS * g.Compute
		}
		if g.Memory > 0 {
			r.qMemRate = acc.MemBandwidth * g.Memory
		}
		r.qLaunch, r.qPerElem = g.QuantNs, g.QuantPsPerElem/1e3
		// DeepGEMM's block-fp8 GEMM on SM90 is persistent too, and on
		// SM120 vLLM's block-fp8 and NVFP4 CUTLASS kernels run the same
		// 128×128 tiles as its fp8 one: with FP8Waves their compute time
		// is counted in tile waves as well (see fp8Waves).
		waved := acc.Scaled == ScaledFP8Block || acc.Scaled == ScaledNVFP4 && acc.ScaledMM == ScaledMMSM120
		r.qWaves = waved && e.FP8Waves && acc.ScaledMM != ScaledMMOther && acc.SMs > 0
		if g.Sharpness > 0 {
			r.qInvP = 1 / g.Sharpness
		}
	}
	r.quant = r.wb != r.b || r.qFlopRate != r.flopRate || r.qMemRate != r.memRate || r.qLaunch > 0
	r.cacheRate = r.memRate * e.CacheSpeed
	r.attnFlop = acc.PeakFLOPS * e.AttnCompute
	r.attnMem = acc.MemBandwidth * e.AttnMemory
	r.attnDecMem = acc.MemBandwidth * e.AttnDecodeMemory
	r.tileQ = float64(e.AttnTileQ)
	r.units = float64(e.AttnUnits)
	if acc.SMs > 0 && e.AttnUnitsPerSM > 0 {
		r.units = float64(acc.SMs * e.AttnUnitsPerSM)
		r.smWave = true
	}
	// One work unit computes QK^T and PV for tileQ rows against one KV
	// position: 4*tileQ*hd FLOPs. With u units sharing the attention
	// throughput, each runs at attnFlop/u.
	u := r.units
	if u == 0 {
		u = 1
	}
	r.attnUnitNsPerKV = 4 * r.tileQ * r.hd / (r.attnFlop / u) * 1e9
	r.decUnits, r.decNsPerKV = r.units, r.attnUnitNsPerKV
	if r.smWave && e.AttnDecodeUnitsPerSM > 0 {
		r.decUnits = float64(acc.SMs * e.AttnDecodeUnitsPerSM)
		r.decNsPerKV = 4 * r.tileQ * r.hd / (r.attnFlop / r.decUnits) * 1e9
	}
	r.invP = 1 / e.Sharpness
	if r.qInvP == 0 {
		r.qInvP = r.invP
	}
	r.invAttnP = 1 / e.AttnSharpness
	r.attnPow = newSoftPow(r.invAttnP)
	r.dec = newDecodeConsts(r)
	r.experts, r.expertsTopK = m.Experts, m.ExpertsPerTok
	scale := func(op string) float64 {
		if v, ok := e.OpScale[op]; ok {
			return v
		}
		return 1
	}
	r.scEmbed, r.scNorm, r.scFinalNorm = scale(OpEmbedding), scale(OpLayernorm), scale(OpFinalLayernorm)
	r.scQKNorm, r.scRotary, r.scAct = scale(OpQKNorm), scale(OpRotaryEmb), scale(OpActFn)

	L := float64(m.Layers)
	r.ops = append(r.ops, OpUse{OpEmbedding, 1}, OpUse{OpLayernorm, 2 * L}, OpUse{OpQKVProj, L})
	if m.QKNorm {
		r.ops = append(r.ops, OpUse{OpQKNorm, L})
	}
	r.ops = append(r.ops, OpUse{OpRotaryEmb, L}, OpUse{OpAttention, L}, OpUse{OpOProj, L})
	if m.Experts > 0 {
		r.ops = append(r.ops, OpUse{OpMoE, L})
	} else {
		r.ops = append(r.ops, OpUse{OpGateUpProj, L}, OpUse{OpActFn, L}, OpUse{OpDownProj, L})
	}
	r.ops = append(r.ops, OpUse{OpFinalLayernorm, 1}, OpUse{OpLMHead, 1}, OpUse{OpSampler, 1})
	if hasFrontier(m) {
		r.ops = frontierOps(m)
	}
	r.moeOp = slices.IndexFunc(r.ops, func(u OpUse) bool { return u.Op == OpMoE })
	r.cache = newOpCache(r.ops)
	r.plain = r.plainProgram()
	return r, nil
}

// TP is the tensor-parallel degree the predictor was built for.
func (r *Roofline) TP() int { return r.tp }

// Efficiency returns the efficiencies in use (defaults filled in).
func (r *Roofline) Efficiency() Efficiency { return r.eff }

// Ops lists the ops of one step with their multiplicities, in layer order.
// The slice must not be modified.
func (r *Roofline) Ops() []OpUse { return r.ops }

// StepTime implements Predictor: the sum over the step's ops of count × time.
// A batch's MoENs (a data-parallel group's MoE time, every layer) replaces
// the MoE op. It does not allocate.
func (r *Roofline) StepTime(b *Batch) int64 { return r.stepTime(b, nil) }

// stepTime is StepTime, with the per-run memo of x when x is not nil (the
// same values).
func (r *Roofline) stepTime(b *Batch, x *rooflineRun) int64 {
	if b == nil || (b.Tokens() <= 0 && b.Seqs() <= 0 && b.PadTokens <= 0) {
		return 0
	}
	if s, ok := r.stepNs(b, x); ok {
		return clampNs(s)
	}
	var s float64
	k := countsOf(b)
	for i, u := range r.ops {
		if i == r.moeOp && b.MoENs > 0 {
			s += float64(b.MoENs)
			continue
		}
		s += u.Count * r.opNs(i, b, k)
	}
	return clampNs(s)
}

// Breakdown appends every op's time in the step to dst and returns it.
func (r *Roofline) Breakdown(b *Batch, dst []OpTime) []OpTime {
	for _, u := range r.ops {
		ns := r.OpNs(u.Op, b)
		if b != nil && b.MoENs > 0 && u.Op == OpMoE {
			ns = float64(b.MoENs) / u.Count
		}
		dst = append(dst, OpTime{Op: u.Op, Count: u.Count, Ns: ns})
	}
	return dst
}

// clampNs rounds v to whole nanoseconds: 0 for what is not positive (NaN
// too), math.MaxInt64 from there up.
func clampNs(v float64) int64 { return clampWhole(math.Round(v)) }

// OpNs is the time in ns of ONE occurrence of op (one layer's worth for a
// per-layer op) in the step b, on one tensor-parallel rank. Dense ops are
// timed by the step's total tokens plus its CUDA-graph padding
// (Batch.PadTokens: a replayed graph runs its embedding, norms, rotary,
// projections and activation on every row of the captured size), lm_head
// and the sampler by its sequences, attention by its prefill chunks and
// decode contexts (padding rows have no context), the MoE block, which
// vLLM captures inside the graph, by its padded tokens as the profile's
// moe.csv lookup is. Unknown ops and empty steps take 0.
func (r *Roofline) OpNs(op string, b *Batch) float64 {
	if b == nil {
		return 0
	}
	T := float64(paddedTokens(b))
	S := float64(max(b.Rows(), 0))
	h, bb := r.h, r.b
	switch op {
	case OpEmbedding:
		// gather rows of the table, write the hidden states.
		return r.elementwise(T, 2*T*h*bb, r.scEmbed)
	case OpLayernorm:
		// fused residual add + RMSNorm: read x and residual, write both.
		return r.elementwise(T, 4*T*h*bb, r.scNorm)
	case OpFinalLayernorm:
		return r.elementwise(T, 4*T*h*bb, r.scFinalNorm)
	case OpQKNorm:
		// per-head RMSNorm of queries and keys, read and written.
		return r.elementwise(T, 2*T*(r.heads+r.kvHeads)*r.hd*bb, r.scQKNorm)
	case OpRotaryEmb:
		if r.IsMLA() {
			// the rope parts of the rank's query heads and of the latent key.
			return r.elementwise(T, 2*T*(r.heads+1)*float64(r.m.QKRopeHeadDim)*bb, r.scRotary)
		}
		// rotate queries and keys in place.
		return r.elementwise(T, 2*T*(r.heads+r.kvHeads)*r.hd*bb, r.scRotary)
	case OpActFn:
		// SiLU(gate)*up: read both halves, write one.
		return r.elementwise(T, 3*T*r.inter*bb, r.scAct)
	case OpQKVProj:
		if r.IsMLA() {
			return r.mlaQKVNs(T)
		}
		if r.m.AttnUnquantized {
			return r.gemm(T, h, r.qkvN)
		}
		return r.linear(T, h, r.qkvN)
	case OpOProj:
		if r.IsMLA() {
			return r.linear(T, r.heads*float64(r.m.VHeadDim), h)
		}
		if r.m.AttnUnquantized {
			return r.gemm(T, r.heads*r.hd, h)
		}
		return r.linear(T, r.heads*r.hd, h)
	case OpGateUpProj:
		return r.linear(T, h, 2*r.inter)
	case OpDownProj:
		return r.linear(T, r.inter, h)
	case OpLMHead:
		return r.gemm(S, h, r.vocab)
	case OpSampler:
		if S == 0 {
			return 0
		}
		return r.eff.SamplerNs + r.eff.SamplerPasses*S*float64(r.m.Vocab)*4/r.memRate*1e9
	case OpAttention:
		if r.IsMLA() {
			return r.mlaAttention(b)
		}
		return r.attention(b)
	case OpAttentionLocal:
		return r.localAttention(b)
	case OpMoE:
		return r.moe(float64(paddedTokens(b)))
	}
	return 0
}

// paddedTokens is the row count of the step's token-wise ops: its real
// tokens plus the CUDA-graph padding, never negative.
func paddedTokens(b *Batch) int {
	return max(b.Tokens(), 0) + max(b.PadTokens, 0)
}

// softMax blends two times: (a^p + b^p)^(1/p) with p = 1/invP.
func softMax(a, b, invP float64) float64 {
	hi, lo := a, b
	if lo > hi {
		hi, lo = lo, hi
	}
	if hi <= 0 {
		return 0
	}
	p := 1 / invP
	return hi * powNear(1+powNear(lo/hi, p), invP)
}

// gemm times an (M×K)·(K×N) matrix product: its weights are read once per
// step, the activations once, the output written once.
func (r *Roofline) gemm(M, K, N float64) float64 {
	if M <= 0 {
		return 0
	}
	flops := 2 * M * K * N
	bytes := (K*N + M*K + M*N) * r.b
	return r.eff.LaunchNs + softMax(flops/r.flopRate*1e9, bytes/r.memRate*1e9, r.invP)
}

// LinearNs is the time of one linear layer computing an (M×K)·(K×N)
// product on this predictor's accelerator: the model used for qkv_proj,
// o_proj, gate_up_proj and down_proj (weights at the model's quantised
// size and tensor rate when it has one, activations in the compute
// dtype), at any shape. It lets a calibration compare the roofline with
// measured GEMM tables directly. M <= 0 takes 0.
func (r *Roofline) LinearNs(M, K, N int) float64 {
	return r.linear(float64(M), float64(K), float64(N))
}

// WeightBytesRead is the bytes of weights one occurrence of op reads in a
// step of T tokens on one tensor-parallel rank (an MoE block reads its
// activated experts, shared experts and router): the weight part of the
// traffic the roofline charges. Ops without weights, and T <= 0, read 0.
func (r *Roofline) WeightBytesRead(op string, T int) float64 {
	if T <= 0 {
		return 0
	}
	h := r.h
	switch op {
	case OpEmbedding:
		return float64(T) * h * r.b // rows gathered
	case OpQKVProj:
		return h * r.qkvN * r.wb
	case OpOProj:
		return r.heads * r.hd * h * r.wb
	case OpGateUpProj:
		return h * 2 * r.inter * r.wb
	case OpDownProj:
		return r.inter * h * r.wb
	case OpLMHead:
		return h * r.vocab * r.b
	case OpMoE:
		ae := float64(ActivatedExperts(T, r.experts, r.expertsTopK))
		return (ae*3*h*r.moeInter+3*h*r.sharedInter)*r.wb + h*float64(r.experts)*r.b
	}
	return 0
}

// elementwise times a memory-bound kernel moving bytes; the part of the
// traffic that fits the cache runs at the cache speed.
func (r *Roofline) elementwise(T, bytes, scale float64) float64 {
	if T <= 0 {
		return 0
	}
	hit := 1.0
	if bytes > r.eff.CacheBytes {
		hit = r.eff.CacheBytes / bytes
	}
	return r.eff.LaunchNs + scale*bytes*((1-hit)/r.memRate+hit/r.cacheRate)*1e9
}

// moe times one MoE block: router GEMM, then gate_up and down of every
// activated expert (weights read once per activated expert) and the shared
// experts.
func (r *Roofline) moe(T float64) float64 {
	if T <= 0 {
		return 0
	}
	return r.moeAt(T, float64(ActivatedExperts(int(T), r.experts, r.expertsTopK)))
}

// MoENs times one MoE block of tokens tokens that activate activated
// experts (the moe.csv lookup's coordinates), on one rank. It lets a
// calibration check compare the roofline with a measured MoE table row
// without the expected-activation estimate the step model uses.
func (r *Roofline) MoENs(tokens, activated int) float64 {
	if tokens <= 0 || r.experts == 0 {
		return 0
	}
	return r.moeAt(float64(tokens), float64(min(max(activated, 1), r.experts)))
}

// ExpertNs times the parts of an MoE block that per-module profilers time
// apart, at tokens tokens: part OpGateUpProj is one routed expert's fused
// gate and up projection, OpDownProj its down projection (each on the
// rank's shard of the expert), and "router" the router GEMM. Other parts
// take 0.
func (r *Roofline) ExpertNs(part string, tokens int) float64 {
	T := float64(tokens)
	if T <= 0 || r.experts == 0 {
		return 0
	}
	switch part {
	case OpGateUpProj:
		return r.gemm(T, r.h, 2*r.moeInter)
	case OpDownProj:
		return r.gemm(T, r.moeInter, r.h)
	case "router":
		return r.gemm(T, r.h, float64(r.experts))
	}
	return 0
}

// moeAt is moe with ae activated experts.
func (r *Roofline) moeAt(T, ae float64) float64 {
	k := float64(r.expertsTopK)
	flops := 2*T*r.h*float64(r.experts) + 2*T*k*r.h*3*r.moeInter + 2*T*r.h*3*r.sharedInter
	bytes := (ae*3*r.h*r.moeInter + 3*r.h*r.sharedInter + r.h*float64(r.experts) +
		2*T*k*r.h + T*k*3*r.moeInter) * r.b
	if r.quant {
		// experts (routed and shared) quantised; router and activations not.
		rflops := 2 * T * r.h * float64(r.experts)
		w := (ae*3*r.h*r.moeInter + 3*r.h*r.sharedInter) * r.wb
		bytes = w + (r.h*float64(r.experts)+2*T*k*r.h+T*k*3*r.moeInter)*r.b
		tc := rflops/r.flopRate + (flops-rflops)/r.qFlopRate
		return 4*r.eff.LaunchNs + softMax(tc*1e9, bytes/r.memRate*1e9, r.invP)
	}
	return 4*r.eff.LaunchNs + softMax(flops/r.flopRate*1e9, bytes/r.memRate*1e9, r.invP)
}
