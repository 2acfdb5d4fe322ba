package perf

import "math"

// The fast soft maximum.
//
// A pure-decode step of the roofline predictor calls softMax for attention
// twice (at the mean context and at the longest), and with a fractional
// exponent each of its pows costs an Exp and a Log. softMaxFast takes the
// fractional power x^yf (|yf| <= 1/2) of an x in [2^-15, 2] from tables
// made once per exponent instead: with x = 2^k·m, m in [1, 2), and g the
// point of the grid 1 + i/256 (i = 0..256) nearest m,
//
//	x^yf = 2^(k·yf) · g^yf · (1+d)^yf,  d = m/g - 1,  |d| <= 2^-9,
//
// 2^(k·yf) and g^yf from the tables, (1+d)^yf = Σ_k C(yf, k)·d^k truncated
// after k = 4. The whole part of the exponent is powNear's chain of
// squarings, unchanged. A fractional part of 1/4, 1/2 or -1/4 (the
// calibrations' attention sharpness of 4 has 1/p = 1/4) is taken with
// square roots instead (rootPow): each root is correctly rounded, so
// x^(1/4) as sqrt(sqrt(x)) is within 3/2 units of roundoff (2^-53
// relative each) of the true power, 1/sqrt(sqrt(x)) within 5/2.
//
// Error of such a pow (the fast pow) against powNear at the same x
// (powFastErr):
//   - |C(yf, k)| <= |yf| <= 1/2 for k >= 1 (each later factor
//     |yf-j|/(j+1) is below 1), so the remainder after k = 4 is at most
//     |d|^5/(2(1-|d|)) < 2^-45.9;
//   - d is computed as m·(1/g) - 1: the subtraction is exact (Sterbenz),
//     the two roundings move d by at most 2^-51.9, the result by 2^-52.9;
//   - the tables' entries are math.Pow's and math.Exp·math.Log's values,
//     each within a few ulps (< 2^-49) of the true power (2^(k·yf) with
//     k·yf rounded, |k·yf| <= 7.5: < 2^-50 more); powNear's value
//     at x is within a few ulps too (Log's error times |yf·Log x| <= 5.2,
//     Exp's error): < 2^-47 together;
//   - Horner's evaluation and the two products: at most 6 roundings, each
//     at most 2^-53 relative;
//   - the chain of squarings multiplies the same x_k into both, one
//     rounding per product on each side, at most 6 products: 12·2^-53.
//
// (With square roots the first three items are at most 5/2·2^-53, less
// than the tables' error.) In all less than 2^-45; powFastErr = 2^-38 leaves a factor above 100.
//
// softMaxFast is hi·pow(1 + pow(lo/hi, p), 1/p) with the fast pow, or,
// for p = 4 and non-negative arguments, quarticSoftMax (within 5/2 units
// of roundoff of the real soft maximum, softMax within 5 units plus
// powRefErr: in all below 2^-39.9, less than the bound below gives for
// p = 4). Its inputs
// hi and lo are softMax's; only the pows differ. softPowErr propagates:
// the first pow's error E1 moves 1 + y1 (y1 in (0, 1] when the first pow
// is approximated, so 1 + y1 is in [1, 2]) by at most E1 + 3·2^-53
// relative (r2); the second pow of an input moved by r2 moves by at most
// 1.02·inv·r2 (inv <= 64, so inv·r2 < 2^-31) plus powNear's own error at
// both inputs (powRefErr each: the squarings of y <= 64 and the Exp and
// Log of the fractional part, < 2^-45.5), and its own approximation adds
// powFastErr; the product with hi two roundings. A whole exponent is not
// approximated (the same steps as powNear), and arguments out of powNear's
// range go to math.Pow on both sides.
const (
	powFastErr = 0x1p-38 // bound on |fast pow/powNear - 1| at the same x
	powRefErr  = 0x1p-40 // bound on |powNear(x, y)/x^y - 1|, y <= 64
	unitRound  = 0x1p-53 // float64's unit roundoff
)

// fracTable holds the fast pow's tables for one fractional exponent yf:
// scale[k+15] = 2^(k·yf) for k = -15..1, and for the grid points
// g = 1 + i/256 their inverse and g^yf.
type fracTable struct {
	scale [17]float64
	grid  [257]struct{ inv, pow float64 }
}

func newFracTable(yf float64) *fracTable {
	t := &fracTable{}
	for k := range t.scale {
		t.scale[k] = math.Pow(2, float64(k-15)*yf)
	}
	for i := range t.grid {
		g := 1 + float64(i)/256
		t.grid[i].inv, t.grid[i].pow = 1/g, math.Exp(yf*math.Log(g))
	}
	return t
}

// softMaxFast is sp.softMax(a, b) within a relative sp.fastErr, for an sp
// with sp.fast: powNear's steps, the fractional powers from the tables.
func (sp *softPow) softMaxFast(a, b float64) float64 {
	if sp.quartic {
		if v, ok := quarticSoftMax(a, b); ok {
			return v
		}
	}
	hi, lo := a, b
	if lo > hi {
		hi, lo = lo, hi
	}
	if hi <= 0 {
		return 0
	}
	y := sp.p.powFast(lo / hi)
	// 1 + y is in [1, 2] unless y is NaN or negative (lo/hi below 2^-15)
	return hi * sp.inv.powFast(1+y)
}

// powFast is powNear(x, e.y) within the tables' bound: the whole part by
// mulPow, the fractional part from the tables or square roots.
func (e *powExp) powFast(x float64) float64 {
	if !(x >= 0x1p-15 && x <= 2) {
		return math.Pow(x, e.y)
	}
	y := 1.0
	if t := e.tab; t != nil {
		bits := math.Float64bits(x)
		k := int(bits>>52) - (1023 - 15) // x is normal: k in [0, 16]
		i := bits>>44&0xff + bits>>43&1  // the grid point nearest the mantissa
		g := &t.grid[i]
		d := math.Float64frombits(bits&(1<<52-1)|1023<<52)*g.inv - 1
		c := &e.c
		y = t.scale[k] * g.pow * (1 + d*(c[0]+d*(c[1]+d*(c[2]+d*c[3]))))
	} else if e.root != rootNone {
		y = rootPow(x, e.root)
	}
	return mulPow(y, x, e.yi)
}

// rootPow is x^(1/4), x^(1/2) or x^(-1/4) (root) from square roots, which
// are correctly rounded: within 5/2 units of roundoff of the true power.
func rootPow(x float64, root rootKind) float64 {
	switch root {
	case rootQuarter:
		return math.Sqrt(math.Sqrt(x))
	case rootHalf:
		return math.Sqrt(x)
	}
	return 1 / math.Sqrt(math.Sqrt(x))
}

// mulPow is y·x^n by powNear's chain of squarings, the same products in
// the same order (y·x, then ·x², ·x⁴, … for the bits of n from the
// lowest), with the small n written out.
func mulPow(y, x float64, n int) float64 {
	switch n {
	case 0:
		return y
	case 1:
		return y * x
	case 2:
		return y * (x * x)
	case 4:
		x *= x
		return y * (x * x)
	}
	for ; n != 0; n >>= 1 {
		if n&1 == 1 {
			y *= x
		}
		x *= x
	}
	return y
}

// softPowErr is the bound on |softMaxFast/softMax - 1| for the exponents
// p and inv = 1/p (see above), and whether softMaxFast applies: both
// exponents in powNear's range (0 <= y <= 64).
func softPowErr(p, inv *powExp) (float64, bool) {
	if !p.near || !inv.near {
		return 0, false
	}
	var e1, e2 float64
	if p.yf != 0 {
		e1 = powFastErr
	}
	if inv.yf != 0 {
		e2 = powFastErr
	}
	if e1 > 0 {
		r2 := e1 + 3*unitRound
		e2 += 1.02*inv.y*r2 + 2*powRefErr
	}
	return (e2 + 3*unitRound) * (1 + 0x1p-20), true
}
