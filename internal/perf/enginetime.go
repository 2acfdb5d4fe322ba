package perf

import (
	"math"
	"slices"
)

// GraphMode is how vLLM runs a step's forward pass (its cudagraph_mode).
type GraphMode uint8

// Graph modes, as vLLM 0.19 names them.
const (
	// GraphsFullAndPiecewise (vLLM 0.19's default): uniform-decode steps
	// replay a full CUDA graph, other steps piecewise graphs.
	GraphsFullAndPiecewise GraphMode = iota
	// GraphsPiecewise: every step replays piecewise graphs (attention
	// runs outside them).
	GraphsPiecewise
	// GraphsFull: every step replays one full graph.
	GraphsFull
	// GraphsFullDecodeOnly: full graphs for uniform decode, eager otherwise.
	GraphsFullDecodeOnly
	// GraphsNone: eager execution (enforce_eager).
	GraphsNone
)

// Engine-side time defaults, each from a public source (see
// docs/engine-time.md for the citations and the arithmetic).
const (
	// KernelGapEagerNs is the GPU idle time between two back-to-back
	// kernels launched from a stream when the CPU runs ahead (NVIDIA,
	// "Getting Started with CUDA Graphs": 3.8 µs per 2.9 µs kernel).
	KernelGapEagerNs = 900.0
	// KernelGapGraphNs is the same gap inside a replayed CUDA graph (3.4
	// µs per 2.9 µs kernel in the same measurement).
	KernelGapGraphNs = 500.0
	// StepKernels is the number of kernels a step launches besides the
	// per-layer ones and the catalog's prologue and head ops: input
	// uploads (token ids, positions, slot mapping, block table, query
	// start locations, sequence lengths), logits gathering and the
	// sampler's internal kernels.
	StepKernels = 20
	// HostFixedNs, HostPerSeqNs and HostPerTokenNs are the engine core's
	// CPU time per step: scheduling, input preparation and output
	// processing. With async scheduling it overlaps the GPU's previous
	// step and is exposed only when longer.
	HostFixedNs    = 300_000.0
	HostPerSeqNs   = 3_000.0
	HostPerTokenNs = 100.0
	// KernelLaunchNs is the engine's CPU time to launch one kernel
	// outside a CUDA graph from vLLM's Python code: 8.68 µs per Triton
	// kernel dispatched by the JIT launcher (vLLM PR #34838, GB200; the
	// compiled pieces vLLM runs without a graph launch their kernels
	// through it), against about 13 µs per kernel for PyTorch's eager
	// dispatch in vLLM's own Qwen3 model on an H100 host (TorchTitan's
	// "Unified Model Definition" ablation study). The GPU cannot finish a
	// step before the CPU has launched its last kernel, so the kernels a
	// step launches outside graphs bound its duration from below.
	KernelLaunchNs = 8_680.0
)

// HostTime is the engine's CPU work per step: Fixed + PerSeq × sequences +
// PerToken × tokens, in nanoseconds.
type HostTime struct {
	FixedNs, PerSeqNs, PerTokenNs float64
}

// DefaultHostTime is the host model of vLLM 0.19 (see the constants).
var DefaultHostTime = HostTime{HostFixedNs, HostPerSeqNs, HostPerTokenNs}

// Ns is the host time of batch b.
func (h HostTime) Ns(b *Batch) float64 {
	return h.FixedNs + h.PerSeqNs*float64(max(b.Seqs(), 0)) + h.PerTokenNs*float64(max(b.Tokens(), 0))
}

// EngineTime turns the GPU kernel time of a step (the profile tables hold
// kernel durations only) into the engine's step time.
type EngineTime struct {
	// Mode is the CUDA-graph mode; CaptureSizes the captured batch sizes
	// in tokens, ascending (see DefaultCaptureSizes). Steps with more
	// tokens than the largest run eagerly.
	Mode         GraphMode
	CaptureSizes []int
	// Layers and LayerKernels: kernels launched per transformer layer
	// (its ops plus the KV-cache write); AttnKernels of them are the
	// attention ops, which run outside piecewise graphs. StepKernels:
	// kernels launched once per step.
	Layers, LayerKernels, AttnKernels, StepKernels int
	// GapEagerNs and GapGraphNs are the GPU idle times between kernels
	// launched eagerly and inside a graph.
	GapEagerNs, GapGraphNs float64
	// StepKernelNs is the duration of each of the StepKernels that no
	// table measures (see Profile.MinKernelNs); 0 when the inner
	// predictor already times them.
	StepKernelNs float64
	// Host is the engine's CPU time per step; Async says whether it
	// overlaps the GPU (async scheduling) or adds to it.
	Host  HostTime
	Async bool
	// LaunchNs is the CPU time to launch one kernel outside a graph (0:
	// launches cost nothing). The same thread launches the step's
	// kernels and does its host work, so the launches of the kernels
	// outside graphs (LaunchKernels) bound the step from below.
	LaunchNs float64
}

// LaunchKernels is the number of kernels a step run as d launches
// outside a CUDA graph: every kernel when eager, the attention kernels
// and the once-per-step kernels with piecewise graphs, the once-per-step
// kernels (input uploads, logits, sampler) with a full graph.
func (e *EngineTime) LaunchKernels(d Dispatch) int {
	switch d {
	case RunFull:
		return e.StepKernels
	case RunPiecewise:
		return e.Layers*e.AttnKernels + e.StepKernels
	}
	return e.Layers*e.LayerKernels + e.StepKernels
}

// Dispatch is how one step runs.
type Dispatch uint8

// Dispatches.
const (
	RunEager Dispatch = iota
	RunPiecewise
	RunFull
)

// Dispatch returns how b runs and the token count its graph was captured
// for (b.Tokens() when eager; from max(b.Tokens(), b.DPPadTo), and at most
// b.DPMode when b.DPSynced): uniform-decode steps (no prefill) use a full
// graph in FULL, FULL_AND_PIECEWISE and FULL_DECODE_ONLY; others use
// piecewise graphs in PIECEWISE and FULL_AND_PIECEWISE and a full graph in
// FULL; each pads to the smallest capture size holding the step; beyond
// the largest capture size, or in NONE, the step runs eagerly.
func (e *EngineTime) Dispatch(b *Batch) (Dispatch, int) {
	tokens := max(b.Tokens(), b.DPPadTo, 0)
	i, _ := slices.BinarySearch(e.CaptureSizes, tokens)
	return e.dispatchAt(b, tokens, i)
}

// dispatchAt is Dispatch given tokens = max(b.Tokens(), b.DPPadTo, 0) and
// i, the index of the smallest capture size >= tokens (len when none).
func (e *EngineTime) dispatchAt(b *Batch, tokens, i int) (Dispatch, int) {
	d, padded := e.dispatch(tokens, i, b.PrefillTokens <= 0)
	if b.DPSynced && b.DPMode < d {
		d = b.DPMode
		if d == RunEager {
			padded = max(b.Tokens(), 0)
		}
	}
	return d, padded
}

func (e *EngineTime) dispatch(tokens, i int, decode bool) (Dispatch, int) {
	if i == len(e.CaptureSizes) || tokens == 0 {
		return RunEager, tokens
	}
	padded := e.CaptureSizes[i]
	switch e.Mode {
	case GraphsFull:
		return RunFull, padded
	case GraphsFullAndPiecewise:
		if decode {
			return RunFull, padded
		}
		return RunPiecewise, padded
	case GraphsPiecewise:
		return RunPiecewise, padded
	case GraphsFullDecodeOnly:
		if decode {
			return RunFull, padded
		}
	}
	return RunEager, tokens
}

// GapNs is the kernel-gap time of a step run as d.
func (e *EngineTime) GapNs(d Dispatch) float64 {
	kernels := float64(e.Layers*e.LayerKernels + e.StepKernels)
	switch d {
	case RunFull:
		return kernels * e.GapGraphNs
	case RunPiecewise:
		attn := float64(e.Layers * e.AttnKernels)
		return (kernels-attn)*e.GapGraphNs + attn*e.GapEagerNs
	}
	return kernels * e.GapEagerNs
}

// DefaultCaptureSizes is vLLM 0.19's default list of CUDA-graph capture
// sizes: 1, 2, 4, then multiples of 8 up to 256 and of 16 above, up to
// min(2 × maxNumSeqs, 512, maxBatchedTokens).
func DefaultCaptureSizes(maxNumSeqs, maxBatchedTokens int) []int {
	limit := min(2*maxNumSeqs, 512, maxBatchedTokens)
	var out []int
	for _, s := range []int{1, 2, 4} {
		if s <= limit {
			out = append(out, s)
		}
	}
	for s := 8; s <= limit; {
		out = append(out, s)
		if s < 256 {
			s += 8
		} else {
			s += 16
		}
	}
	return out
}

// WithEngineTime wraps a GPU-time predictor (profile tables or roofline,
// with collectives) into the engine's step time:
//
//	gpu    = inner(b with PadTokens = padded - tokens) + kernel gaps
//	launch = kernels launched outside graphs × LaunchNs
//	step   = max(gpu, host + launch)   with async scheduling
//	step   = max(gpu, launch) + host   without
//
// It does not allocate.
func WithEngineTime(p Predictor, e EngineTime) Predictor {
	e.CaptureSizes = slices.Clone(e.CaptureSizes)
	slices.Sort(e.CaptureSizes)
	t := &engineTime{inner: p, e: e}
	t.tmpl = t
	for d := range t.fixed {
		t.fixed[d] = e.GapNs(Dispatch(d)) + float64(e.StepKernels)*e.StepKernelNs
		t.launch[d] = float64(e.LaunchKernels(Dispatch(d))) * e.LaunchNs
	}
	if n := len(e.CaptureSizes); n > 0 && n <= math.MaxUint16 && e.CaptureSizes[n-1] <= captureIndexLimit {
		t.capIdx = make([]uint16, max(e.CaptureSizes[n-1]+1, 0))
		for tokens := range t.capIdx {
			i, _ := slices.BinarySearch(e.CaptureSizes, tokens)
			t.capIdx[tokens] = uint16(i)
		}
	}
	t.dec = new([decodeShapeLimit]stepShape)
	for n := 1; n < len(t.dec); n++ {
		t.dec[n] = t.shape(&Batch{NumDecode: n})
	}
	return t
}

// captureIndexLimit bounds the capture sizes indexed by token count.
const captureIndexLimit = 1 << 16

// decodeShapeLimit bounds the decode counts whose step shapes engineTime
// keeps (vLLM's max_num_seqs is 256 to 1,024; 40 kB per predictor).
const decodeShapeLimit = 1024

// stepShape is what StepTime derives from a step's counts: the padding
// of its CUDA graph, its kernel gaps and untimed kernels, its host time
// and its launches. Those of a plain decode step (n decodes and nothing
// else: no prefill, no speculation, no data-parallel padding or agreed
// mode) depend on n alone.
//
// The step takes max(gpu + fixed, floor) + after ns for a GPU time gpu:
// floor is host + launch and after 0 with async scheduling (the max of
// the GPU and the CPU), floor the launches and after the host time
// without. Adding a zero after changes no value that rounds to a
// different step time (only -0 to +0).
type stepShape struct {
	pad                 int
	fixed, floor, after float64
}

// engineTime is the engine time WithEngineTime makes, and a per-run copy
// of it over a predictor other than a Profile (over a Profile, ForRun
// makes a profileEngine). In a cluster an instance's predictor has left
// the first-level cache by its next step: the fields a plain decode step
// reads (dec and inner) are the struct's first cache line (the size is a
// multiple of 64 bytes, so the allocator starts the struct on a line).
// Other steps read the immutable fields (e, capIdx, fixed, launch)
// through tmpl, the engine time the per-run copies were made from:
// shared by every instance of a cluster, they stay in the cache.
type engineTime struct {
	// dec[n] is the shape of a plain decode step of n decodes, 0 < n <
	// decodeShapeLimit (immutable, shared by the per-run copies; nil
	// serves none).
	dec   *[decodeShapeLimit]stepShape
	inner Predictor
	tmpl  *engineTime
	e     EngineTime
	// capIdx[tokens] is the index of the smallest capture size >= tokens
	// (the binary search Dispatch does, done once per count up to the
	// largest capture size; counts beyond it are past every size). Nil
	// when the sizes are too many or too large: counts then search.
	capIdx []uint16
	// fixed[d] and launch[d] are a step's kernel gaps and untimed kernels,
	// and its launches, when run as d (StepTime's terms that depend on d
	// only, computed once by the same expressions).
	fixed, launch [RunFull + 1]float64
	_             [engineTimePad]byte
}

// engineTimePad pads engineTime to a multiple of 64 bytes on 64-bit
// platforms (TestDecodeStateLayout).
const engineTimePad = 24

// plainDecode reports that b is a plain decode step (see stepShape) of
// fewer than decodeShapeLimit decodes.
func plainDecode(b *Batch) bool {
	n := b.NumDecode
	return n > 0 && n < decodeShapeLimit && b.PrefillTokens == 0 && b.PrefillSeqs == 0 &&
		b.SpecTokens == 0 && b.DPPadTo == 0 && !b.DPSynced
}

// StepTime implements Predictor.
func (t *engineTime) StepTime(b *Batch) int64 {
	if b == nil {
		return 0
	}
	if t.dec != nil && plainDecode(b) {
		sh := &t.dec[b.NumDecode]
		return step(sh, t.innerAt(b, sh.pad))
	}
	if b.Tokens() <= 0 && b.Seqs() <= 0 && b.DPPadTo <= 0 {
		return 0
	}
	sh := t.tmpl.shape(b)
	return step(&sh, t.innerAt(b, sh.pad))
}

// profileEngine is the per-run copy of an engine time over a Profile: it
// holds the Profile's per-run copy (own), which it takes as the inner
// predictor, and a plain decode step takes own's decodeNs at the step's
// padding directly. The fields such a step reads (dec and own's first 56
// bytes) are the struct's first cache line (it is 128 bytes, which the
// allocator starts on a line); other steps read tmpl, the engine time
// the copy was made from (on the second line), for the rest.
type profileEngine struct {
	dec  *[decodeShapeLimit]stepShape // tmpl.dec
	own  profileRun
	tmpl *engineTime
	_    [profileEnginePad]byte
}

// profileEnginePad pads profileEngine to 128 bytes on 64-bit platforms
// (TestDecodeStateLayout).
const profileEnginePad = 24

// StepTime implements Predictor: engineTime.StepTime with own as the
// inner predictor.
func (t *profileEngine) StepTime(b *Batch) int64 {
	if b == nil {
		return 0
	}
	if t.dec != nil && plainDecode(b) {
		sh := &t.dec[b.NumDecode]
		if r := &t.own; r.plainDecodes(b) {
			return step(sh, r.decodeNs(b, sh.pad))
		}
		return step(sh, t.ownAt(b, sh.pad))
	}
	if b.Tokens() <= 0 && b.Seqs() <= 0 && b.DPPadTo <= 0 {
		return 0
	}
	sh := t.tmpl.shape(b)
	return step(&sh, t.ownAt(b, sh.pad))
}

// ownAt is own's time of b at padding pad (as innerAt).
func (t *profileEngine) ownAt(b *Batch, pad int) int64 {
	saved := b.PadTokens
	b.PadTokens = pad
	ns := t.own.StepTime(b)
	b.PadTokens = saved
	return ns
}

// ForRun implements RunScoped: a new per-run copy of the engine time the
// copy was made from.
func (t *profileEngine) ForRun(c *TableCounts) Predictor { return t.tmpl.ForRun(c) }

// innerAt is the inner predictor's time of b at padding pad.
func (t *engineTime) innerAt(b *Batch, pad int) int64 {
	// Set the padding on the caller's batch for the inner call and
	// restore it (a copy would escape to the heap through the interface).
	saved := b.PadTokens
	b.PadTokens = pad
	ns := t.inner.StepTime(b)
	b.PadTokens = saved
	return ns
}

// step is the engine time of a step of shape sh whose GPU kernels take
// inner ns.
func step(sh *stepShape, inner int64) int64 {
	gpu := float64(inner)
	if gpu >= math.MaxInt64 {
		return math.MaxInt64
	}
	// The builtin max is math.Max (NaN and signed zeros alike), inline.
	return roundNs(max(gpu+sh.fixed, sh.floor) + sh.after)
}

// shape is the shape of step b.
func (t *engineTime) shape(b *Batch) stepShape {
	d, padded := t.dispatch(b)
	sh := stepShape{pad: max(padded-b.Tokens(), 0), fixed: t.fixed[d], floor: t.launch[d], after: t.e.Host.Ns(b)}
	if t.e.Async {
		sh.floor, sh.after = sh.after+sh.floor, 0
	}
	return sh
}

// dispatch is the CUDA-graph dispatch of step b and the token count it
// pads the step to.
func (t *engineTime) dispatch(b *Batch) (Dispatch, int) {
	tokens := max(b.Tokens(), b.DPPadTo, 0)
	var i int
	switch {
	case tokens < len(t.capIdx):
		i = int(t.capIdx[tokens])
	case t.capIdx != nil: // beyond the largest capture size
		i = len(t.e.CaptureSizes)
	default:
		i, _ = slices.BinarySearch(t.e.CaptureSizes, tokens)
	}
	return t.e.dispatchAt(b, tokens, i)
}

// SpecCaptureSizes is the capture-size list with speculative decoding of
// k tokens, where a uniform-decode step computes 1+k tokens per request.
// The default list (sizes nil) runs up to min(2 × maxNumSeqs × (1+k), 512,
// maxBatchedTokens), vLLM's VllmConfig._set_cudagraph_sizes with
// decode_query_len = 1+k; then, as vLLM's
// CompilationConfig.adjust_cudagraph_sizes_for_spec_decode does, every
// size is rounded up to a multiple of 1+k and sizes beyond the largest
// are dropped (just [1+k] when none is left and 1+k fits).
func SpecCaptureSizes(maxNumSeqs, maxBatchedTokens, k int, sizes []int) []int {
	q := 1 + k
	var limit int
	if sizes == nil {
		limit = min(2*maxNumSeqs*q, 512, maxBatchedTokens)
		sizes = DefaultCaptureSizes(limit, limit) // the list up to limit
		sizes = slices.DeleteFunc(sizes, func(s int) bool { return s > limit })
	} else {
		sizes = slices.Sorted(slices.Values(sizes))
		if len(sizes) > 0 {
			limit = sizes[len(sizes)-1]
		}
	}
	var out []int
	for _, s := range sizes {
		r := (s + q - 1) / q * q
		if r <= limit && (len(out) == 0 || out[len(out)-1] != r) {
			out = append(out, r)
		}
	}
	if len(out) == 0 && q <= limit {
		out = []int{q}
	}
	return out
}

// ForRun implements RunScoped: a copy of the engine time the per-run
// copies are made from (tmpl), or over a Profile a profileEngine holding
// the Profile's per-run copy.
func (t *engineTime) ForRun(c *TableCounts) Predictor {
	t = t.tmpl
	if p, ok := t.inner.(*Profile); ok {
		return &profileEngine{dec: t.dec, own: p.newRun(), tmpl: t}
	}
	cp := *t
	cp.inner = ForRun(t.inner, c)
	return &cp
}
