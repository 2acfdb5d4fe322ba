package perf

import "math"

// powNear is math.Pow(x, y), bit for bit, for 2^-15 <= x <= 2 and
// 0 <= y <= 64 (y != 0.5), without math.Pow's special-case tests and its
// mantissa-exponent bookkeeping; anything else goes to math.Pow. The
// roofline's softMax runs it twice per call, and a step of the roofline
// predictor calls softMax for attention twice.
//
// It repeats math.Pow's own steps: the fractional part yf of y (moved to
// (-0.5, 0.5] by taking one more whole power when above 0.5) as
// Exp(yf·Log(x)), then the whole part by successive squarings. Where
// math.Pow squares x's mantissa and keeps its exponent apart, this squares
// x itself; in the range above every intermediate value is a normal
// number, so each product rounds the same significand and the results are
// identical (TestPowNearMatchesPow).
func powNear(x, y float64) float64 {
	if !(x >= 0x1p-15 && x <= 2 && y >= 0 && y <= 64) || y == 0.5 {
		return math.Pow(x, y)
	}
	yi, yf := math.Modf(y)
	a := 1.0
	if yf != 0 {
		if yf > 0.5 {
			yf--
			yi++
		}
		a = math.Exp(yf * math.Log(x))
	}
	for i := int(yi); i != 0; i >>= 1 {
		if i&1 == 1 {
			a *= x
		}
		x *= x
	}
	return a
}

// powExp is an exponent y of powNear, with y's split into its
// whole and fractional parts (math.Modf and the move to (-0.5, 0.5]) done
// once instead of at every call: the soft maximum of the roofline's
// per-step attention uses two fixed exponents.
type powExp struct {
	y    float64
	near bool    // y is in powNear's range
	yi   int     // whole part, after the move
	yf   float64 // fractional part, after the move
	// c are the binomial coefficients C(yf, k), k = 1..4, and tab the
	// tables of softMaxFast's fractional power (nil when yf is 0 or
	// root is set).
	c   [4]float64
	tab *fracTable
	// root says that softMaxFast takes x^yf from square roots instead:
	// rootQuarter for yf = 1/4, rootHalf for 1/2, rootNegQuarter for -1/4.
	root rootKind
}

// rootKind is a fractional exponent softMaxFast takes with square roots.
type rootKind uint8

const (
	rootNone       rootKind = iota
	rootQuarter             // x^(1/4) = sqrt(sqrt(x))
	rootHalf                // x^(1/2) = sqrt(x)
	rootNegQuarter          // x^(-1/4) = 1/sqrt(sqrt(x))
)

func newPowExp(y float64) powExp {
	e := powExp{y: y, near: y >= 0 && y <= 64 && y != 0.5}
	if e.near {
		yi, yf := math.Modf(y)
		if yf != 0 && yf > 0.5 {
			yf--
			yi++
		}
		e.yi, e.yf = int(yi), yf
		b := 1.0
		for k := range e.c {
			b *= (yf - float64(k)) / float64(k+1)
			e.c[k] = b
		}
		switch yf {
		case 0:
		case 0.25:
			e.root = rootQuarter
		case 0.5:
			e.root = rootHalf
		case -0.25:
			e.root = rootNegQuarter
		default:
			e.tab = newFracTable(yf)
		}
	}
	return e
}

// softPow holds softMax's two exponents for one invP: p = 1/invP and invP,
// and, when the fast soft maximum (softMaxFast) applies to them, a bound
// on its relative distance from softMax.
type softPow struct {
	p, inv powExp
	// fastErr bounds |softMaxFast/softMax - 1| (softPowErr); fast says
	// softMaxFast may be used at all.
	fastErr float64
	fast    bool
	// quartic says p = 4 and invP = 1/4 (the calibrations' attention
	// sharpness): softMaxFast is then quarticSoftMax where it applies.
	quartic bool
}

func newSoftPow(invP float64) softPow {
	sp := softPow{p: newPowExp(1 / invP), inv: newPowExp(invP)}
	sp.fastErr, sp.fast = softPowErr(&sp.p, &sp.inv)
	sp.quartic = sp.fast && sp.p.yi == 4 && sp.p.yf == 0 && sp.inv.yi == 0 && sp.inv.root == rootQuarter
	return sp
}

// softMax is softMax(a, b, invP) for the invP sp was made for, bit for
// bit: hi·pow(1 + pow(lo/hi, p), invP), each pow powNear's steps with
// the exponent split beforehand (written out twice rather than called:
// the roofline's decode attention runs it twice a step).
func (sp *softPow) softMax(a, b float64) float64 {
	hi, lo := a, b
	if lo > hi {
		hi, lo = lo, hi
	}
	if hi <= 0 {
		return 0
	}
	x, e := lo/hi, &sp.p
	var y float64
	if x >= 0x1p-15 && x <= 2 && e.near {
		y = 1.0
		if e.yf != 0 {
			y = math.Exp(e.yf * math.Log(x))
		}
		for i := e.yi; i != 0; i >>= 1 {
			if i&1 == 1 {
				y *= x
			}
			x *= x
		}
	} else {
		y = math.Pow(x, e.y)
	}
	x, e = 1+y, &sp.inv
	if x >= 0x1p-15 && x <= 2 && e.near {
		y = 1.0
		if e.yf != 0 {
			y = math.Exp(e.yf * math.Log(x))
		}
		for i := e.yi; i != 0; i >>= 1 {
			if i&1 == 1 {
				y *= x
			}
			x *= x
		}
	} else {
		y = math.Pow(x, e.y)
	}
	return hi * y
}
