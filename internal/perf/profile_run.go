package perf

import "math"

// profileRun is the Profile one run uses (Profile.ForRun). It predicts
// exactly what the Profile does, and memoises, for steps without prefill
// (pc = kp = 0), what depends on the decode count n only: the attention
// table's positions on its pc, n and kp axes, and the part of the skew
// bucket index that n and kp select. A decode step then locates only
// its two context lengths (kvd axis, skew rate and kv_big buckets).
// A copy is not safe for concurrent use.
type profileRun struct {
	p     *Profile
	plans []decodePlan // by n, built on first use, n < decodePlanLimit
	// The skew-rate and kv_big buckets of the latest decode step: a
	// step's are nearly always its predecessor's. srBucket holds the
	// skew rate of mean - min = srNum and max - min = srGap (NaN before
	// the first), which a step whose contexts all grew by a token keeps.
	srBucket, kvBucket skewBucket
	srNum, srGap       float64
	// The latest decode step's count, clamped context sum and its mean
	// sum / n (meanN 0 before the first; see meanOf).
	meanN         int
	meanSum, mean int64
}

// skewBucket is a bucket of a skew axis as a per-run copy remembers it:
// the values in (lo, hi] fall in it, and off is its index times the
// axis's stride. The zero value holds no value.
type skewBucket struct {
	lo, hi float64
	off    int
}

// decodePlanLimit bounds the decode counts whose plans are kept (vLLM's
// max_num_seqs is 256 to 1,024); larger counts are looked up in full.
const decodePlanLimit = 1024

// decodePlan is what a step without prefill and with n decodes looks up
// on every axis but kvd.
type decodePlan struct {
	// The fields a decode step reads come first (its terms other than
	// attention, the skew index, then the lower pc corner, whose own
	// first fields are the fast lookup's), so that a step reads few
	// cache lines of its plan: in a cluster the plans of an instance
	// have left the first-level cache by its next step.
	//
	// The step's terms other than attention at the padding pad of the
	// latest step StepTime took through this plan (-1 before the
	// first): they depend on n and the padding only, and a decode
	// count's steps nearly always have the same padding.
	pad                int
	dense, perSeq, moe float64 // memoAt of dense and perSeq; moeBlockAt
	moeNs              float64 // the step's MoE term: moeCount × moeTPScale × moe, or 0
	// skew is the skew bucket index without its skew-rate and kv_big
	// terms; -1 when pc = 0 is not a profiled pc (alpha_default).
	skew  int
	built bool
	two   bool        // the pc axis blends two corners (c[1])
	t     float64     // position between the pc corners
	c     [2]nCorners // at the lower and the upper pc corner
}

// nCorners is an attnPC's part of attnPC.at2 that does not depend on kvd:
// the two n corners s and h (h nil when n falls on one) and the kp
// positions on their axes.
type nCorners struct {
	// rows says that the fast lookup (at) serves these corners: both
	// kp positions are on a sample (so eval reads one kp row) and h,
	// if any, shares s's kvd axis. seg holds, per lookup, the kvd
	// interval of its latest context and what at needs of it. They come
	// first, with h and t, which the fast lookup reads too.
	rows  bool
	h     *attnSlice
	t     float64 // position between s and h
	seg   [2]kvdSegment
	s     *attnSlice
	i, ih pos  // kp positions on s's and h's kp axes
	hKVD  bool // h has a kvd axis of its own (else s's positions serve)
	// The latest kvd positions of the two lookups on s's and h's kvd
	// axes: the contexts grow a token a step, so the next positions
	// are nearly always in the same intervals (nearAt).
	js, jh [2]pos
}

// kvdSegment is an interior interval [xlo, xhi) of a kvd axis (samples
// lo and lo+1) with the operands eval and the n blend take from the kp
// rows there: ys and yh are s's and h's values at lo, dys and dyh their
// differences to lo+1. A segment whose xhi is NaN holds nothing.
type kvdSegment struct {
	lo               int
	xlo, xhi, dx     float64 // dx = xhi - xlo
	ys, dys, yh, dyh float64
}

// nearAt is g.at(xs, x) (bit for bit), tried first in the interval of
// last, the previous position on the axis, which it updates.
func nearAt(g *guide, xs []float64, x float64, last *pos) pos {
	// bracket's interior case: the first sample above x is xs[lo+1],
	// and x > xs[0] (else it clamps).
	if lo := last.lo; last.hi == lo+1 && x < xs[lo+1] && (x > xs[lo] || (x == xs[lo] && lo > 0)) {
		return pos{lo, lo + 1, (x - xs[lo]) / (xs[lo+1] - xs[lo])}
	}
	*last = g.at(xs, x)
	return *last
}

// ForRun implements RunScoped: the copy memoises per-run lookups.
func (p *Profile) ForRun(*TableCounts) Predictor { return &profileRun{p: p, srNum: math.NaN()} }

// StepTime implements Predictor; it is p.StepTime(b), bit for bit. A
// step of decodes only (no prefill, no speculation, no MoE time given by
// a data-parallel group) with n < decodePlanLimit takes decodeNs.
func (r *profileRun) StepTime(b *Batch) int64 {
	if b != nil && r.decodes(b) {
		return r.decodeNs(b, max(b.PadTokens, 0))
	}
	return r.p.breakdown(b, r).Total()
}

// decodes reports that StepTime takes b (not nil) through decodeNs.
func (r *profileRun) decodes(b *Batch) bool {
	return b.PrefillTokens == 0 && b.PrefillSeqs == 0 && b.SpecTokens == 0 && b.NumDecode > 0 && r.plainDecodes(b)
}

// plainDecodes is decodes for a b with decodes (NumDecode > 0) and
// without prefill tokens, prefill requests or speculation.
func (r *profileRun) plainDecodes(b *Batch) bool {
	return b.PrefillKV == 0 && b.NumDecode < decodePlanLimit && (b.MoENs <= 0 || r.p.moe == nil)
}

// decodeStep is breakdown(b, r) for a step StepTime sends to decodeNs:
// the terms by the expressions of breakdown and p.attention, those that
// depend on n and the padding only from b's plan.
func (r *profileRun) decodeStep(b *Batch) StepBreakdown {
	n, pad := b.NumDecode, max(b.PadTokens, 0)
	pl := r.plan(n)
	if pad != pl.pad {
		r.p.padTerms(pl, n, pad)
	}
	s := StepBreakdown{Dense: pl.dense, PerSequence: pl.perSeq, MoE: pl.moeNs}
	if r.p.attn != nil {
		s.Attention = r.decodeAttention(pl, b)
	}
	return s
}

// decodeNs is decodeStep(b).Total() for b at padding pad >= 0 (whatever
// b.PadTokens says): the same terms summed in the same order and rounded
// alike, without building the breakdown.
func (r *profileRun) decodeNs(b *Batch, pad int) int64 {
	n := b.NumDecode
	pl := r.plan(n)
	if pad != pl.pad {
		r.p.padTerms(pl, n, pad)
	}
	a := 0.0
	if r.p.attn != nil {
		a = r.decodeAttention(pl, b)
	}
	return roundNs(pl.dense + pl.perSeq + a + pl.moeNs)
}

// decodeAttention is breakdown's attention term (attnCount × max(0,
// p.attention(b, r))) for a decode step of plan pl.
func (r *profileRun) decodeAttention(pl *decodePlan, b *Batch) float64 {
	p, n := r.p, b.NumDecode
	mean := float64(r.meanOf(max(b.DecodeKVSum, 0), n))
	kvMax := float64(b.DecodeKVMax)
	alpha := 0.0
	if sk := p.skew; sk != nil && n > 1 && kvMax > mean {
		// pl.alpha, its usual case (the latest skew rate and kv_big
		// bucket) inline.
		kvMin, kb := float64(max(b.DecodeKVMin, 0)), &r.kvBucket
		if pl.skew >= 0 && mean-kvMin == r.srNum && kvMax-kvMin == r.srGap && kvMax > kb.lo && kvMax <= kb.hi {
			alpha = sk.alphaAt(pl.skew + r.srBucket.off + kb.off)
		} else {
			alpha = pl.alpha(sk, mean, kvMin, kvMax, r)
		}
	}
	var tMean, tMax float64
	if c := &pl.c[0]; c.rows && !pl.two {
		// c.at, its usual case (x in the latest interval) inline.
		if g := &c.seg[0]; g.holds(mean) {
			tMean = c.value(g, mean)
		} else {
			tMean = c.at(g, mean)
		}
		if g := &c.seg[1]; alpha == 0 {
		} else if g.holds(kvMax) {
			tMax = c.value(g, kvMax)
		} else {
			tMax = c.at(g, kvMax)
		}
	} else {
		kvd := [2]float64{mean, kvMax}
		t := pl.at2(&kvd, alpha != 0)
		tMean, tMax = t[0], t[1]
	}
	if alpha != 0 && !(tMax <= tMean) { // as p.attention: a NaN blends
		tMean += alpha * (tMax - tMean)
	}
	return p.attnCount * max(0, tMean)
}

// meanOf is s / n (s >= 0, 0 < n), the mean context of a decode step.
// A step with the latest step's n whose sum is the latest one or that
// plus n (every context a token longer) takes the latest quotient or
// that plus one (floor((s+n)/n) = floor(s/n) + 1), without dividing.
func (r *profileRun) meanOf(s int64, n int) int64 {
	q := r.mean
	switch d := s - r.meanSum; {
	case n != r.meanN || (d != 0 && d != int64(n)):
		q = s / int64(n)
	case d != 0:
		q++
	}
	r.meanN, r.meanSum, r.mean = n, s, q
	return q
}

// padTerms sets pl's terms at padding pad (n decodes).
func (p *Profile) padTerms(pl *decodePlan, n, pad int) {
	pl.pad = pad
	pl.dense = memoAt(p.denseMemo, &p.dense, n+pad)
	pl.perSeq = memoAt(p.perSeqMemo, &p.perSeq, n)
	if p.moeTP != nil {
		pl.moe = p.moeBlockAt(n + pad)
		pl.moeNs = p.moeCount * p.moeTPScale * pl.moe
	}
}

// at is at2's value at kvd x for the lookup whose segment is g (c.seg[0]
// for the mean context, c.seg[1] for the longest), for corners with rows
// set: from g when x lies in it, else after locating x (and keeping its
// interval in g when interior). The expressions are eval's and at2's.
func (c *nCorners) at(g *kvdSegment, x float64) float64 {
	if !g.holds(x) {
		s := c.s
		j := s.kvdG.at(s.kvd, x)
		if j.hi != j.lo+1 || !(x < s.kvd[j.hi]) {
			// clamped or extrapolated: not an interior interval.
			v := s.eval(c.i, j)
			if c.h != nil {
				v += c.t * (c.h.eval(c.ih, j) - v)
			}
			return v
		}
		c.fill(g, j.lo)
	}
	return c.value(g, x)
}

// holds reports that x lies in g (never when g holds nothing).
func (g *kvdSegment) holds(x float64) bool {
	return x < g.xhi && (x > g.xlo || (x == g.xlo && g.lo > 0))
}

// value is at's value at x in g (g.holds(x)).
func (c *nCorners) value(g *kvdSegment, x float64) float64 {
	tj := (x - g.xlo) / g.dx
	v := g.ys + tj*g.dys
	if c.h == nil {
		return v
	}
	return v + c.t*(g.yh+tj*g.dyh-v)
}

// fill makes g the interval of s's kvd axis from sample lo to lo+1.
func (c *nCorners) fill(g *kvdSegment, lo int) {
	s := c.s
	g.lo, g.xlo, g.xhi = lo, s.kvd[lo], s.kvd[lo+1]
	g.dx = g.xhi - g.xlo
	row := s.t[c.i.lo*len(s.kvd):]
	g.ys, g.dys = row[lo], row[lo+1]-row[lo]
	if h := c.h; h != nil {
		row = h.t[c.ih.lo*len(h.kvd):]
		g.yh, g.dyh = row[lo], row[lo+1]-row[lo]
	}
}

// plan returns the plan of n decodes (0 < n < decodePlanLimit). It is
// small enough to be inlined; newPlan makes a plan on first use.
func (r *profileRun) plan(n int) *decodePlan {
	if n < len(r.plans) && r.plans[n].built {
		return &r.plans[n]
	}
	return r.newPlan(n)
}

// newPlan builds the plan of n decodes, growing plans to hold it.
func (r *profileRun) newPlan(n int) *decodePlan {
	if n >= len(r.plans) {
		r.plans = append(r.plans, make([]decodePlan, n+1-len(r.plans))...)
	}
	pl := &r.plans[n]
	r.p.buildPlan(pl, n)
	return pl
}

// buildPlan fills pl for n decodes and no prefill, with the lookups
// attnTable.at2, attnPC.at2 and skewTable.lookup make at pc = kp = 0.
func (p *Profile) buildPlan(pl *decodePlan, n int) {
	pl.built, pl.pad = true, -1
	a := p.attn
	lo, hi, t := a.pcsG.bracket(a.pcs, 0)
	pl.c[0] = nCornersAt(&a.byPC[lo], float64(n))
	pl.two, pl.t = hi != lo, t
	if pl.two {
		pl.c[1] = nCornersAt(&a.byPC[hi], float64(n))
	}
	pl.skew = -1
	if s := p.skew; s != nil {
		if pi := s.pcsG.find(s.pcs, 0); pi >= 0 {
			pl.skew = pi*s.stride[0]*len(s.axes[0].labels) +
				s.axes[axN].index(float64(n))*s.stride[axN] + s.axes[axKP].index(0)*s.stride[axKP]
		}
	}
}

// nCornersAt is the kvd-independent part of e.at2(n, 0, ...).
func nCornersAt(e *attnPC, n float64) nCorners {
	lo, hi, t := e.nG.bracket(e.n, n)
	s := &e.slices[lo]
	c := nCorners{s: s, t: t, i: s.kpG.at(s.kp, 0)}
	c.seg[0].xhi, c.seg[1].xhi = math.NaN(), math.NaN()
	c.rows = c.i.hi == c.i.lo
	if hi == lo {
		return c
	}
	h := &e.slices[hi]
	c.h, c.ih = h, c.i
	if !sameAxis(h.kp, s.kp) {
		c.ih = h.kpG.at(h.kp, 0)
	}
	c.hKVD = !sameAxis(h.kvd, s.kvd)
	c.rows = c.rows && c.ih.hi == c.ih.lo && !c.hKVD
	return c
}

// at2 is attnPC.at2 with the plan's positions: the same expressions in
// the same order.
func (c *nCorners) at2(kvd *[2]float64, two bool) (v [2]float64) {
	s := c.s
	j0 := nearAt(&s.kvdG, s.kvd, kvd[0], &c.js[0])
	var j1 pos
	v[0] = s.eval(c.i, j0)
	if two {
		j1 = nearAt(&s.kvdG, s.kvd, kvd[1], &c.js[1])
		v[1] = s.eval(c.i, j1)
	}
	h := c.h
	if h == nil {
		return v
	}
	if c.hKVD {
		j0 = nearAt(&h.kvdG, h.kvd, kvd[0], &c.jh[0])
		if two {
			j1 = nearAt(&h.kvdG, h.kvd, kvd[1], &c.jh[1])
		}
	}
	v[0] += c.t * (h.eval(c.ih, j0) - v[0])
	if two {
		v[1] += c.t * (h.eval(c.ih, j1) - v[1])
	}
	return v
}

// at2 is attnTable.at2 at pc = kp = 0 with the plan's positions.
func (pl *decodePlan) at2(kvd *[2]float64, two bool) [2]float64 {
	v := pl.c[0].at2(kvd, two)
	if pl.two {
		w := pl.c[1].at2(kvd, two)
		v[0] += pl.t * (w[0] - v[0])
		if two {
			v[1] += pl.t * (w[1] - v[1])
		}
	}
	return v
}

// alpha is skewTable.skewAlpha at pc = kp = 0 with the plan's part of
// the bucket index.
func (pl *decodePlan) alpha(s *skewTable, kvMean, kvMin, kvMax float64, r *profileRun) float64 {
	if pl.skew < 0 {
		return s.alphaDefault
	}
	if num, gap := kvMean-kvMin, kvMax-kvMin; num != r.srNum || gap != r.srGap {
		r.skewRate(s, num, gap)
	}
	kb := &r.kvBucket
	if !(kvMax > kb.lo && kvMax <= kb.hi) {
		s.bucketOf(axKVBig, kvMax, kb)
	}
	return s.alphaAt(pl.skew + r.srBucket.off + kb.off)
}

// alphaAt is the alpha of bucket index i, alphaDefault where the table
// has none (NaN).
func (s *skewTable) alphaAt(i int) float64 {
	if a := s.alpha[i]; a == a { // not NaN
		return a
	}
	return s.alphaDefault
}

// skewRate sets r.srBucket to the bucket of skewAlpha's skew rate for
// mean - min = num and max - min = gap, which it remembers. The rate
// depends on them only: a step whose contexts all grew by a token has
// its predecessor's, and alpha skips it.
func (r *profileRun) skewRate(s *skewTable, num, gap float64) {
	r.srNum, r.srGap = num, gap
	sr := 0.5
	if gap > 0 {
		sr = num / gap
	}
	// skewAlpha clamps sr to [0, 1] with the builtins; sr only picks a
	// bucket by comparisons, to which -0 (which the builtins would make
	// +0) and +0 are alike, so plain tests clamp it to the same bucket.
	if sr < 0 {
		sr = 0
	} else if sr > 1 {
		sr = 1
	}
	if sb := &r.srBucket; !(sr > sb.lo && sr <= sb.hi) {
		s.bucketOf(axSkewRate, sr, sb)
	}
}

// bucketOf sets *b to the bucket of v on axis ax: index
// returns the first i with v <= bins[i+1], else the last bucket, so
// bucket i holds (bins[i], bins[i+1]], the first one everything below
// and the last one everything above.
func (s *skewTable) bucketOf(ax int, v float64, b *skewBucket) {
	a := &s.axes[ax]
	i, top := a.index(v), len(a.labels)-1
	b.lo, b.hi, b.off = math.Inf(-1), math.Inf(1), i*s.stride[ax]
	if i > 0 {
		b.lo = a.bins[i]
	}
	if i < top {
		b.hi = a.bins[i+1]
	}
}
