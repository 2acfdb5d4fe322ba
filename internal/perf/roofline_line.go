package perf

import "math"

// The decode line.
//
// Between two changes of the decode count n or of the KV blocks per unit,
// a pure-decode attention lookup's compute and memory times (decodeTerms)
// are, in exact arithmetic, lines in the context sum k (the sum of the
// decode contexts, or n times the longest):
//
//	tc = waves·(c·(k/n)/split + o) = A·k + B  (with a wave size)
//	tc = c·(nd·((k/n)/split)) + o·nd = A·k + B  (without)
//	tm = (k·kvBytesPerTok + rowMiss)·1e9/mem = P·k + Q
//
// when the units request no more than the distinct KV bytes (req <= uniq:
// no term for re-reads; 0/AttnCacheSpeed is 0). The fast step of a
// predictor whose soft maximum is quartic (p = 4) takes them from the
// line and the soft maximum as (tc⁴ + tm⁴)^(1/4) (quarticSoftMax), without
// a division, and with the same bound fastErr on its distance from
// softMax(tc, tm) at decodeTerms's tc and tm:
//
//   - the blocks per unit, and with them split, extra, nd and waves, are
//     decodeTerms's: k ↦ ceil(fl(fl(k/n)/128)) does not decrease, so it
//     is the memo's nBlocks on the interval [kLo, kHi] whose two ends
//     give it (checked when the memo is set);
//   - every term above is non-negative (checked), so each computed time
//     is within the sum of the relative roundings on its path of the real
//     line: decodeTerms's tc within 6 units of roundoff (2^-53), the
//     line's within 5 (A takes 3, A·k and + B one each); tm within 4 on
//     either side (rowMiss is the same value on both). The line's times
//     are within 11 units of decodeTerms's, relatively;
//   - the soft maximum (a^p + b^p)^(1/p) of non-negative a, b is
//     homogeneous of degree 1 and grows with each argument, so inputs
//     within a relative ε move it by at most ε;
//   - quarticSoftMax is within 5/2 units of the real soft maximum at its
//     inputs, and softMax (powNear's steps: the quotient, two squarings,
//     1 + y, powNear's quarter power, the product with hi) within 5 units
//     plus powRefErr at its own.
//
// In all less than 19·2^-53 + 2^-40 < 2^-39.9, below fastErr (at least
// powFastErr = 2^-38 for p = 4, whose 1/p has a fractional part).

// decodeLine holds a splitMemo's interval of context sums and its lines;
// the memo's line is false when a term is negative or not finite (the
// fast step then takes decodeTerms), and a is then NaN, which fails
// quarticSoftMax as such a term would.
type decodeLine struct {
	kLo, kHi   float64
	a, b, p, q float64
}

// setLine fills m's decodeLine from its other fields.
func (m *splitMemo) setLine(r *Roofline) {
	n := m.n
	blocks := func(k float64) float64 { return math.Ceil(k / n / 128) }
	m.kLo, m.kHi = math.Inf(1), math.Inf(-1)
	if lo, hi := (m.nBlocks-1)*128*n+1, m.nBlocks*128*n; m.nBlocks == 0 {
		m.kLo, m.kHi = 0, 0
	} else if blocks(lo) == m.nBlocks && blocks(hi) == m.nBlocks {
		m.kLo, m.kHi = lo, hi
	}
	c, o, mem := r.decNsPerKV, r.dec.unitNs, r.attnDecMem
	if r.decUnits == 0 {
		m.a, m.b = c*m.nd/n/m.split, o*m.nd
	} else {
		m.a, m.b = m.waves*c/n/m.split, m.waves*o
	}
	m.p, m.q = r.kvBytesPerTok*1e9/mem, m.rowMiss*1e9/mem
	m.line = c >= 0 && o >= 0 && m.nd >= 0 && m.waves >= 0 && n > 0 && m.split > 0 &&
		r.kvBytesPerTok >= 0 && m.rowMiss >= 0 && mem > 0 && 0/r.eff.AttnCacheSpeed == 0 &&
		finiteNonNeg(m.a) && finiteNonNeg(m.b) && finiteNonNeg(m.p) && finiteNonNeg(m.q)
	if !m.line {
		m.a = math.NaN()
	}
}

func finiteNonNeg(v float64) bool { return v >= 0 && v <= math.MaxFloat64 }

// decodeLookupFast is decodeUniform(n, k, m) with the soft maximum of the
// fast step, from m's lines when they apply, and the bound on its
// distance from it.
func (x *rooflineRun) decodeLookupFast(m *splitMemo, n, k float64) (t, e float64) {
	r := x.r
	sp := &r.attnPow
	if !(m.n == n && k >= m.kLo && k <= m.kHi) {
		m.set(r, n, math.Ceil(k/n/128))
	}
	var sm float64
	if sp.quartic && !(r.kvHeads*k*r.dec.kvHeadBytes > k*r.kvBytesPerTok) { // a NaN without lines
		var ok bool
		if sm, ok = quarticSoftMax(m.a*k+m.b, m.p*k+m.q); ok {
			t = r.eff.AttnDecodeLaunchNs + m.extra + sm
			return t, errStep(sp.fastErr*(1+0x1p-20)*sm, t)
		}
	}
	launch, tc, tm := r.decodeTerms(n, k, m)
	sm = sp.softMaxFast(tc, tm)
	t = launch + sm
	return t, errStep(sp.fastErr*(1+0x1p-20)*math.Abs(sm), t)
}

// quarticSoftMax is (a⁴ + b⁴)^(1/4) for a, b >= 0 by two squarings each,
// a sum and two square roots, within 5/2 units of roundoff of the real
// value (the fourth powers within 3 each, their sum within 4, each root
// halves the error and adds its own rounding); ok is false when an
// argument is negative or not a number or the sum is out of [2^-800,
// 2^800] (a fourth power could have overflowed, or the larger one be
// subnormal).
func quarticSoftMax(a, b float64) (float64, bool) {
	if !(a >= 0 && b >= 0) {
		return 0, false
	}
	a *= a
	b *= b
	s := a*a + b*b
	if !(s >= 0x1p-800 && s < 0x1p800) {
		return 0, false
	}
	return math.Sqrt(math.Sqrt(s)), true
}
