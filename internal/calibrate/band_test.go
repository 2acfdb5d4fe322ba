package calibrate

import (
	"math"
	"testing"

	"github.com/servesim/servesim/internal/perf"
)

func TestNewBandByHand(t *testing.T) {
	// 0..100 in steps of 1 (as fractions): the 5th and 95th percentiles by
	// linear interpolation are 0.05 and 0.95.
	res := make([]float64, 101)
	for i := range res {
		res[i] = float64(100-i) / 100
	}
	b, err := NewBand(res, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(b.Lo-0.05) > 1e-12 || math.Abs(b.Hi-0.95) > 1e-12 || b.Rows != 101 {
		t.Fatalf("band %+v", b)
	}
	if got := b.Inside(res); math.Abs(got-91.0/101) > 1e-12 { // 0.05..0.95 inclusive: 91 values
		t.Fatalf("inside %v, want 91/101", got)
	}
	// 0.00 .. 0.04 lie below (5 of 101), 0.96 .. 1.00 above (5).
	if below, above := b.Outside(res); math.Abs(below-5.0/101) > 1e-12 || math.Abs(above-5.0/101) > 1e-12 {
		t.Fatalf("outside %v %v, want 5/101 each", below, above)
	}
	fast, slow := b.StepScales()
	if math.Abs(fast-1/1.95) > 1e-12 || math.Abs(slow-1/1.05) > 1e-12 {
		t.Fatalf("scales %v %v", fast, slow)
	}
	for _, c := range []struct {
		res []float64
		cov float64
	}{{nil, 0.9}, {[]float64{1}, 0}, {[]float64{1}, 1}} {
		if _, err := NewBand(c.res, c.cov); err == nil {
			t.Errorf("NewBand(%v, %v): no error", c.res, c.cov)
		}
	}
}

// A step residual is the per-layer ops' predicted sum over their measured
// sum at one token count; per-step ops and per-sequence rows stay out.
func TestStepResidualsByHand(t *testing.T) {
	m := perf.RooflineModel{Layers: 2, Hidden: 1024, Intermediate: 4096, Heads: 8, KVHeads: 8, Vocab: 1000}
	h := perf.RooflineHW{PeakFLOPS: 100e12, MemBandwidth: 1e12}
	eff := perf.DefaultEfficiency
	r, err := perf.NewRoofline(m, h, eff, 1)
	if err != nil {
		t.Fatal(err)
	}
	b := perf.Batch{PrefillTokens: 64, PrefillSeqs: 1}
	pq, pd := r.OpNs(perf.OpQKVProj, &b), r.OpNs(perf.OpDownProj, &b)
	tb := &Tables{Input: Input{Model: m, HW: h, TP: 1, Points: []perf.Point{
		{Category: perf.CategoryDense, Op: perf.OpQKVProj, X: 64, Ns: 1000},
		{Category: perf.CategoryDense, Op: perf.OpDownProj, X: 64, Ns: 3000},
		{Category: perf.CategoryDense, Op: perf.OpEmbedding, X: 64, Ns: 1e9},       // per step: left out
		{Category: perf.CategoryPerSequence, Op: perf.OpLMHead, X: 64, Ns: 1e9},    // left out
		{Category: perf.CategoryAttention, Op: perf.OpAttention, PC: 64, Ns: 2000}, // one residual
	}}}
	res, err := StepResiduals(eff, tb)
	if err != nil {
		t.Fatal(err)
	}
	pa := r.OpNs(perf.OpAttention, &perf.Batch{PrefillTokens: 64, PrefillSeqs: 1})
	want := []float64{pa/2000 - 1, (pq+pd)/4000 - 1}
	if len(res) != 2 || math.Abs(res[0]-want[0]) > 1e-12 || math.Abs(res[1]-want[1]) > 1e-12 {
		t.Fatalf("residuals %v, want %v", res, want)
	}
}

// BandCoverage pools the training tables' step residuals into the band and
// counts the held-out table's residuals inside it. By hand: two training
// tables whose attention rows give residuals spread evenly, and a held-out
// table with residuals known from the roofline's own prediction.
func TestBandCoverageByHand(t *testing.T) {
	eff := perf.DefaultEfficiency
	table := func(errs ...float64) *Tables { return residualTable(t, "", "", errs...) }
	// Training residuals -0.50 .. +0.50 in steps of 0.01 over two tables:
	// the band is [-0.45, +0.45].
	a, b := halves()
	held := table(-0.6, -0.3, 0, 0.2, 0.44, 0.46, 0.9, 0.1)
	band, covered, steps, err := BandCoverage(eff, []*Tables{table(a...), table(b...)}, held)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(band.Lo+0.45) > 1e-9 || math.Abs(band.Hi-0.45) > 1e-9 || band.Rows != 101 {
		t.Fatalf("band %+v, want -0.45 .. +0.45 of 101 residuals", band)
	}
	if steps != 8 || covered != 5.0/8 { // -0.3, 0, 0.2, 0.44, 0.1 inside
		t.Fatalf("covered %v of %d, want 5/8 of 8", covered, steps)
	}
}

// residualTable is a table of attention rows at pc 64, on a small roofline
// model and device with the default efficiency, whose step residuals are
// errs: the measured time is pred/(1+e).
func residualTable(t *testing.T, acc, model string, errs ...float64) *Tables {
	t.Helper()
	m := perf.RooflineModel{Layers: 2, Hidden: 1024, Intermediate: 4096, Heads: 8, KVHeads: 8, Vocab: 1000}
	h := perf.RooflineHW{PeakFLOPS: 100e12, MemBandwidth: 1e12}
	r, err := perf.NewRoofline(m, h, perf.DefaultEfficiency, 1)
	if err != nil {
		t.Fatal(err)
	}
	pred := r.OpNs(perf.OpAttention, &perf.Batch{PrefillTokens: 64, PrefillSeqs: 1})
	tb := &Tables{Input: Input{Model: m, HW: h, TP: 1}, Accelerator: acc, ModelName: model}
	for _, e := range errs {
		tb.Points = append(tb.Points, perf.Point{Category: perf.CategoryAttention, Op: perf.OpAttention, PC: 64, Ns: pred / (1 + e)})
	}
	return tb
}

// halves splits the residuals -0.50 .. +0.50 in steps of 0.01 between two
// sets: the even hundredths and the odd ones.
func halves() (even, odd []float64) {
	for i := -50; i <= 50; i++ {
		if i%2 == 0 {
			even = append(even, float64(i)/100)
		} else {
			odd = append(odd, float64(i)/100)
		}
	}
	return even, odd
}
