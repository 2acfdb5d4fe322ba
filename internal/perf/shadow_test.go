package perf

import "testing"

type fixedPred int64

func (f fixedPred) StepTime(*Batch) int64 { return int64(f) }

// TestWithShadow: the simulation gets p's time, the recorder both times
// of the same batch, and a per-run copy keeps p's run-scoped state.
func TestWithShadow(t *testing.T) {
	var got [][2]int64
	var seen *Batch
	p := WithShadow(WithOverhead(fixedPred(10), 5), fixedPred(7), func(b *Batch, own, other int64) {
		got = append(got, [2]int64{own, other})
		seen = b
	})
	b := &Batch{NumDecode: 3}
	if ns := p.StepTime(b); ns != 15 {
		t.Errorf("step time %d, want p's 15", ns)
	}
	if len(got) != 1 || got[0] != [2]int64{15, 7} || seen != b {
		t.Errorf("recorded %v (batch %p, want %p)", got, seen, b)
	}
	if ns := ForRun(p, &TableCounts{}).StepTime(b); ns != 15 || len(got) != 2 {
		t.Errorf("per-run copy: %d, %d records", ns, len(got))
	}
}
