package perf

import (
	"math"
	"sync/atomic"
)

// profileRun is the Profile one run uses (Profile.ForRun). It predicts
// exactly what the Profile does, and memoises, for steps without prefill
// (pc = kp = 0), what depends on the decode count n only: the attention
// table's positions on its pc, n and kp axes, and the part of the skew
// bucket index that n and kp select. A decode step then locates only
// its two context lengths (kvd axis, skew rate and kv_big buckets).
// A copy is not safe for concurrent use.
//
// In a cluster an instance's predictor state has left the first-level
// cache by its next step, so a decode step should touch few cache lines
// of it: the fields it reads come first (56 bytes, up to plans, which
// profileEngine places on its first line), and of its plan it reads the
// hot part only (one planHot, two lines).
type profileRun struct {
	p *Profile
	// hot[n] is the hot part of n's plan (parallel to plans): noPlans,
	// whose plans are none built, before the first plan (see newPlan).
	hot *[decodePlanLimit]planHot
	// The latest decode step's clamped context sum and its mean sum / n,
	// n = meanN (0 before the first; see meanOf).
	meanSum, mean int64
	// meanN is as above; srB is the skew-rate bucket's index plus one
	// (0: none, or an index beyond an int16).
	meanN, srB int16
	offs       int32
	// The skew-rate and kv_big buckets of the latest decode step: a
	// step's are nearly always its predecessor's. The skew-rate bucket
	// is that of the rate of mean - min = srNum and max - min = srGap,
	// which a step whose contexts all grew by a token keeps (0 and 0,
	// which no step has, for none: a step has max > mean). The kv_big
	// bucket holds the whole contexts in (kvLo, kvHi] (empty at first).
	// The four are whole numbers within an int32 (see skewRate and
	// setKVBucket); offs is the sum of the buckets' offsets (kvOff,
	// srOff), their indices times the axes' strides. (Bucket indices
	// are int32, as planHot.skew: a skew table holds far fewer than
	// 2^31 buckets.)
	srNum, srGap int32
	kvLo, kvHi   int32
	plans        []decodePlan // by n, built on first use, n < decodePlanLimit
	kvOff, srOff int32
}

// decodePlanLimit bounds the decode counts whose plans are kept (vLLM's
// max_num_seqs is 256 to 1,024); larger counts are looked up in full.
const decodePlanLimit = 1024

// planHot is the part of a plan a decode step reads: 128 bytes, which
// newPlan keeps on two cache lines.
type planHot struct {
	// pad is the padding of the latest step decodeStep or decodeNs took
	// through the plan (-1 before the first, or when it exceeds an
	// int16), dp the step's dense plus per-sequence terms at it (the
	// plan's dense + perSeq) and moeNs its MoE term (the plan's): they
	// depend on n and the padding only, and a decode count's steps
	// nearly always have the same padding.
	pad   int16
	built bool
	flags planFlags
	// skew is the skew bucket index without its skew-rate and kv_big
	// terms; -1 when pc = 0 is not a profiled pc (alpha_default).
	skew      int32
	dp, moeNs float64
	t         float64 // c[0].t, when planRows is set
	// seg holds, per lookup (the mean and the longest context), the kvd
	// interval of its latest context and what the row lookup needs of
	// it, when planRows is set.
	seg [2]kvdSegment
}

// planFlags are a plan's flags.
type planFlags uint8

const (
	// planRows: the row lookup (seg, else profileRun.locate) serves
	// the plan: the pc axis does not blend (no c[1]) and c[0].rows.
	planRows planFlags = 1 << iota
	planH              // c[0].h is not nil (n is between two n corners)
)

// decodePlan is what a step without prefill and with n decodes looks up
// on every axis but kvd (its hot part: the same n's planHot).
type decodePlan struct {
	// The step's terms other than attention at the padding of the
	// plan's planHot (whose moeNs is moeCount × moeTPScale × moe, or 0).
	dense, perSeq, moe float64     // memoAt of dense and perSeq; moeBlockAt
	two                bool        // the pc axis blends two corners (c[1])
	t                  float64     // position between the pc corners
	c                  [2]nCorners // at the lower and the upper pc corner
}

// nCorners is an attnPC's part of attnPC.at2 that does not depend on kvd:
// the two n corners s and h (h nil when n falls on one) and the kp
// positions on their axes.
type nCorners struct {
	// rows says that the row lookup (planRows) serves these corners:
	// both kp positions are on a sample (so eval reads one kp row) and
	// h, if any, shares s's kvd axis.
	rows  bool
	h     *attnSlice
	t     float64 // position between s and h
	s     *attnSlice
	i, ih pos  // kp positions on s's and h's kp axes
	hKVD  bool // h has a kvd axis of its own (else s's positions serve)
	// The latest kvd positions of the two lookups on s's and h's kvd
	// axes: the contexts grow a token a step, so the next positions
	// are nearly always in the same intervals (nearAt).
	js, jh [2]pos
}

// kvdSegment is an interior interval of a kvd axis, from sample lo at
// xlo to sample lo+1 (dx = xs[lo+1] - xlo), with the operands eval and
// the n blend take from the kp rows there: ys and yh are s's and h's
// values at lo, dys and dyh their differences to lo+1. A segment whose
// dx is NaN holds nothing.
//
// A context x lies in the segment's interior when its position there,
// tj = (x - xlo) / dx (bracket's expression), is in (0, 1): rounding is
// monotone, so tj > 0 means x > xlo, and x >= xs[lo+1] would give
// x - xlo >= dx and tj >= 1. A context in the interval but not found so
// (at xlo, or with tj rounded up to 1) takes the full lookup, which
// gives the same.
type kvdSegment struct {
	xlo, dx          float64
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
func (p *Profile) ForRun(*TableCounts) Predictor {
	r := p.newRun()
	return &r
}

// newRun is a new per-run copy of p.
func (p *Profile) newRun() profileRun { return profileRun{p: p, hot: &noPlans} }

// noPlans is the hot parts of a run without plans (never written).
var noPlans [decodePlanLimit]planHot

// hotRuns counts the hot parts' arrays made, whose starts newHot
// staggers.
var hotRuns atomic.Uint32

// hotStagger is the number of starts newHot staggers the arrays over
// (4 kB of hot parts: every set of a first-level cache).
const hotStagger = 32

// newHot is a new array of hot parts. An array is page-aligned, and the
// runs of a cluster meet the same decode counts: were their arrays to
// start alike, the same count's hot parts would share cache sets, so the
// array of the k-th run starts 7k (modulo hotStagger) entries into a
// larger one.
func newHot() *[decodePlanLimit]planHot {
	off := int(hotRuns.Add(1)*7) % hotStagger
	buf := make([]planHot, decodePlanLimit+hotStagger)
	return (*[decodePlanLimit]planHot)(buf[off:])
}

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
	h := r.plan(n)
	if pad != int(h.pad) {
		r.padTerms(h, n, pad)
	}
	pl := &r.plans[n]
	s := StepBreakdown{Dense: pl.dense, PerSequence: pl.perSeq, MoE: h.moeNs}
	if r.p.attn != nil {
		s.Attention = r.decodeAttention(h, b)
	}
	return s
}

// decodeNs is decodeStep(b).Total() for b at padding pad >= 0 (whatever
// b.PadTokens says): the same terms summed in the same order and rounded
// alike (dense + perSeq first), without building the breakdown.
func (r *profileRun) decodeNs(b *Batch, pad int) int64 {
	n := b.NumDecode
	h := r.plan(n)
	if pad != int(h.pad) {
		r.padTerms(h, n, pad)
	}
	a := 0.0
	if r.p.attn != nil {
		a = r.decodeAttention(h, b)
	}
	return roundNs(h.dp + a + h.moeNs)
}

// decodeAttention is breakdown's attention term (attnCount × max(0,
// p.attention(b, r))) for a decode step of the plan whose hot part is h.
func (r *profileRun) decodeAttention(h *planHot, b *Batch) float64 {
	p, n := r.p, b.NumDecode
	q := r.meanOf(max(b.DecodeKVSum, 0), n)
	mean, kvMax := float64(q), float64(b.DecodeKVMax)
	alpha := 0.0
	if sk := p.skew; sk != nil && n > 1 && kvMax > mean {
		// r.alpha, its usual case (the latest skew rate and kv_big
		// bucket) inline, in whole numbers: with the longest context
		// in (kvLo, kvHi], within an int32, the mean and the shortest
		// are within 2^32, where the differences alpha takes are
		// exact.
		lo, k := max(b.DecodeKVMin, 0), b.DecodeKVMax
		if h.skew >= 0 && q-int64(lo) == int64(r.srNum) && k-lo == int(r.srGap) && k > int(r.kvLo) && k <= int(r.kvHi) {
			alpha = sk.alphaAt(int(h.skew + r.offs))
		} else {
			alpha = r.alpha(sk, int(h.skew), mean, float64(lo), k)
		}
	}
	var tMean, tMax float64
	if h.flags&planRows != 0 {
		// The row lookup: x in the latest interval, else locate.
		if g := &h.seg[0]; inside((mean - g.xlo) / g.dx) {
			tMean = h.value(g, (mean-g.xlo)/g.dx)
		} else {
			tMean = r.locate(h, 0, mean, n)
		}
		if g := &h.seg[1]; alpha == 0 {
		} else if inside((kvMax - g.xlo) / g.dx) {
			tMax = h.value(g, (kvMax-g.xlo)/g.dx)
		} else {
			tMax = r.locate(h, 1, kvMax, n)
		}
	} else {
		kvd := [2]float64{mean, kvMax}
		t := r.plans[n].at2(&kvd, alpha != 0)
		tMean, tMax = t[0], t[1]
	}
	if alpha != 0 && !(tMax <= tMean) { // as p.attention: a NaN blends
		tMean += alpha * (tMax - tMean)
	}
	return p.attnCount * max(0, tMean)
}

// meanOf is s / n (s >= 0, 0 < n < decodePlanLimit), the mean context
// of a decode step.
// A step with the latest step's n whose sum is the latest one or that
// plus n (every context a token longer) takes the latest quotient or
// that plus one (floor((s+n)/n) = floor(s/n) + 1), without dividing.
func (r *profileRun) meanOf(s int64, n int) int64 {
	q := r.mean
	switch d := s - r.meanSum; {
	case int16(n) != r.meanN || (d != 0 && d != int64(n)):
		q = s / int64(n)
	case d != 0:
		q++
	}
	r.meanN, r.meanSum, r.mean = int16(n), s, q
	return q
}

// padTerms sets the terms of n's plan (hot part h) at padding pad.
func (r *profileRun) padTerms(h *planHot, n, pad int) {
	p, pl := r.p, &r.plans[n]
	h.pad = -1
	if pad <= math.MaxInt16 {
		h.pad = int16(pad)
	}
	pl.dense = memoAt(p.denseMemo, &p.dense, n+pad)
	pl.perSeq = memoAt(p.perSeqMemo, &p.perSeq, n)
	h.dp = pl.dense + pl.perSeq
	if p.moeTP != nil {
		pl.moe = p.moeBlockAt(n + pad)
		h.moeNs = p.moeCount * p.moeTPScale * pl.moe
	}
}

// locate is at2's value at kvd x for lookup k (0: the mean context, 1:
// the longest) of n's plan, whose hot part h has planRows set, when x is
// not inside h.seg[k]: it locates x and keeps its interval in h.seg[k]
// when interior. The expressions are eval's and at2's (g's position of
// x is j.t: the same quotient of the same differences).
func (r *profileRun) locate(h *planHot, k int, x float64, n int) float64 {
	c := &r.plans[n].c[0]
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
	g := &h.seg[k]
	c.fill(g, j.lo)
	return h.value(g, j.t)
}

// inside reports that a context whose position in a segment is tj lies
// in its interior (see kvdSegment; never when tj is NaN).
func inside(tj float64) bool { return tj > 0 && tj < 1 }

// value is at2's value at position tj in g, one of h's segments.
func (h *planHot) value(g *kvdSegment, tj float64) float64 {
	v := g.ys + tj*g.dys
	if h.flags&planH == 0 {
		return v
	}
	return v + h.t*(g.yh+tj*g.dyh-v)
}

// fill makes g the interval of s's kvd axis from sample lo to lo+1.
func (c *nCorners) fill(g *kvdSegment, lo int) {
	s := c.s
	g.xlo, g.dx = s.kvd[lo], s.kvd[lo+1]-s.kvd[lo]
	row := s.t[c.i.lo*len(s.kvd):]
	g.ys, g.dys = row[lo], row[lo+1]-row[lo]
	if h := c.h; h != nil {
		row = h.t[c.ih.lo*len(h.kvd):]
		g.yh, g.dyh = row[lo], row[lo+1]-row[lo]
	}
}

// plan returns the hot part of the plan of n decodes (0 < n <
// decodePlanLimit; the plan is r.plans[n]). It is small enough to be
// inlined; newPlan makes a plan on first use.
func (r *profileRun) plan(n int) *planHot {
	if h := &r.hot[n]; h.built {
		return h
	}
	return r.newPlan(n)
}

// newPlan builds the plan of n decodes, growing the plans to hold it. The
// hot parts are one array of 128-byte entries within a larger one, whose
// size (a multiple of the page size) starts it on a page: each hot part
// is two whole cache lines. The array is allocated at the first plan
// (the pages of counts never met are not touched); the plans grow to a
// power-of-two count.
func (r *profileRun) newPlan(n int) *planHot {
	if r.hot == &noPlans {
		r.hot = newHot()
	}
	if n >= len(r.plans) {
		size := 8
		for size <= n {
			size *= 2
		}
		r.plans = append(r.plans, make([]decodePlan, size-len(r.plans))...)
	}
	h := &r.hot[n]
	r.p.buildPlan(h, &r.plans[n], n)
	return h
}

// buildPlan fills n's plan, pl and its hot part h, for n decodes and no
// prefill, with the lookups attnTable.at2, attnPC.at2 and
// skewTable.lookup make at pc = kp = 0.
func (p *Profile) buildPlan(h *planHot, pl *decodePlan, n int) {
	h.built, h.pad = true, -1
	a := p.attn
	lo, hi, t := a.pcsG.bracket(a.pcs, 0)
	pl.c[0] = nCornersAt(&a.byPC[lo], float64(n))
	pl.two, pl.t = hi != lo, t
	if pl.two {
		pl.c[1] = nCornersAt(&a.byPC[hi], float64(n))
	}
	if c := &pl.c[0]; c.rows && !pl.two {
		h.flags |= planRows
		h.t = c.t
		if c.h != nil {
			h.flags |= planH
		}
	}
	h.seg[0].dx, h.seg[1].dx = math.NaN(), math.NaN()
	h.skew = -1
	if s := p.skew; s != nil {
		if pi := s.pcsG.find(s.pcs, 0); pi >= 0 {
			h.skew = int32(pi*s.stride[0]*len(s.axes[0].labels) +
				s.axes[axN].index(float64(n))*s.stride[axN] + s.axes[axKP].index(0)*s.stride[axKP])
		}
	}
}

// nCornersAt is the kvd-independent part of e.at2(n, 0, ...).
func nCornersAt(e *attnPC, n float64) nCorners {
	lo, hi, t := e.nG.bracket(e.n, n)
	s := &e.slices[lo]
	c := nCorners{s: s, t: t, i: s.kpG.at(s.kp, 0)}
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

// alpha is skewTable.skewAlpha at pc = kp = 0 with a plan's part of the
// bucket index, skew, for the longest context k (kvMax).
func (r *profileRun) alpha(s *skewTable, skew int, kvMean, kvMin float64, k int) float64 {
	if skew < 0 {
		return s.alphaDefault
	}
	kvMax := float64(k)
	if num, gap := kvMean-kvMin, kvMax-kvMin; num != float64(r.srNum) || gap != float64(r.srGap) {
		r.skewRate(s, num, gap)
	}
	if !(k > int(r.kvLo) && k <= int(r.kvHi)) {
		r.setKVBucket(s, kvMax)
	}
	return s.alphaAt(skew + int(r.offs))
}

// alphaAt is the alpha of bucket index i, alphaDefault where the table
// has none (NaN).
func (s *skewTable) alphaAt(i int) float64 {
	if a := s.alpha[i]; a == a { // not NaN
		return a
	}
	return s.alphaDefault
}

// skewRate sets r's skew-rate bucket to that of skewAlpha's skew rate for
// mean - min = num and max - min = gap, which it remembers. The rate
// depends on them only: a step whose contexts all grew by a token has
// its predecessor's, and alpha skips it.
func (r *profileRun) skewRate(s *skewTable, num, gap float64) {
	r.srNum, r.srGap = 0, 0 // none, unless both are whole int32s
	if n, ok := wholeInt32(num); ok {
		if g, ok := wholeInt32(gap); ok {
			r.srNum, r.srGap = n, g
		}
	}
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
	if a, i := &s.axes[axSkewRate], int(r.srB)-1; i < 0 || !a.holds(i, sr) {
		i := a.index(sr)
		r.srB, r.srOff = 0, int32(i*s.stride[axSkewRate])
		if i < math.MaxInt16 {
			r.srB = int16(i + 1)
		}
		r.offs = r.srOff + r.kvOff
	}
}

// setKVBucket sets r's kv_big bucket to that of the longest context
// kvMax (a whole number): it holds (lo, hi], so the whole numbers in it
// are those in (floor(lo), floor(hi)], which r keeps as int32s when they
// fit (within an int32, lo rounded up, hi down, or an empty range: a
// context found in (kvLo, kvHi] is in the bucket).
func (r *profileRun) setKVBucket(s *skewTable, kvMax float64) {
	lo, hi, off := s.bucketOf(axKVBig, kvMax)
	r.kvOff = off
	r.offs = r.srOff + r.kvOff
	r.kvLo, r.kvHi = wholeRange(lo, hi)
}

// wholeRange is (klo, khi], within an int32, such that a whole k in it
// is in (lo, hi]: the whole numbers in (lo, hi] are those in
// (floor(lo), floor(hi)], whose bounds it clamps into an int32 (an
// empty range when they cannot be).
func wholeRange(lo, hi float64) (klo, khi int32) {
	fl, fh := math.Floor(lo), math.Floor(hi)
	if !(fl < math.MaxInt32 && fh >= math.MinInt32) { // also NaN
		return math.MaxInt32, math.MinInt32
	}
	return int32(max(fl, math.MinInt32)), int32(min(fh, math.MaxInt32))
}

// wholeInt32 is v as an int32 when v is a whole number within an int32.
// (Whatever int64(v) is for a v beyond an int64 or NaN, an int32 equals
// v only when v is that whole number.)
func wholeInt32(v float64) (int32, bool) {
	i := int32(int64(v))
	return i, float64(i) == v
}

// bucketOf is the bucket of v on axis ax: it holds (lo, hi], and off is
// its index times the axis's stride. index returns the first i with v
// <= bins[i+1], else the last bucket, so bucket i holds (bins[i],
// bins[i+1]], the first one everything below and the last one
// everything above.
func (s *skewTable) bucketOf(ax int, v float64) (lo, hi float64, off int32) {
	i := s.axes[ax].index(v)
	lo, hi = s.bucketBounds(ax, i)
	return lo, hi, int32(i * s.stride[ax])
}

// bucketBounds is (lo, hi], the values bucket i of axis ax holds.
func (s *skewTable) bucketBounds(ax, i int) (lo, hi float64) {
	a := &s.axes[ax]
	lo, hi = math.Inf(-1), math.Inf(1)
	if i > 0 {
		lo = a.bins[i]
	}
	if i < len(a.labels)-1 {
		hi = a.bins[i+1]
	}
	return lo, hi
}

// holds reports that v is in bucket i of the axis, (lo, hi] of
// bucketBounds (the first bucket's -Inf is below every v but NaN), or
// that v is NaN and the axis has one bucket, the one index gives NaN.
func (a *skewAxis) holds(i int, v float64) bool {
	return (i == 0 || v > a.bins[i]) && (i == len(a.labels)-1 || v <= a.bins[i+1])
}
