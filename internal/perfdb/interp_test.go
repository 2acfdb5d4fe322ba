package perfdb

import (
	"math"
	"testing"
)

func TestGEMMRulesAgainstHandComputation(t *testing.T) {
	// Two measured points, m 257 -> 100 and m 512 -> 160; the query m 384.
	c := &curve{x: []float64{257, 512}, y: []float64{100, 160}}
	tests := []struct {
		rule GEMMRule
		m    float64
		want float64
	}{
		{GEMMLinear, 384, 100 + 60*127.0/255},                                           // 129.88
		{GEMMLogLog, 384, 100 * math.Pow(1.6, math.Log(384.0/257)/math.Log(512.0/257))}, // 131.50
		{GEMMHoldLower, 384, 100},
		{GEMMUpper, 384, 160},
		{GEMMNearest, 384, 100}, // 127 from 257, 128 from 512
		{GEMMNearest, 385, 160},
		// m rounds to 384, the points to 320 and 512: a third of the way.
		{GEMMTile64, 384, 120},
		{GEMMTile64, 300, 100}, // the same 64-row tile as 257
		{GEMMTile64, 321, 120}, // the next one, rounded to 384
		// m rounds to 384, so do 257: the lower point's time.
		{GEMMTile128, 384, 100},
		{GEMMTile128, 385, 160},
		// two points: the one-sided tangents are the secant, so the cubic is the line.
		{GEMMMonotoneCubic, 384, 100 + 60*127.0/255},
		// on the grid every rule reads the point.
		{GEMMTile64, 512, 160},
		{GEMMUpper, 257, 100},
	}
	for _, tt := range tests {
		got, ok := c.atRule(tt.m, tt.rule)
		if !ok || !near(got, tt.want) {
			t.Errorf("%v at m %g = %v, %v; want %v", tt.rule, tt.m, got, ok, tt.want)
		}
	}
	for _, m := range []float64{256, 513} {
		if _, ok := c.atRule(m, GEMMTile64); ok {
			t.Errorf("m %g outside [257, 512] read as measured", m)
		}
	}
	// Tile rounding with both points in one tile falls back to linear in m.
	small := &curve{x: []float64{33, 48}, y: []float64{10, 13}}
	if got, _ := small.atRule(38, GEMMTile64); !near(got, 11) {
		t.Errorf("tile-64 within one tile = %v, want 11 (linear)", got)
	}
	// Monotone cubic on (0,0) (1,1) (2,3) at 0.5: tangents 1 (one-sided)
	// and 6/(3/1+3/2) = 4/3 at x 1; Hermite basis at t 0.5:
	// 0.125·1 + 0.5·1 - 0.125·4/3.
	cub := &curve{x: []float64{0, 1, 2}, y: []float64{0, 1, 3}}
	if got, _ := cub.atRule(0.5, GEMMMonotoneCubic); !near(got, 0.125+0.5-0.125*4.0/3) {
		t.Errorf("monotone cubic = %v, want %v", got, 0.125+0.5-0.125*4.0/3)
	}
	if len(GEMMRules) != len(gemmRuleNames) {
		t.Fatalf("%d rules, %d names", len(GEMMRules), len(gemmRuleNames))
	}
}

func TestHoldoutGroups(t *testing.T) {
	got := holdoutGroups([]float64{1, 2, 3, 15, 16, 17, 32, 33, 48, 64, 8192})
	want := [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 6}, {6, 8}, {8, 9}, {9, 10}, {10, 11}}
	if len(got) != len(want) {
		t.Fatalf("groups %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("groups %v, want %v", got, want)
		}
	}
}

func TestGEMMHoldoutAgainstHandComputation(t *testing.T) {
	// One curve (bfloat16, n = k = 1024), times in ms = µs / 1e3:
	// m 1:15 2:12 16:14 17:30 64:40 65:50 128:60. Groups {1} {2} {16,17}
	// {64,65} {128}; the three interior ones are held out in turn.
	db := &DB{System: "syn"}
	for _, p := range [][2]float64{{1, 15}, {2, 12}, {16, 14}, {17, 30}, {64, 40}, {65, 50}, {128, 60}} {
		db.GEMM = append(db.GEMM, GEMMRow{Dtype: "bfloat16", M: int(p[0]), N: 1024, K: 1024, Ms: p[1] / 1e3})
	}
	// Held-out rows: measured µs and, from the rest made non-decreasing
	// from the right, the linear and tile-64 reads (µs).
	want := []struct {
		m, lo, hi             int
		measured, lin, tile64 float64
	}{
		// rest 1:15 16:14 ... -> 1:14 16:14: flat.
		{2, 1, 16, 12, 14, 14},
		// rest 1:15 2:12 64:40 -> 2:12; 64 and 2 share a 64-row tile, so tile-64 is linear.
		{16, 2, 64, 14, 12 + 28*14.0/62, 12 + 28*14.0/62},
		{17, 2, 64, 30, 12 + 28*15.0/62, 12 + 28*15.0/62},
		// rest 17:30 128:60: 17 and 64 are one tile (30), 65 the next (60).
		{64, 17, 128, 40, 30 + 30*47.0/111, 30},
		{65, 17, 128, 50, 30 + 30*48.0/111, 60},
	}
	got := GEMMHoldout(db)
	if len(got) != len(want) {
		t.Fatalf("%d rows held out, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.M != w.m || g.Lo != w.lo || g.Hi != w.hi || !near(g.Measured, w.measured*1e3) ||
			!near(g.Pred[GEMMLinear], w.lin*1e3) || !near(g.Pred[GEMMTile64], w.tile64*1e3) {
			t.Errorf("row %d: m %d between %d and %d, measured %v, linear %v, tile-64 %v; want %+v",
				i, g.M, g.Lo, g.Hi, g.Measured, g.Pred[GEMMLinear], g.Pred[GEMMTile64], w)
		}
	}
}

// TestKernelsGEMMBetweenGridPoints: a GEMM measured at m 257 (0.100 ms)
// and 512 (0.160 ms) is read at m 384 by tile-64 rounding: 257 runs five
// 64-row tiles (rounds to 320), 384 six, 512 eight, so a third of the way,
// 100 + 60/3 = 120 µs (linear in m would read 100 + 60·127/255 = 129.88
// µs); m 300 runs five tiles, as 257 does: 100 µs. No bandwidth is
// known, so no streaming floor applies.
func TestKernelsGEMMBetweenGridPoints(t *testing.T) {
	db := &DB{System: "syn"}
	for _, p := range [][2]float64{{257, 0.100}, {512, 0.160}} {
		db.GEMM = append(db.GEMM, GEMMRow{Dtype: "bfloat16", M: int(p[0]), N: 2048, K: 2048, Ms: p[1]})
	}
	k, err := db.Kernels(Shape{Heads: 1, KVHeads: 1, HeadDim: 64})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		m    int
		want float64
	}{{384, 120e3}, {300, 100e3}, {321, 120e3}, {512, 160e3}} {
		got, ok := k.GEMM(false, c.m, 2048, 2048)
		if !ok || !near(got, c.want) {
			t.Errorf("GEMM at m %d = %v ns, %v; want %v", c.m, got, ok, c.want)
		}
	}
}

// TestGEMMHoldoutAcrossN: at m 1 and k 1024, n 1024, 2048 and 4096 take
// 10, 30 and 90 µs. Holding out n 2048: linear reads 10 + 80·1024/3072
// = 36.67 µs, log-log the power law 10·9^(1/2) = 30 µs (exact here).
// Along k the rows have one k each, so nothing is held out.
func TestGEMMHoldoutAcrossN(t *testing.T) {
	db := &DB{System: "syn"}
	for _, p := range [][2]float64{{1024, 10}, {2048, 30}, {4096, 90}} {
		db.GEMM = append(db.GEMM, GEMMRow{Dtype: "bfloat16", M: 1, N: int(p[0]), K: 1024, Ms: p[1] / 1e3})
	}
	got := GEMMHoldoutAcross(db, AxisN)
	if len(got) != 1 {
		t.Fatalf("%d rows held out, want 1: %+v", len(got), got)
	}
	h := got[0]
	if h.M != 1 || h.N != 2048 || h.K != 1024 || h.Lo != 1024 || h.Hi != 4096 || !near(h.Measured, 30e3) ||
		!near(h.Pred[GEMMLinear], (10+80.0/3)*1e3) || !near(h.Pred[GEMMLogLog], 30e3) {
		t.Errorf("held out %+v", h)
	}
	if k := GEMMHoldoutAcross(db, AxisK); len(k) != 0 {
		t.Errorf("along k: %+v, want none", k)
	}
}
