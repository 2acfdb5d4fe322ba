package perf

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
	// step's are nearly always its predecessor's.
	srBucket, kvBucket int
}

// decodePlanLimit bounds the decode counts whose plans are kept (vLLM's
// max_num_seqs is 256 to 1,024); larger counts are looked up in full.
const decodePlanLimit = 1024

// decodePlan is what a step without prefill and with n decodes looks up
// on every axis but kvd.
type decodePlan struct {
	built bool
	two   bool        // the pc axis blends two corners (c[1])
	t     float64     // position between the pc corners
	c     [2]nCorners // at the lower and the upper pc corner
	// skew is the skew bucket index without its skew-rate and kv_big
	// terms; -1 when pc = 0 is not a profiled pc (alpha_default).
	skew int
}

// nCorners is an attnPC's part of attnPC.at2 that does not depend on kvd:
// the two n corners s and h (h nil when n falls on one) and the kp
// positions on their axes.
type nCorners struct {
	s, h  *attnSlice
	t     float64 // position between s and h
	i, ih pos     // kp positions on s's and h's kp axes
	hKVD  bool    // h has a kvd axis of its own (else s's positions serve)
	// The latest kvd positions of the two lookups on s's and h's kvd
	// axes: the contexts grow a token a step, so the next positions
	// are nearly always in the same intervals (nearAt).
	js, jh [2]pos
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
func (p *Profile) ForRun(*TableCounts) Predictor { return &profileRun{p: p} }

// StepTime implements Predictor; it is p.StepTime(b), bit for bit.
func (r *profileRun) StepTime(b *Batch) int64 { return r.p.breakdown(b, r).Total() }

// plan returns the plan of n decodes (0 < n < decodePlanLimit).
func (r *profileRun) plan(n int) *decodePlan {
	if n >= len(r.plans) {
		r.plans = append(r.plans, make([]decodePlan, n+1-len(r.plans))...)
	}
	pl := &r.plans[n]
	if !pl.built {
		r.p.buildPlan(pl, n)
	}
	return pl
}

// buildPlan fills pl for n decodes and no prefill, with the lookups
// attnTable.at2, attnPC.at2 and skewTable.lookup make at pc = kp = 0.
func (p *Profile) buildPlan(pl *decodePlan, n int) {
	pl.built = true
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
	if hi == lo {
		return c
	}
	h := &e.slices[hi]
	c.h, c.ih = h, c.i
	if !sameAxis(h.kp, s.kp) {
		c.ih = h.kpG.at(h.kp, 0)
	}
	c.hKVD = !sameAxis(h.kvd, s.kvd)
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
	sr := 0.5
	if gap := kvMax - kvMin; gap > 0 {
		sr = (kvMean - kvMin) / gap
	}
	sr = max(0, min(1, sr))
	idx := pl.skew + s.axes[axSkewRate].indexNear(sr, &r.srBucket)*s.stride[axSkewRate] +
		s.axes[axKVBig].indexNear(kvMax, &r.kvBucket)*s.stride[axKVBig]
	if a := s.alpha[idx]; a == a { // not NaN
		return a
	}
	return s.alphaDefault
}

// indexNear is a.index(v), tried first in bucket *last, which it updates.
func (a *skewAxis) indexNear(v float64, last *int) int {
	// index returns the first i with v <= bins[i+1], else the last bucket.
	i, top := *last, len(a.labels)-1
	if i >= 0 && i <= top && (i == 0 || v > a.bins[i]) && (i == top || v <= a.bins[i+1]) {
		return i
	}
	*last = a.index(v)
	return *last
}
