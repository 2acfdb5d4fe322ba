package perf

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestBracket(t *testing.T) {
	xs := []float64{0, 16, 32, 64}
	tests := []struct {
		x      float64
		lo, hi int
		t      float64
	}{
		{x: -5, lo: 0, hi: 0, t: 0},     // below: clamp
		{x: 0, lo: 0, hi: 0, t: 0},      // first point: clamp branch, exact
		{x: 8, lo: 0, hi: 1, t: 0.5},    // inside
		{x: 16, lo: 1, hi: 2, t: 0},     // grid point: exact
		{x: 48, lo: 2, hi: 3, t: 0.5},   // inside
		{x: 64, lo: 2, hi: 3, t: 1},     // last point: top segment at t=1
		{x: 128, lo: 2, hi: 3, t: 3},    // above: extrapolate from (32, 64)
		{x: math.NaN(), lo: 0, hi: 0},   // NaN clamps, never panics
		{x: math.Inf(-1), lo: 0, hi: 0}, // -Inf clamps
	}
	for _, tc := range tests {
		lo, hi, tt := bracket(xs, tc.x)
		if lo != tc.lo || hi != tc.hi || tt != tc.t {
			t.Errorf("bracket(%v) = %d,%d,%v want %d,%d,%v", tc.x, lo, hi, tt, tc.lo, tc.hi, tc.t)
		}
	}
	if lo, hi, tt := bracket([]float64{7}, 100); lo != 0 || hi != 0 || tt != 0 {
		t.Errorf("one-sample axis must clamp, got %d,%d,%v", lo, hi, tt)
	}
}

func TestPWL(t *testing.T) {
	f := pwl{xs: []float64{1, 2, 4}, ys: []float64{10, 20, 30}}
	tests := []struct{ x, want float64 }{
		{0, 10}, // clamp below
		{1, 10}, // grid
		{1.5, 15},
		{2, 20}, // grid
		{3, 25}, // 20 + 0.5*(30-20)
		{4, 30}, // grid
		{8, 50}, // extrapolate: slope (30-20)/2 = 5, 30 + 4*5
	}
	for _, tc := range tests {
		if got := f.at(tc.x); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("at(%v) = %v want %v", tc.x, got, tc.want)
		}
	}
}

func TestNewPWLDuplicate(t *testing.T) {
	_, err := newPWL("x.csv", "tokens", []point{{x: 1, y: 1, line: 2}, {x: 1, y: 2, line: 5}})
	if err == nil || err.Error() != "x.csv:5: duplicate tokens at 1 (first on line 2)" {
		t.Fatalf("err = %v", err)
	}
}

// sumPWL must equal the weighted sum of its terms everywhere, including
// below and above every grid, when the grids differ.
func TestSumPWLExact(t *testing.T) {
	a := pwl{xs: []float64{1, 4}, ys: []float64{10, 40}}
	b := pwl{xs: []float64{1, 2, 4}, ys: []float64{1, 2, 3}}
	c := pwl{xs: []float64{2}, ys: []float64{7}}
	d := pwl{xs: []float64{3, 5, 100}, ys: []float64{1, 9, 2}}
	terms := []weighted{{1, &a}, {2.5, &b}, {1, &c}, {3, &d}}
	s := sumPWL(terms)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		x := r.Float64()*300 - 20
		if i < 120 {
			x = float64(i) // integers, grid points included
		}
		want := 0.0
		for _, tm := range terms {
			want += tm.w * tm.f.at(x)
		}
		if got := s.at(x); math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Fatalf("sum at %v = %v want %v", x, got, want)
		}
	}
	if z := sumPWL(nil); z.at(5) != 0 {
		t.Fatalf("empty sum = %v", z.at(5))
	}
}

func TestDenseSliceFillsRaggedGrid(t *testing.T) {
	// kp=0 row: kvd 16, 32, 64; kp=32 row: kvd 16, 64 (lacks 32);
	// kp=64 row: kvd 32, 64 (lacks 16, which is below its range).
	s := denseSlice(map[[2]float64]float64{
		{0, 16}: 10, {0, 32}: 20, {0, 64}: 40,
		{32, 16}: 30, {32, 64}: 70,
		{64, 32}: 60, {64, 64}: 90,
	})
	want := [][]float64{
		{10, 20, 40},
		// (32,32): bracketed by its row: 30 + (16/48)*(70-30) = 43.333…
		{30, 30 + 40.0/3, 70},
		// (64,16): not in its row's range; its kvd=16 column (kp 0, 32)
		// does not bracket kp=64 either, so the row extrapolation rule
		// clamps to the row's first sample, 60.
		{60, 60, 90},
	}
	for i := range want {
		for j := range want[i] {
			if got := s.t[i*3+j]; math.Abs(got-want[i][j]) > 1e-12 {
				t.Errorf("cell (%v,%v) = %v want %v", s.kp[i], s.kvd[j], got, want[i][j])
			}
		}
	}
	// A gap bracketed only by its column: kp=32 lacks kvd=16 below its
	// row's range, column kvd=16 has kp 0 (10) and 64 (50): 10 + 0.5*40 = 30.
	s2 := denseSlice(map[[2]float64]float64{
		{0, 16}: 10, {0, 64}: 40,
		{32, 64}: 70,
		{64, 16}: 50, {64, 64}: 100,
	})
	if got := s2.t[1*2+0]; got != 30 {
		t.Errorf("column fill = %v want 30", got)
	}
}
