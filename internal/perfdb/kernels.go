package perfdb

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Shape is what one model's step asks of the tables on one rank.
type Shape struct {
	// GEMMDtype is the gemm_dtype of the quantised linear layers
	// (bfloat16 when the weights are not quantised); lm_head is always
	// read at bfloat16.
	GEMMDtype string
	// Heads, KVHeads and HeadDim are the rank's query heads, KV heads and
	// head size; KVDtype the KV cache's kv_cache_dtype (bfloat16 or fp8).
	Heads, KVHeads, HeadDim int
	KVDtype                 string
	// MoE is the fused MoE block of one rank (nil for a dense model).
	MoE *MoEShape
	// MLA selects the MLA module tables (Heads is then the rank's query
	// heads; KVHeads and HeadDim are not used for them).
	MLA bool
}

// MoEShape selects the moe_perf rows of one model's MoE block.
type MoEShape struct {
	Dtype, Distribution                  string
	Hidden, Inter, TopK, Experts, TP, EP int
}

// Kernels times the kernels of one Shape from the tables. Every lookup
// returns a time in nanoseconds and false when the shape lies outside
// what was measured (the caller then falls back to a model). It is
// immutable and safe for concurrent use.
//
// Every table's curve is first made non-decreasing in its size axis
// (see buildCurve); attention shapes measured with several kernels are
// read from the one vLLM 0.19 runs on the system (attentionKernel).
// Interpolation, per table:
//
//   - GEMM: linear in m rounded up to a multiple of 64 (gemmRule,
//     GEMMTile64) between the measured m at each of the four measured
//     (n, k) pairs bracketing the query, then bilinear in n and k. At
//     fixed m a GEMM's time is close to affine in n and in k in both
//     regimes (the weights streamed grow as n·k, and so do the FLOPs),
//     which bilinear interpolation reproduces exactly; the m grid is
//     dense (every integer to 17, steps of 16 to 256, of 256 to 4352,
//     each tile boundary from both sides) and time in m is a staircase
//     of 64-row tiles. Both rules were chosen by predicting the
//     database's own rows without them (GEMMHoldout; docs/perfdb.md).
//     An (n, k) or m outside the measured grid is not extrapolated.
//
//   - Context attention: the rows of the model's (heads, KV heads, head
//     size, KV dtype, no window); log-log in the sequence length along
//     each measured batch size (the causal work grows as s² for long
//     sequences and about as s for short ones, a local power law between
//     grid points 1.33-2× apart), then linear in the batch, and never
//     less than the causal attention's FLOPs at the system's peak BF16
//     rate (some rows are faster than the GPU can compute). The table
//     measures prefills from an empty cache only: a chunk after cached
//     tokens runs fewer, longer work units (its query tiles attend to the
//     whole history) at an occupancy no row measured, so it is not read
//     from the table.
//
//   - Generation attention: linear in the context length along each
//     measured batch size, then linear in the batch (memory-bound decode
//     attention is affine in both, and in their product).
//
//     The table times one layer's kernel in a loop, so a KV cache that
//     fits the L2 cache is read from it warm; in a model step every layer
//     reads its own KV from device memory. A generation time is
//     therefore never less than streaming the batch's KV at the
//     bandwidth the table's own largest rows reach (coldStreamBW; at most
//     the system's peak memory bandwidth): a measured floor, no fitted
//     factor.
//
//     Attention rows are ragged: large batches are measured only at
//     shorter lengths. A batch row is extended beyond its last length
//     from its top two points (log-log for context, linear for
//     generation), never beyond the longest length any row measured.
//
//     The same holds for GEMMs: the table times a handful of copies of
//     one layer in a loop (a single copy for fp8_block and nvfp4), so
//     weights that fit the L2 cache are read from it warm, while in a
//     model step every layer streams its own weights from device memory.
//     A GEMM time is therefore never less than streaming its weights,
//     input and output at the system's peak memory bandwidth (weights
//     and input at the GEMM dtype's size, the output in bfloat16).
//
//   - MoE: linear in tokens at the exact (dtype, distribution, hidden,
//     inter, top-k, experts, tp, ep).
//
//   - All-reduce: linear in the message size between measured sizes (a
//     collective is affine in its size between protocol switches, which
//     the power-of-two grid brackets); below the smallest size, the
//     smallest's time (the latency floor).
type Kernels struct {
	gemm, gemmBF16 *gemmIndex
	// gemmBytes is the bytes per weight and input element of the
	// quantised GEMM dtype; nsPerByte the time to stream one byte at
	// the system's peak memory bandwidth (0 when it is unknown).
	gemmBytes, nsPerByte float64
	context              *grid2
	generation           *grid2
	moe                  *curve
	// mlaContext and mlaGeneration are the MLA module grids (nil unless
	// the shape asks for MLA and the tables have its rows).
	mlaContext, mlaGeneration *grid2
	// kvNsPerToken is the time to stream one token's KV of one layer
	// from device memory, ns: at the generation table's own cold-read
	// bandwidth (kvStreamBW, see coldStreamBW) where it is below the
	// system's peak bandwidth, else at the peak.
	kvNsPerToken float64
	kvStreamBW   float64
	// ctxNsPerSeq2 is the time of one sequence's causal attention per
	// squared token at the system's peak BF16 rate, ns.
	ctxNsPerSeq2 float64
}

// attentionKernel is the attention backend vLLM 0.19 runs on a GPU of
// compute capability sm (times ten): FlashInfer first on SM 10.x,
// FlashAttention elsewhere (vllm/platforms/cuda.py,
// _get_backend_priorities). A shape measured with both kernels is read
// from this one's rows.
func attentionKernel(sm int) string {
	if sm >= 100 && sm < 110 {
		return "vllm_flashinfer"
	}
	return "vllm_flash_attn"
}

// curve is a piecewise-linear function sampled at increasing x.
type curve struct {
	x, y []float64
}

// at interpolates linearly; ok is false outside [x0, xn] unless clampLow
// and x < x0.
func (c *curve) at(x float64, clampLow bool) (float64, bool) {
	n := len(c.x)
	if n == 0 || x > c.x[n-1] {
		return 0, false
	}
	if x <= c.x[0] {
		if x < c.x[0] && !clampLow {
			return 0, false
		}
		return c.y[0], true
	}
	i, _ := slices.BinarySearch(c.x, x)
	if c.x[i] == x {
		return c.y[i], true
	}
	x0, x1 := c.x[i-1], c.x[i]
	f := (x - x0) / (x1 - x0)
	return c.y[i-1] + f*(c.y[i]-c.y[i-1]), true
}

// buildCurve sorts the points by x, averages repeated x, and makes the
// curve non-decreasing from the right: a time is lowered to the smallest
// time measured at any larger size. Every table's x is a problem size
// (GEMM rows, sequence length, context, tokens, message size) and a
// kernel on a smaller problem never needs longer than one on a larger
// problem that contains it (it could run padded); a measured point above
// a later one is a kernel-selection or measurement outlier.
func buildCurve(xs, ys []float64) *curve {
	c := averaged(xs, ys)
	c.envelope()
	return c
}

// averaged sorts the points by x and averages repeated x.
func averaged(xs, ys []float64) *curve {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
	c := &curve{}
	for i := 0; i < len(idx); {
		j, sum := i, 0.0
		for j < len(idx) && xs[idx[j]] == xs[idx[i]] {
			sum += ys[idx[j]]
			j++
		}
		c.x = append(c.x, xs[idx[i]])
		c.y = append(c.y, sum/float64(j-i))
		i = j
	}
	return c
}

// envelope makes the curve non-decreasing from the right: each y is
// lowered to the smallest y at any larger x.
func (c *curve) envelope() {
	for i := len(c.y) - 2; i >= 0; i-- {
		c.y[i] = min(c.y[i], c.y[i+1])
	}
}

// bracket finds the grid values around v: lo == hi when v is on the grid;
// ok false outside it.
func bracket(grid []float64, v float64) (lo, hi int, ok bool) {
	n := len(grid)
	if n == 0 || v < grid[0] || v > grid[n-1] {
		return 0, 0, false
	}
	i, found := slices.BinarySearch(grid, v)
	if found {
		return i, i, true
	}
	return i - 1, i, true
}

// gemmIndex holds one dtype's GEMM rows as a curve in m per (n, k).
type gemmIndex struct {
	ns, ks []float64
	curves map[[2]int]*curve
}

func newGEMMIndex(rows []GEMMRow, dtype string) *gemmIndex {
	type key = [2]int
	xs, ys := map[key][]float64{}, map[key][]float64{}
	nset, kset := map[int]bool{}, map[int]bool{}
	for _, r := range rows {
		if r.Dtype != dtype {
			continue
		}
		k := key{r.N, r.K}
		xs[k] = append(xs[k], float64(r.M))
		ys[k] = append(ys[k], r.Ms*1e6)
		nset[r.N], kset[r.K] = true, true
	}
	if len(xs) == 0 {
		return nil
	}
	g := &gemmIndex{curves: map[key]*curve{}}
	for k := range xs {
		g.curves[k] = buildCurve(xs[k], ys[k])
	}
	for n := range nset {
		g.ns = append(g.ns, float64(n))
	}
	for k := range kset {
		g.ks = append(g.ks, float64(k))
	}
	slices.Sort(g.ns)
	slices.Sort(g.ks)
	return g
}

func (g *gemmIndex) at(m, n, k int) (float64, bool) {
	if g == nil || m < 1 {
		return 0, false
	}
	n0, n1, ok1 := bracket(g.ns, float64(n))
	k0, k1, ok2 := bracket(g.ks, float64(k))
	if !ok1 || !ok2 {
		return 0, false
	}
	corner := func(i, j int) (float64, bool) {
		c := g.curves[[2]int{int(g.ns[i]), int(g.ks[j])}]
		if c == nil {
			return 0, false
		}
		return c.atRule(float64(m), gemmRule)
	}
	return blend(g.ns, g.ks, n0, n1, k0, k1, float64(n), float64(k), corner)
}

// blend interpolates bilinearly between the four corners (i in {i0, i1}
// on xs, j in {j0, j1} on ys).
func blend(xs, ys []float64, i0, i1, j0, j1 int, x, y float64, corner func(i, j int) (float64, bool)) (float64, bool) {
	alongY := func(i int) (float64, bool) {
		a, ok := corner(i, j0)
		if !ok {
			return 0, false
		}
		if j1 == j0 {
			return a, true
		}
		b, ok := corner(i, j1)
		if !ok {
			return 0, false
		}
		f := (y - ys[j0]) / (ys[j1] - ys[j0])
		return a + f*(b-a), true
	}
	a, ok := alongY(i0)
	if !ok {
		return 0, false
	}
	if i1 == i0 {
		return a, true
	}
	b, ok := alongY(i1)
	if !ok {
		return 0, false
	}
	f := (x - xs[i0]) / (xs[i1] - xs[i0])
	return a + f*(b-a), true
}

// grid2 holds attention rows of one head configuration: per batch size,
// a curve over the sequence (or context) length. Rows are ragged (large
// batches are measured at shorter lengths), so each row is read on its
// own grid and the two rows bracketing the batch are blended linearly.
type grid2 struct {
	batches []float64
	rows    []*curve
	maxSeq  float64 // the longest length measured at any batch size
	logSeq  bool
}

// newGrid2 indexes the rows of shape s. Where the shape was measured
// with several kernels, only the rows of kernel (the one vLLM runs) are
// kept.
func newGrid2(rows []AttnRow, s Shape, kernel string, logSeq bool) *grid2 {
	xs, ys := map[int][]float64{}, map[int][]float64{}
	g := &grid2{logSeq: logSeq}
	match := func(r *AttnRow) bool {
		return r.Heads == s.Heads && r.KVHeads == s.KVHeads && r.HeadDim == s.HeadDim && r.Window == 0 && r.KVDtype == s.KVDtype
	}
	only := false
	for i := range rows {
		if match(&rows[i]) && rows[i].Kernel == kernel {
			only = true
			break
		}
	}
	for i := range rows {
		r := &rows[i]
		if !match(r) || (only && r.Kernel != kernel) {
			continue
		}
		xs[r.Batch] = append(xs[r.Batch], float64(r.Seq))
		ys[r.Batch] = append(ys[r.Batch], r.Ms*1e6)
		g.maxSeq = max(g.maxSeq, float64(r.Seq))
	}
	if len(xs) == 0 {
		return nil
	}
	for b := range xs {
		g.batches = append(g.batches, float64(b))
	}
	slices.Sort(g.batches)
	for _, b := range g.batches {
		g.rows = append(g.rows, buildCurve(xs[int(b)], ys[int(b)]))
	}
	return g
}

// rowAt reads one batch row at seq: interpolated on the row's grid
// (log-log when logSeq), clamped below its first length, and beyond its
// last length extended from its top two points, up to the longest length
// any row measured. Long sequences sit in one regime (compute-bound
// prefill growing as a power of the length, memory-bound decode affine
// in it), which the top two points of a row already show.
func (g *grid2) rowAt(i int, seq float64) (float64, bool) {
	c := g.rows[i]
	n := len(c.x)
	if seq <= c.x[n-1] {
		if !g.logSeq || seq <= c.x[0] {
			return c.at(seq, true)
		}
		j, _ := slices.BinarySearch(c.x, seq)
		if c.x[j] == seq {
			return c.y[j], true
		}
		return logLog(c.x[j-1], c.y[j-1], c.x[j], c.y[j], seq), true
	}
	if seq > g.maxSeq || n < 2 {
		return 0, false
	}
	x0, y0, x1, y1 := c.x[n-2], c.y[n-2], c.x[n-1], c.y[n-1]
	if g.logSeq {
		return logLog(x0, y0, x1, y1, seq), true
	}
	return y1 + (seq-x1)*(y1-y0)/(x1-x0), true
}

// logLog interpolates (or extends) the power law through (x0, y0) and
// (x1, y1) at x; it falls back to linear when a time is not positive.
func logLog(x0, y0, x1, y1, x float64) float64 {
	if y0 <= 0 || y1 <= 0 {
		return y0 + (x-x0)*(y1-y0)/(x1-x0)
	}
	f := math.Log(x/x0) / math.Log(x1/x0)
	return math.Exp(math.Log(y0) + f*(math.Log(y1)-math.Log(y0)))
}

func (g *grid2) at(batch, seq float64) (float64, bool) {
	if g == nil {
		return 0, false
	}
	b0, b1, ok := bracket(g.batches, batch)
	if !ok {
		return 0, false
	}
	a, ok := g.rowAt(b0, seq)
	if !ok || b1 == b0 {
		return a, ok
	}
	b, ok := g.rowAt(b1, seq)
	if !ok {
		return 0, false
	}
	f := (batch - g.batches[b0]) / (g.batches[b1] - g.batches[b0])
	return a + f*(b-a), true
}

// coldStreamBW is the bandwidth, bytes/s, at which the generation table
// itself reads a KV cache too large for any cache: the median of KV
// bytes / time over the rows of shape s (kernel's where it measured the
// shape with several) whose KV is at least half the largest KV any of
// them measured. The table times one layer's kernel in a loop, so rows
// whose KV fits the L2 cache read it warm, faster than a serving step,
// where every layer's KV was evicted since the previous step read it,
// can; its largest rows (hundreds of MB, several times any GPU's L2)
// stream from device memory, as every step's decode attention does.
// RTX PRO 6000, 32 query and 4 KV heads: rows of 134 MB of KV run at
// 1.8-2.4 TB/s (the L2 is 128 MB), rows of 268-537 MB at 1.32-1.45 TB/s,
// against a peak of 1.79 TB/s. 0 when the shape has no row.
func coldStreamBW(rows []AttnRow, s Shape, kernel string, kvb float64) float64 {
	type pt struct{ bytes, bw float64 }
	var pts []pt
	only := false
	match := func(r *AttnRow) bool {
		return r.Heads == s.Heads && r.KVHeads == s.KVHeads && r.HeadDim == s.HeadDim && r.Window == 0 && r.KVDtype == s.KVDtype && r.Ms > 0
	}
	for i := range rows {
		if match(&rows[i]) && rows[i].Kernel == kernel {
			only = true
			break
		}
	}
	most := 0.0
	for i := range rows {
		r := &rows[i]
		if !match(r) || (only && r.Kernel != kernel) {
			continue
		}
		b := float64(r.Batch) * float64(r.Seq) * 2 * float64(r.KVHeads*r.HeadDim) * kvb
		pts = append(pts, pt{b, b / (r.Ms / 1e3)})
		most = max(most, b)
	}
	var bws []float64
	for _, p := range pts {
		if p.bytes >= most/2 {
			bws = append(bws, p.bw)
		}
	}
	if len(bws) == 0 {
		return 0
	}
	slices.Sort(bws)
	n := len(bws)
	if n%2 == 1 {
		return bws[n/2]
	}
	return (bws[n/2-1] + bws[n/2]) / 2
}

// Kernels indexes the tables for s. It fails only when a table needed by
// every step is missing entirely; shapes the tables do not cover make the
// lookups report false.
func (db *DB) Kernels(s Shape) (*Kernels, error) {
	if s.Heads < 1 || s.KVHeads < 1 || s.HeadDim < 1 {
		return nil, fmt.Errorf("perfdb: heads %d, KV heads %d and head size %d must be >= 1", s.Heads, s.KVHeads, s.HeadDim)
	}
	if s.GEMMDtype == "" {
		s.GEMMDtype = "bfloat16"
	}
	if s.KVDtype == "" {
		s.KVDtype = "bfloat16"
	}
	k := &Kernels{gemmBF16: newGEMMIndex(db.GEMM, "bfloat16")}
	if k.gemmBF16 == nil {
		return nil, fmt.Errorf("perfdb: %s has no bfloat16 GEMM rows", db.System)
	}
	k.gemm = k.gemmBF16
	if s.GEMMDtype != "bfloat16" {
		k.gemm = nil // rows that time more than a served layer: none
		if s.GEMMDtype != "fp8" || !db.NativeQuantFP8() {
			k.gemm = newGEMMIndex(db.GEMM, s.GEMMDtype)
		}
	}
	k.gemmBytes = gemmElementBytes(s.GEMMDtype)
	kvb := 2.0
	if s.KVDtype == "fp8" {
		kvb = 1
	}
	if db.Spec.MemBW > 0 {
		k.nsPerByte = 1e9 / db.Spec.MemBW
		k.kvNsPerToken = 2 * float64(s.KVHeads*s.HeadDim) * kvb / db.Spec.MemBW * 1e9
	}
	kernel := attentionKernel(db.Spec.SMVersion)
	k.context = newGrid2(db.Context, s, kernel, true)
	k.generation = newGrid2(db.Generation, s, kernel, false)
	if bw := coldStreamBW(db.Generation, s, kernel, kvb); bw > 0 && (db.Spec.MemBW == 0 || bw < db.Spec.MemBW) {
		k.kvNsPerToken = 2 * float64(s.KVHeads*s.HeadDim) * kvb / bw * 1e9
		k.kvStreamBW = bw
	}
	if s.MLA {
		k.mlaContext = mlaGrid(db.MLAContext, s, true)
		k.mlaGeneration = mlaGrid(db.MLAGeneration, s, false)
	}
	if db.Spec.BF16FLOPS > 0 {
		// causal attention: 2·s²·head_dim FLOPs per head and sequence.
		k.ctxNsPerSeq2 = 2 * float64(s.Heads*s.HeadDim) / db.Spec.BF16FLOPS * 1e9
	}
	if m := s.MoE; m != nil {
		var xs, ys []float64
		for _, r := range db.MoE {
			if r.Dtype == m.Dtype && r.Distribution == m.Distribution && r.Hidden == m.Hidden && r.Inter == m.Inter &&
				r.TopK == m.TopK && r.Experts == m.Experts && r.TP == m.TP && r.EP == m.EP {
				xs, ys = append(xs, float64(r.Tokens)), append(ys, r.Ms*1e6)
			}
		}
		if len(xs) > 0 {
			k.moe = buildCurve(xs, ys)
		}
	}
	return k, nil
}

// GEMM is the time of an (m×k)·(k×n) product of a linear layer: in the
// shape's GEMM dtype when quantized, else in bfloat16.
func (k *Kernels) GEMM(quantized bool, m, n, kk int) (float64, bool) {
	g, b := k.gemmBF16, 2.0
	if quantized {
		g, b = k.gemm, k.gemmBytes
	}
	t, ok := g.at(m, n, kk)
	stream := (b*float64(n)*float64(kk) + b*float64(m)*float64(kk) + 2*float64(m)*float64(n)) * k.nsPerByte
	return max(t, stream), ok
}

// gemmElementBytes is the size of one weight (and input) element of a
// gemm_dtype: 2 for bfloat16, 1 for the fp8 kinds, 4.5 bits for nvfp4
// and mxfp4 (a 4-bit value plus an 8-bit scale per 16 elements).
func gemmElementBytes(dtype string) float64 {
	switch dtype {
	case "fp8", "fp8_block", "fp8_static", "int8_wo":
		return 1
	case "nvfp4", "mxfp4", "int4_wo", "w4a16":
		return 0.5625
	}
	return 2
}

// ContextAttention is one layer's attention over seqs sequences
// prefilling tokens tokens each from an empty KV cache (the only
// prefills the context table measures).
func (k *Kernels) ContextAttention(seqs int, tokens float64) (float64, bool) {
	if seqs < 1 || !(tokens > 0) {
		return 0, false
	}
	t, ok := k.context.at(float64(seqs), tokens)
	return max(t, float64(seqs)*tokens*tokens*k.ctxNsPerSeq2), ok
}

// GenerationAttention is one layer's attention of n decoding sequences
// with ctx tokens of context each (the mean when they differ).
func (k *Kernels) GenerationAttention(n int, ctx float64) (float64, bool) {
	if n < 1 || ctx < 0 {
		return 0, false
	}
	t, ok := k.generation.at(float64(n), max(ctx, 1))
	return max(t, float64(n)*ctx*k.kvNsPerToken), ok
}

// MoE is one fused MoE block of tokens tokens on the rank.
func (k *Kernels) MoE(tokens int) (float64, bool) {
	if k.moe == nil || tokens < 1 {
		return 0, false
	}
	return k.moe.at(float64(tokens), false)
}

// MoEAt is MoE at a fractional token count (an expert-parallel rank's
// load expressed as gathered tokens).
func (k *Kernels) MoEAt(tokens float64) (float64, bool) {
	if k.moe == nil || !(tokens >= 1) {
		return 0, false
	}
	return k.moe.at(tokens, false)
}

// Collectives times all-reduces and all-gathers of one tensor-parallel
// group of gpus ranks from the tables.
type Collectives struct {
	custom, ncclAR, ncclAG *curve
}

// Collectives indexes the all-reduce tables for gpus ranks: vLLM's
// all-reduce as measured through its own dispatch (custom_allreduce_perf,
// CUDA-graph rows: the kernel time, as the engine-time model prices the
// launch gaps itself) and NCCL's all_reduce and all_gather (half
// precision rows). Sizes are in elements of a 2-byte dtype.
func (db *DB) Collectives(gpus int) *Collectives {
	c := &Collectives{}
	pick := func(rows []CommRow, keep func(r CommRow) bool) *curve {
		var xs, ys []float64
		for _, r := range rows {
			if r.GPUs == gpus && keep(r) {
				xs, ys = append(xs, float64(r.Size)), append(ys, r.Ms*1e6)
			}
		}
		if len(xs) == 0 {
			return nil
		}
		return buildCurve(xs, ys)
	}
	c.custom = pick(db.CustomAR, func(r CommRow) bool { return r.Backend == "vllm_graph" && r.Dtype == "bfloat16" })
	c.ncclAR = pick(db.NCCL, func(r CommRow) bool { return r.Op == "all_reduce" && r.Dtype == "half" })
	c.ncclAG = pick(db.NCCL, func(r CommRow) bool { return r.Op == "all_gather" && r.Dtype == "half" })
	return c
}

func at2(c *curve, bytes int64) (float64, bool) {
	if c == nil || bytes <= 0 {
		return 0, false
	}
	return c.at(float64(bytes)/2, true)
}

// AllReduce is one all-reduce of bytes: vLLM's dispatch as measured when
// vllm is true, else NCCL's.
func (c *Collectives) AllReduce(vllm bool, bytes int64) (float64, bool) {
	if vllm {
		return at2(c.custom, bytes)
	}
	return at2(c.ncclAR, bytes)
}

// AllGather is one NCCL all-gather of bytes in total.
func (c *Collectives) AllGather(bytes int64) (float64, bool) {
	return at2(c.ncclAG, bytes)
}
