package calibrate

import (
	"errors"
	"io/fs"
	"math"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/perf"
)

// Leave-one-out by hand, by accelerator and by model (both hold each group
// out in turn). A and B hold 0.00 .. 1.00 in steps of 0.01 (101 residuals
// each), C 101 residuals of 2.
//   - C held out: the pool A+B holds each value twice (202); the 5th
//     percentile sits at position 0.05*201 = 10.05 between two 0.05s, the
//     95th at 190.95 between two 0.95s: band [0.05, 0.95], no C inside.
//   - A held out: the pool is B then 101 twos; position 10.05 lies between
//     0.10 and 0.11 (0.1005), position 190.95 among the twos (2): A's
//     0.11 .. 1.00 lie inside, 90 of 101.
func TestLeaveOneOutByHand(t *testing.T) {
	ramp := make([]float64, 101)
	twos := make([]float64, 101)
	for i := range ramp {
		ramp[i], twos[i] = float64(i)/100, 2
	}
	want := []struct {
		held, from string
		lo, hi     float64
		covered    float64
	}{
		{"A", "B, C", 0.1005, 2, 90.0 / 101},
		{"B", "A, C", 0.1005, 2, 90.0 / 101},
		{"C", "A, B", 0.05, 0.95, 0},
	}
	type group struct {
		name string
		res  []float64
	}
	for _, tc := range []struct {
		by  string
		run func([]group) ([]LOAOResult, error)
		// the errors of one group, and of a group without residuals
		one, empty string
	}{
		{"accelerator", func(gs []group) ([]LOAOResult, error) {
			var in []AcceleratorResiduals
			for _, g := range gs {
				in = append(in, AcceleratorResiduals{g.name, g.res})
			}
			return LeaveOneAccelerator(in)
		}, "needs the tables of two accelerators or more besides the calibration's own (have 1)", "leave-one-accelerator-out: B has no step residuals"},
		{"model", func(gs []group) ([]LOAOResult, error) {
			var in []ModelResiduals
			for _, g := range gs {
				in = append(in, ModelResiduals{g.name, g.res})
			}
			return LeaveOneModel(in)
		}, "needs the tables of two models or more (have 1)", "leave-one-model-out: B has no step residuals"},
	} {
		got, err := tc.run([]group{{"A", ramp}, {"B", ramp}, {"C", twos}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("by %s: %d results", tc.by, len(got))
		}
		for i, w := range want {
			g := got[i]
			if g.HeldOut != w.held || strings.Join(g.From, ", ") != w.from || g.Steps != 101 || g.Band.Rows != 202 {
				t.Errorf("by %s, %d: %+v", tc.by, i, g)
			}
			if math.Abs(g.Band.Lo-w.lo) > 1e-12 || math.Abs(g.Band.Hi-w.hi) > 1e-12 || math.Abs(g.Covered-w.covered) > 1e-12 {
				t.Errorf("by %s, held out %s: band %.4f .. %.4f inside %.4f, want %.4f .. %.4f inside %.4f", tc.by, w.held, g.Band.Lo, g.Band.Hi, g.Covered, w.lo, w.hi, w.covered)
			}
		}
		if _, err := tc.run([]group{{"A", ramp}}); err == nil || !strings.Contains(err.Error(), tc.one) {
			t.Errorf("by %s, one group: error %v, want %q", tc.by, err, tc.one)
		}
		if _, err := tc.run([]group{{"A", ramp}, {"B", nil}}); err == nil || !strings.Contains(err.Error(), tc.empty) {
			t.Errorf("by %s, a group without residuals: error %v, want %q", tc.by, err, tc.empty)
		}
	}
}

// The transfer band pools the residuals of the tables of accelerators that
// are neither the lender nor the target, and says so in its label.
func TestTransferBandByHand(t *testing.T) {
	eff := perf.DefaultEfficiency
	table := func(acc string, errs ...float64) *Tables { return residualTable(t, acc, "", errs...) }
	// Z and W give -0.50 .. +0.50 in steps of 0.01 between them and a
	// second Z table one more 0 (102 residuals, two zeros at positions 50
	// and 51). The 5th percentile sits at position 0.05*101 = 5.05, between
	// -0.45 and -0.44: -0.4495; the 95th at 95.95, between 0.44 and 0.45:
	// +0.4495. The lender's and the target's tables (far off) stay out.
	z, w := halves()
	ts := []*Tables{table("X", 5, 5), table("Z", z...), table("Y", -0.9), table("W", w...), table("Z", 0)}
	b, err := TransferBand(eff, "X", "Y", ts)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(b.Lo+0.4495) > 1e-9 || math.Abs(b.Hi-0.4495) > 1e-9 || b.Rows != 102 {
		t.Fatalf("band %+v, want -0.4495 .. +0.4495 of 102 residuals", b)
	}
	if want := "transfer band: calibration of X lent to Y, band from tables of Z, W"; b.Label != want || !strings.HasPrefix(b.String(), want+": step error -44.9% .. +44.9% (90% nominal, 102 residuals)") {
		t.Errorf("label %q / %q", b.Label, b.String())
	}
	if _, err := TransferBand(eff, "X", "Y", ts[:1]); err == nil || !strings.Contains(err.Error(), "no measured tables of a third accelerator") {
		t.Errorf("error %v", err)
	}
	groups, err := GroupResiduals(eff, "X", ts)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 3 || groups[0].Accelerator != "Z" || len(groups[0].Residuals) != 52 || groups[1].Accelerator != "Y" || groups[2].Accelerator != "W" {
		t.Errorf("groups %+v", groups)
	}
}

// The embedded transfer band of the calibration an uncalibrated accelerator
// borrows: the RTX PRO 6000 calibration on the RTX 4090's tables, the only
// embedded tables of another accelerator. Recomputed from the bundle.
func TestEmbeddedTransferBand(t *testing.T) {
	root, err := fs.Sub(assets.FS(), "profiles")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := EmbeddedTables(root, "RTXPRO6000")
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].Accelerator != "RTX4090" {
		t.Fatalf("embedded tables of other accelerators: %d", len(ts))
	}
	file, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	lender, ok := file.Fallback()
	if !ok || lender != "RTXPRO6000" {
		t.Fatalf("fallback %q", lender)
	}
	en, _ := file.Entry(lender)
	b, err := TransferBand(en.Efficiency(), lender, "H100", ts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := StepResiduals(en.Efficiency(), ts[0])
	if err != nil {
		t.Fatal(err)
	}
	want, _ := NewBand(res, 0.9)
	if b.Lo != want.Lo || b.Hi != want.Hi || b.Rows != want.Rows {
		t.Errorf("band %+v, want %+v", b, want)
	}
	if b.Label != "transfer band: calibration of RTXPRO6000 lent to H100, band from tables of RTX4090" {
		t.Errorf("label %q", b.Label)
	}
	// It is far wider than the lender's band on its own tables (about
	// -25 % .. +15 %), which held 33.6 % of these steps.
	if !(b.Hi > 0.5 && b.Lo < -0.1) {
		t.Errorf("transfer band %+v: expected the RTX 4090's slow-predicted attention to widen the high end", b)
	}
}

// AcceleratorTables takes the accelerator name literally: a name holding
// glob metacharacters matches only a folder of that very name. Every
// bundle here has an unreadable meta.yaml, so a match shows as an error
// naming the bundle it reached, and no match as no tables and no error.
func TestAcceleratorTablesLiteralName(t *testing.T) {
	root := fstest.MapFS{}
	for _, acc := range []string{"H100", "H200", "A*", `B\`, "[C]"} {
		root[acc+"/org/model/bf16/meta.yaml"] = &fstest.MapFile{Data: []byte("not: [yaml")}
	}
	for _, c := range []struct {
		acc     string
		reached string // the bundle whose load fails; "" for none
	}{
		{"H100", "H100/org/model/bf16"},
		{"H*", ""},
		{"H?00", ""},
		{"H[12]00", ""},
		{"*", ""},
		{"A*", "A*/org/model/bf16"},
		{`B\`, `B\/org/model/bf16`},
		{"[C]", "[C]/org/model/bf16"},
		{"C", ""},
		{"[", ""},
	} {
		t.Run(c.acc, func(t *testing.T) {
			ts, err := AcceleratorTables(root, c.acc)
			if c.reached == "" {
				if err != nil || len(ts) != 0 {
					t.Fatalf("%d tables, error %v; want none", len(ts), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "embedded bundle "+c.reached+":") {
				t.Fatalf("error %v, want one naming %s", err, c.reached)
			}
		})
	}
	for _, bad := range []string{"", "a/b", ".", ".."} {
		if _, err := AcceleratorTables(root, bad); !errors.Is(err, ErrAcceleratorName) {
			t.Errorf("%q: error %v, want ErrAcceleratorName", bad, err)
		}
	}
}
