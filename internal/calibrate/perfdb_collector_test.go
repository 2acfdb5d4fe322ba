package calibrate

import (
	"math"
	"testing"

	"github.com/servesim/servesim/internal/perfdb"
)

// TestNativeQuantByHand checks the collection's extra quantisation cost
// against hand sums: 24 bytes per element at L40S's effective memory rate
// (864 GB/s × 0.7733 = 668.1312 GB/s) for the part of the fp32 copy
// (4·M·K bytes) beyond a 96 MB cache, plus the fixed 4 µs.
func TestNativeQuantByHand(t *testing.T) {
	q := nativeQuant{fixedNs: 4000, l2Bytes: 96e6}
	rate := 864e9 * 0.7733
	for _, c := range []struct {
		m, k float64
		want float64 // ns
	}{
		// 4·8192·4096 = 134 MB > 96 MB: all missed;
		// 4000 + 24·33,554,432 / 668.1312e9 s = 1,209,311.7 ns.
		{8192, 4096, 1209311.7},
		// 4·1024·4096 = 16.8 MB: 0.174763 of it missed;
		// 4000 + 24·4,194,304 / 668.1312e9 s × 0.174763 = 30,330.4 ns.
		{1024, 4096, 30330.4},
		{0, 4096, 4000},
	} {
		if got := q.ns(c.m*c.k, rate); math.Abs(got-c.want) > 0.1 {
			t.Errorf("M %g K %g: %.1f ns, want %.1f", c.m, c.k, got, c.want)
		}
	}
}

// TestNativeQuantTables: only the vLLM 0.14 collections carry the cost,
// and only their per-tensor fp8 rows get it.
func TestNativeQuantTables(t *testing.T) {
	for sys, want := range map[string]bool{"l40s": true, "a100_sxm": true, "h100_sxm": false, "rtx_pro_6000_server": false} {
		db, err := perfdb.Open(perfdb.Embedded(), sys, "vllm", "")
		if err != nil {
			t.Fatal(err)
		}
		if got := nativeQuantTables(db); got != want {
			t.Errorf("%s: %v, want %v", sys, got, want)
		}
		if sys != "l40s" {
			continue
		}
		acc, err := AcceleratorOfSystem(sys)
		if err != nil {
			t.Fatal(err)
		}
		in, err := NewPerfDBInput(db, acc)
		if err != nil {
			t.Fatal(err)
		}
		for tb, rows := range in.tables {
			for _, s := range rows {
				if (s.coll.native != nil) != (tb == TableGEMMFP8) {
					t.Fatalf("%s row %v: native %v", tb, s.mkn, s.coll.native != nil)
				}
			}
		}
	}
}

// TestEagerIssueByHand: a call the host issues in 120 µs measures the
// host's time plus a sixth of a faster GPU's (120 + 30/6 = 125 µs), or
// the GPU's time plus a sixth of the host's (600 + 120/6 = 620 µs).
func TestEagerIssueByHand(t *testing.T) {
	e := eagerIssue{hostNs: 120e3}
	for gpu, want := range map[float64]float64{30e3: 125e3, 600e3: 620e3, 0: 120e3} {
		if got := e.ns(gpu); math.Abs(got-want) > 1e-6 {
			t.Errorf("gpu %.0f ns: %.0f ns, want %.0f", gpu, got, want)
		}
	}
}

// TestEagerBlockRows: the block fp8 rows of the vLLM 0.19.0 collections
// are checked with the host issue time, fitted on them: about 123 µs a
// call on rtx_pro_6000_server, whose smallest checked block fp8 rows (M ≤ 64,
// N·K ≤ 4 Mi) all take 114–163 µs whatever their shape, and nothing on
// h100_sxm, whose fitted fixed cost of the layer already covers its
// 9–25 µs.
func TestEagerBlockRows(t *testing.T) {
	b, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for sys, want := range map[string][2]float64{"rtx_pro_6000_server": {110e3, 135e3}, "h100_sxm": {0, 1e3}} {
		db, err := perfdb.Open(perfdb.Embedded(), sys, "vllm", "")
		if err != nil {
			t.Fatal(err)
		}
		acc, err := AcceleratorOfSystem(sys)
		if err != nil {
			t.Fatal(err)
		}
		in, err := NewPerfDBInput(db, acc)
		if err != nil {
			t.Fatal(err)
		}
		if !eagerBlockTables(db) || in.eager == nil {
			t.Fatalf("%s: block fp8 rows not marked eager", sys)
		}
		en, _ := b.Entry(acc.Name)
		if _, err := CheckPerfDB(en.Efficiency(), in); err != nil {
			t.Fatal(err)
		}
		if h := in.eager.hostNs; h < want[0] || h > want[1] {
			t.Errorf("%s: host issue %.0f ns, want %.0f..%.0f", sys, h, want[0], want[1])
		}
		// The smallest checked rows (M ≤ 64, N·K ≤ 4 Mi): a floor, whatever
		// the shape.
		lo, hi := math.Inf(1), 0.0
		for _, r := range in.tables[TableGEMMFP8Block] {
			if r.mkn[0] <= 64 && r.mkn[1]*r.mkn[2] <= 4<<20 {
				lo, hi = math.Min(lo, r.p.Ns/1e3), math.Max(hi, r.p.Ns/1e3)
			}
		}
		floor := map[string][2]float64{"rtx_pro_6000_server": {114, 163}, "h100_sxm": {9, 25}}[sys]
		if lo < floor[0] || hi > floor[1] {
			t.Errorf("%s: smallest block fp8 rows %.1f..%.1f µs, want within %.0f..%.0f", sys, lo, hi, floor[0], floor[1])
		}
	}
}
