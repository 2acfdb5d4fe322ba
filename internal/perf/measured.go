package perf

import (
	"fmt"
	"math"
)

// KernelTimes times kernels from measurements taken at one model's
// shapes on one rank (package perfdb's Kernels). Every method returns ns
// and false when the shape lies outside what was measured.
type KernelTimes interface {
	// GEMM times an (m×k)·(k×n) product of a linear layer, in the
	// quantised format when quantized, else in the compute dtype.
	GEMM(quantized bool, m, n, k int) (float64, bool)
	// ContextAttention times one layer's attention over seqs sequences
	// prefilling tokens tokens each from an empty KV cache.
	ContextAttention(seqs int, tokens float64) (float64, bool)
	// GenerationAttention times one layer's attention of n decodes with
	// ctx tokens of context each.
	GenerationAttention(n int, ctx float64) (float64, bool)
	// MoE times one fused MoE block of tokens tokens on the rank.
	MoE(tokens int) (float64, bool)
}

// MLAKernelTimes is implemented by kernel tables that time a whole MLA
// self-attention module of one layer (its projections, rotary embedding,
// attention and o_proj), as AIConfigurator's mla_*_module_perf tables do.
type MLAKernelTimes interface {
	// MLAContext times seqs sequences prefilling tokens tokens each from
	// an empty KV cache.
	MLAContext(seqs int, tokens float64) (float64, bool)
	// MLAGeneration times n decodes with ctx tokens of context each.
	MLAGeneration(n int, ctx float64) (float64, bool)
}

// TableOp names an op a measured-kernel predictor times from a table.
type TableOp uint8

// The ops timed from tables. Every other op of a step (embedding, norms,
// rotary embedding, activation, sampler) has no table and is always timed
// by the calibrated roofline.
const (
	TableQKVProj TableOp = iota
	TableOProj
	TableGateUpProj
	TableDownProj
	TableLMHead
	TableContextAttention
	// TableHistoryAttention is the attention of a prefill step whose
	// chunks follow cached tokens (a later chunk of a long prompt, or a
	// prefix-cache hit). The context table measures prefills from an
	// empty cache only: it is always the roofline's.
	TableHistoryAttention
	TableGenerationAttention
	// TableMixedAttention is the attention of a step with both prefill
	// chunks and decodes. No table measures it (the database times the two
	// kinds apart, while vLLM runs them as one varlen kernel in which every
	// decode takes prefill-path work units): it is always the roofline's.
	TableMixedAttention
	TableMoE
	TableAllReduce
	TableAllGather
	numTableOps
)

var tableOpNames = [numTableOps]string{"qkv_proj", "o_proj", "gate_up_proj", "down_proj", "lm_head",
	"context_attention", "history_attention", "generation_attention", "mixed_attention", "moe", "all_reduce", "all_gather"}

func (o TableOp) String() string {
	if o < numTableOps {
		return tableOpNames[o]
	}
	return fmt.Sprintf("TableOp(%d)", uint8(o))
}

// TableCounts counts, over one run, the evaluations of every table op
// (one per step in which the op runs) and those that fell back to the
// calibrated roofline because the shape lies outside the table.
type TableCounts struct {
	Evals, Fallbacks [numTableOps]int64
}

// Ops lists the table ops evaluated at least once, in TableOp order.
func (c *TableCounts) Ops() []TableOp {
	var out []TableOp
	for o := TableOp(0); o < numTableOps; o++ {
		if c.Evals[o] > 0 {
			out = append(out, o)
		}
	}
	return out
}

// add counts one step's evaluations (bit set in present) and fallbacks.
func (c *TableCounts) add(present, fell uint16) {
	for o := TableOp(0); o < numTableOps; o++ {
		if present&(1<<o) != 0 {
			c.Evals[o]++
			if fell&(1<<o) != 0 {
				c.Fallbacks[o]++
			}
		}
	}
}

// RunScoped is implemented by predictors with per-run state (table
// counts): ForRun returns a fresh copy that counts into c.
type RunScoped interface {
	ForRun(c *TableCounts) Predictor
}

// ForRun returns the predictor one run uses: p itself unless p (or a
// predictor it wraps) keeps per-run state, which then counts into c.
func ForRun(p Predictor, c *TableCounts) Predictor {
	if r, ok := p.(RunScoped); ok {
		return r.ForRun(c)
	}
	return p
}

// Measured times a step from measured kernel tables: the roofline's op
// list (the same ops, padding and engine time), each op whose kind has a
// table timed from it, and the calibrated roofline for the ops without
// one and for shapes outside a table. Build it with NewMeasured; it is
// immutable except for the counts a per-run copy (ForRun) keeps, and a
// copy is not safe for concurrent use.
type Measured struct {
	r *Roofline
	k KernelTimes
	// tok is the time of the token-keyed ops (dense ops and the linear
	// layers, MoE excluded) by padded tokens, moe the MoE block's, seq
	// lm_head's and the sampler's by rows of logits.
	tok, moe, seq    opRow
	maxT             int
	tokOps           uint16 // the linear-layer table ops of the model
	quantized        bool
	skew, decodeSkew float64
	layers           float64 // full-attention layers
	moeLayers        float64 // layers with an MoE block
	localLayers      float64 // window-bounded attention layers (always the roofline's)
	counts           *TableCounts
	// mla times MLA modules from tables (nil: the roofline's); mlaProj is
	// the roofline time of the module's parts outside attention
	// (qkv_proj, rotary_emb, o_proj, every layer) by padded tokens, which a
	// module time replaces.
	mla         MLAKernelTimes
	mlaProj     opRow
	hasMoE      bool
	linear      []linearOp
	elementwise []OpUse
}

// opRow holds an op group's time and fallen-back table ops by count,
// tabulated at construction up to the predictor's limit and computed by
// fill beyond it.
type opRow struct {
	ns   []float64
	fell []uint16
	fill func(n int) (float64, uint16)
}

func newOpRow(limit int, fill func(n int) (float64, uint16)) opRow {
	r := opRow{ns: make([]float64, limit+1), fell: make([]uint16, limit+1), fill: fill}
	for n := 1; n <= limit; n++ {
		r.ns[n], r.fell[n] = fill(n)
	}
	return r
}

// at is the group's time at count n and the table ops that fell back.
func (r *opRow) at(n int) (float64, uint16) {
	if n < len(r.ns) {
		return r.ns[n], r.fell[n]
	}
	return r.fill(n)
}

// linearOp is one linear layer of the step and its per-rank GEMM shape.
type linearOp struct {
	op    TableOp
	name  string
	count float64
	n, k  int
}

// MeasuredTokenLimit bounds the token and row counts whose op times a
// Measured predictor tabulates at construction.
const MeasuredTokenLimit = 8192

// NewMeasured builds a measured-kernel predictor over roofline r (the
// model, its op list and the fallback) with kernel times k. quantized
// says the linear layers run in a quantised format (lm_head never does).
func NewMeasured(r *Roofline, k KernelTimes, quantized bool) (*Measured, error) {
	if r == nil || k == nil {
		return nil, fmt.Errorf("measured predictor: a roofline and kernel tables are required")
	}
	m := &Measured{r: r, k: k, quantized: quantized, maxT: MeasuredTokenLimit,
		skew: r.eff.AttnSkew, decodeSkew: r.eff.AttnDecodeSkew}
	for _, u := range r.ops {
		switch {
		case r.IsMLA() && (u.Op == OpQKVProj || u.Op == OpOProj):
			// MLA's projections are not the GEMMs the tables hold for
			// these names: the roofline's.
			m.elementwise = append(m.elementwise, u)
			continue
		case u.Op == OpAttentionLocal:
			m.localLayers = u.Count
			continue
		case u.Op == OpAttention:
			m.layers = u.Count
			continue
		case u.Op == OpMoE:
			m.moeLayers = u.Count
		}
		switch u.Op {
		case OpQKVProj, OpOProj, OpGateUpProj, OpDownProj:
			n, kk := r.linearShape(u.Op)
			op := map[string]TableOp{OpQKVProj: TableQKVProj, OpOProj: TableOProj, OpGateUpProj: TableGateUpProj, OpDownProj: TableDownProj}[u.Op]
			m.linear = append(m.linear, linearOp{op: op, name: u.Op, count: u.Count, n: n, k: kk})
			m.tokOps |= 1 << op
		case OpMoE:
			m.hasMoE = true
		case OpAttention, OpLMHead, OpSampler:
		default:
			m.elementwise = append(m.elementwise, u)
		}
	}
	if mk, ok := k.(MLAKernelTimes); ok && r.IsMLA() {
		m.mla = mk
		m.mlaProj = newOpRow(m.maxT, m.mlaProjOps)
	}
	m.tok = newOpRow(m.maxT, m.tokenOps)
	m.seq = newOpRow(m.maxT, m.seqOps)
	if m.hasMoE {
		m.moe = newOpRow(m.maxT, m.moeOp)
	}
	return m, nil
}

// ForRun implements RunScoped.
func (m *Measured) ForRun(c *TableCounts) Predictor {
	cp := *m
	cp.counts = c
	return &cp
}

// tokenOps times the token-keyed ops at t padded tokens, in op order.
func (m *Measured) tokenOps(t int) (float64, uint16) {
	b := &Batch{PrefillTokens: t}
	var s float64
	var fell uint16
	li, ei := 0, 0
	for _, u := range m.r.ops {
		switch {
		case li < len(m.linear) && u.Op == m.linear[li].name:
			l := m.linear[li]
			li++
			ns, ok := m.k.GEMM(m.quantized, t, l.n, l.k)
			if !ok {
				ns = m.r.OpNs(u.Op, b)
				fell |= 1 << l.op
			}
			s += u.Count * ns
		case ei < len(m.elementwise) && u.Op == m.elementwise[ei].Op:
			ei++
			s += u.Count * m.r.OpNs(u.Op, b)
		}
	}
	return s, fell
}

// seqOps times lm_head (a bf16 GEMM of rows × hidden × vocab/tp) and the
// sampler at rows rows of logits.
func (m *Measured) seqOps(rows int) (float64, uint16) {
	b := &Batch{NumDecode: rows}
	n, k := m.r.linearShape(OpLMHead)
	ns, ok := m.k.GEMM(false, rows, n, k)
	var fell uint16
	if !ok {
		ns = m.r.OpNs(OpLMHead, b)
		fell = 1 << TableLMHead
	}
	return ns + m.r.OpNs(OpSampler, b), fell
}

// moeOp times every MoE layer of the step at t padded tokens.
func (m *Measured) moeOp(t int) (float64, uint16) {
	ns, ok := m.k.MoE(t)
	var fell uint16
	if !ok {
		ns = m.r.OpNs(OpMoE, &Batch{PrefillTokens: t})
		fell = 1 << TableMoE
	}
	return m.moeLayers * ns, fell
}

// mlaProjOps is the roofline time of an MLA module's parts outside the
// attention kernel at t padded tokens, every layer.
func (m *Measured) mlaProjOps(t int) (float64, uint16) {
	b := &Batch{PrefillTokens: t}
	var s float64
	for _, u := range m.r.ops {
		switch u.Op {
		case OpQKVProj, OpRotaryEmb, OpOProj:
			s += u.Count * m.r.OpNs(u.Op, b)
		}
	}
	return s, 0
}

// mlaModule times the step's MLA layers from the module tables: the
// module time of every layer, less the roofline's projections already
// counted among the token ops. ok is false outside the tables.
func (m *Measured) mlaModule(b *Batch, pc, n int) (float64, bool) {
	var t float64
	var ok bool
	if pc > 0 {
		ps := max(b.PrefillSeqs, 1)
		t, ok = m.mla.MLAContext(ps, float64(pc)/float64(ps))
	} else {
		t, ok = m.mla.MLAGeneration(n, float64(max(b.DecodeKVSum, 0))/float64(n))
	}
	if !ok {
		return 0, false
	}
	proj, _ := m.mlaProj.at(paddedTokens(b))
	return m.layers*t - proj, true
}

// attention times every attention layer of the step: the full-attention
// layers from the tables where they apply, the window-bounded layers by
// the roofline.
func (m *Measured) attention(b *Batch) (float64, uint16, uint16) {
	t, present, fell := m.fullAttention(b)
	if m.localLayers > 0 {
		t += m.localLayers * m.r.localAttention(b)
	}
	return t, present, fell
}

// fullAttention times the full-attention layers of the step. An MLA
// model's pure prefills from an empty cache and pure decodes come from the
// MLA module tables when the kernel tables have them (mlaModule); its
// other steps, and every step without those tables, are the roofline's
// MLA model, counted as a fallback.
func (m *Measured) fullAttention(b *Batch) (float64, uint16, uint16) {
	pc := max(b.PrefillTokens, 0)
	n := max(b.NumDecode, 0)
	var present uint16
	switch {
	case pc > 0 && n > 0:
		const mixed = 1 << TableMixedAttention
		return m.layers * m.r.OpNs(OpAttention, b), mixed, mixed
	case pc > 0 && b.PrefillKV > 0:
		const history = 1 << TableHistoryAttention
		return m.layers * m.r.OpNs(OpAttention, b), history, history
	case pc > 0:
		present = 1 << TableContextAttention
	case n > 0:
		present = 1 << TableGenerationAttention
	default:
		return 0, 0, 0
	}
	if m.mla != nil && b.SpecTokens == 0 {
		if t, ok := m.mlaModule(b, pc, n); ok {
			return t, present, 0
		}
	}
	if b.SpecTokens > 0 || m.r.IsMLA() {
		// The generation table has one query token per sequence: a
		// verification step's attention is the roofline's, as is MLA's.
		return m.layers * m.r.OpNs(OpAttention, b), present, present
	}
	var ctx, gen float64
	if pc > 0 {
		ps := max(b.PrefillSeqs, 1)
		var ok bool
		ctx, ok = m.k.ContextAttention(ps, float64(pc)/float64(ps))
		if !ok {
			return m.layers * m.r.OpNs(OpAttention, b), present, present
		}
	}
	if n > 0 {
		mean := float64(max(b.DecodeKVSum, 0)) / float64(n)
		g, ok := m.k.GenerationAttention(n, mean)
		if !ok {
			return m.layers * m.r.OpNs(OpAttention, b), present, present
		}
		a := m.skew
		if pc == 0 {
			a = m.decodeSkew
		}
		if kvMax := float64(b.DecodeKVMax); a > 0 && n > 1 && kvMax > mean {
			if gMax, okMax := m.k.GenerationAttention(n, kvMax); okMax && gMax > g {
				g += a * (gMax - g)
			}
		}
		gen = g
	}
	t := ctx + gen
	return m.layers * t, present, 0
}

// StepTime implements Predictor.
func (m *Measured) StepTime(b *Batch) int64 {
	if b == nil || (b.Tokens() <= 0 && b.Seqs() <= 0 && b.PadTokens <= 0) {
		return 0
	}
	T := paddedTokens(b)
	rows := max(b.Rows(), 0)
	var s float64
	var present, fell uint16
	add := func(ns float64, f uint16) {
		s += ns
		fell |= f
	}
	if T > 0 {
		present |= m.tokOps
		add(m.tok.at(T))
		switch {
		case !m.hasMoE:
		case b.MoENs > 0:
			s += float64(b.MoENs)
		default:
			present |= 1 << TableMoE
			add(m.moe.at(T))
		}
	}
	if rows > 0 {
		present |= 1 << TableLMHead
		add(m.seq.at(rows))
	}
	at, ap, af := m.attention(b)
	s += at
	present |= ap
	fell |= af
	if m.counts != nil {
		m.counts.add(present, fell)
	}
	return clampNs(s)
}

// MinKernelNs is the shortest kernel of a one-token step: the engine-time
// model charges the once-per-step kernels no table measures at it.
func (m *Measured) MinKernelNs() float64 {
	best := math.Inf(1)
	b := &Batch{PrefillTokens: 1}
	for _, l := range m.linear {
		if ns, ok := m.k.GEMM(m.quantized, 1, l.n, l.k); ok {
			best = math.Min(best, ns)
		}
	}
	for _, u := range m.elementwise {
		best = math.Min(best, m.r.OpNs(u.Op, b))
	}
	if math.IsInf(best, 1) {
		return 0
	}
	return best
}
