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
