package perf

import "math"

// roundNs is clampNs(v): v rounded half away from zero, 0 when not
// positive (NaN too) and math.MaxInt64 from 2^63 up, without math.Round.
// Below 2^63, int64(v) truncates v, v - float64(t) is v's fraction
// exactly (t < 2^53 converts exactly and the difference of v and its
// integer part is representable; from 2^52 up v is whole and the
// fraction is 0), and rounding away from zero adds one when the fraction
// is at least one half.
func roundNs(v float64) int64 {
	if !(v > 0) {
		return 0
	}
	if v >= math.MaxInt64 { // 2^63: Round(v) >= 2^63 exactly when v is
		return math.MaxInt64
	}
	t := int64(v)
	if v-float64(t) >= 0.5 {
		t++
	}
	return t
}
