package perf

import "math"

// The fast step.
//
// Only the rounded step time leaves the predictor. fastStep sums a step
// of the plain program as plainNs does, but with the soft maxima of its
// attention lookups from softMaxFast (no Exp or Log), the
// other terms summed once per counts key (load), and carries alongside
// every value v' it computes a bound e on |v' - v|, v the value plainNs
// computes at the same place:
//
//   - a lookup's soft maximum: relative attnPow.fastErr (softPowErr);
//   - an operation whose inputs differ by at most e_in rounds both results
//     by at most 2^-53 of their size, so its results differ by at most
//     (e_in + 2^-51·|z'|)·(1 + 2^-50) (errStep; the generous factors also
//     cover the roundings of the bound's own arithmetic and a subnormal's
//     absolute error);
//   - the skew blend's comparison tMax > t is decided only when
//     |tMax' - t'| exceeds its bound (the signs then agree), else the
//     step is left to plainNs;
//   - the other terms are equal on both sides, but plainNs adds them to
//     prefix + n·t one by one, fastStep adds n·t' to their sum (rest,
//     summed in plainNs's order once per key): every partial sum of
//     either is at most A = |prefix| + Σ|terms| + |n·t| in size, each of
//     the m + 1 roundings of each at most 2^-53 of it, so the two sums are
//     apart by at most |n·t' - n·t| + (2m+1)·2^-53·A plus the last
//     rounding; fastStep counts (m+2)·2^-50·A.
//
// With the sum s' and its bound E (enlarged by 2^-51·|s'| + 2^-40, more
// than the roundings of the two sums below), the reference sum v is within
// E of s'. For every finite v, clampNs(v) is ⌊v + 1/2⌋ clamped to
// [0, MaxInt64] (math.Round rounds halves away from zero, which differs
// from ⌊v + 1/2⌋ only below zero, where clampNs gives 0 either way). So
// when ⌊fl(s' - 2E + 1/2)⌋ = ⌊fl(s' + 2E + 1/2)⌋ (twice the bound, for
// margin), ⌊v + 1/2⌋ is that same integer, and the step time is decided
// without v. Otherwise (a reference sum within about 2E of a half
// nanosecond, or anything not finite) StepTime takes plainNs.

// errStep is the bound on |z' - z| for a rounded operation with result z'
// whose exact results differ by at most e (see above).
func errStep(e, z float64) float64 {
	return (e + 0x1p-51*math.Abs(z) + 0x1p-1000) * (1 + 0x1p-50)
}

// fastStep is clampNs(x.plainNs(b, k)) for a step b (counts k) that
// StepTime sends plainNs, with ok, when the fast sum decides its
// rounding; else ok is false.
func (x *rooflineRun) fastStep(b *Batch, k stepCounts) (ns int64, ok bool) {
	if k != x.key {
		x.load(b, k)
	}
	var t, e float64
	if b.PrefillTokens <= 0 && b.NumDecode > 0 && b.SpecTokens <= 0 {
		t, e, ok = x.decodeAttentionFast(b)
	} else {
		t, e, ok = x.r.attentionFast(b)
	}
	if !ok {
		return 0, false
	}
	cnt := x.r.cache.runs[0].counts[0]
	at := cnt * t
	s := x.rest + at
	e = errStep(math.Abs(cnt)*e, at)
	e += x.restErr*(x.restAbs+math.Abs(at)+e) + 0x1p-51*math.Abs(s) + 0x1p-40
	lo, hi := math.Floor(s-2*e+0.5), math.Floor(s+2*e+0.5)
	if !(hi-lo == 0) { // also when either is not finite
		return 0, false
	}
	return clampWhole(hi), true
}

// decodeAttentionFast is decodeAttention(b, x) with the fast step's soft
// maximum (decodeLookupFast), and the bound e on its distance from it; ok
// is false when the skew blend's comparison is not decided.
func (x *rooflineRun) decodeAttentionFast(b *Batch) (t, e float64, ok bool) {
	n := float64(b.NumDecode)
	kvSum := float64(max(b.DecodeKVSum, 0))
	t, e = x.decodeLookupFast(x.memo(0, b.NumDecode), n, kvSum)
	if a := x.r.eff.AttnDecodeSkew; a > 0 && n > 1 {
		if kvMax := float64(b.DecodeKVMax); kvMax*n > kvSum {
			tMax, eMax := x.decodeLookupFast(x.memo(1, b.NumDecode), n, kvMax*n)
			return blendFast(t, e, tMax, eMax, a)
		}
	}
	return t, e, true
}

// attentionFast is attention(b) with softMaxFast, and the bound e on its
// distance from it; ok is false when the skew blend's comparison is not
// decided. (Each lookup is attentionWindowed's launch + soft maximum.)
func (r *Roofline) attentionFast(b *Batch) (t, e float64, ok bool) {
	pc, kp, ps, n, q, kvSum, none := attentionInputs(b)
	if none {
		return 0, 0, true
	}
	sp := &r.attnPow
	launch, tc, tm := r.attentionTerms(pc, kp, ps, n, q, kvSum, 0)
	sm := sp.softMaxFast(tc, tm)
	t = launch + sm
	e = errStep(sp.fastErr*(1+0x1p-20)*math.Abs(sm), t)
	a := r.eff.AttnSkew
	if pc == 0 {
		a = r.eff.AttnDecodeSkew
	}
	if a > 0 && n > 1 {
		if kvMax := float64(b.DecodeKVMax); kvMax*n > kvSum {
			launch, tc, tm = r.attentionTerms(pc, kp, ps, n, q, kvMax*n, 0)
			sm = sp.softMaxFast(tc, tm)
			tMax := launch + sm
			return blendFast(t, e, tMax, errStep(sp.fastErr*(1+0x1p-20)*math.Abs(sm), tMax), a)
		}
	}
	return t, e, true
}

// blendFast is the skew blend of attention (t += a·(tMax - t) when
// tMax > t, a > 0) on values t and tMax within e and eMax of the
// reference's, with the bound on the result's distance; ok is false when
// the comparison is not decided.
func blendFast(t, e, tMax, eMax, a float64) (float64, float64, bool) {
	d := tMax - t
	ed := errStep(e+eMax, d)
	if !(math.Abs(d) > ed) {
		return 0, 0, false
	}
	if d > 0 {
		ad := a * d
		t += ad
		e = errStep(e+errStep(a*ed, ad), t)
	}
	return t, e, true
}

// clampWhole is clampNs(v) for a whole number v.
func clampWhole(v float64) int64 {
	switch {
	case !(v > 0):
		return 0
	case v >= math.MaxInt64:
		return math.MaxInt64
	}
	return int64(v)
}
