package perf

import "testing"

type fixedNs int64

func (f fixedNs) StepTime(*Batch) int64 { return int64(f) }

func TestWithFormatScaling(t *testing.T) {
	b := &Batch{NumDecode: 1, DecodeKVSum: 10, DecodeKVMax: 10, DecodeKVMin: 10}
	for _, c := range []struct {
		m, r, g fixedNs
		want    int64
	}{
		{1000, 400, 300, 750}, // 1000 x 300/400
		{1000, 400, 400, 1000},
		{1000, 0, 300, 1000}, // no reference: measured time kept
		{0, 400, 300, 0},
		{999, 3, 1, 333},
	} {
		if got := WithFormatScaling(c.m, c.r, c.g).StepTime(b); got != c.want {
			t.Errorf("measured %d ref %d target %d: %d ns, want %d", c.m, c.r, c.g, got, c.want)
		}
	}
	// With real rooflines: bf16 tables scaled to fp8 weights follow the
	// roofline's fp8/bf16 ratio of each step.
	h100 := RooflineHW{PeakFLOPS: 989.5e12, MemBandwidth: 3350e9}
	fp8HW := h100
	fp8HW.QuantPeakFLOPS = 1979e12
	fp8 := llama8B
	fp8.WeightBytes = 1
	ref, _ := NewRoofline(llama8B, h100, DefaultEfficiency, 1)
	tgt, _ := NewRoofline(fp8, fp8HW, DefaultEfficiency, 1)
	s := WithFormatScaling(fixedNs(10_000_000), ref, tgt)
	got := float64(s.StepTime(b)) / 1e7
	want := float64(tgt.StepTime(b)) / float64(ref.StepTime(b))
	if got < want-1e-6 || got > want+1e-6 || want > 0.7 || want < 0.5 {
		t.Errorf("scaled/measured = %.6f, want the roofline ratio %.6f (0.5-0.7 for a one-token decode: launches, attention and lm_head do not shrink)", got, want)
	}
}
