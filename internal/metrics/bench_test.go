package metrics

import (
	"io"
	"testing"
)

func BenchmarkCSVWriterWrite(b *testing.B) {
	recs := testRecords()
	w := NewCSVWriter(io.Discard)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := w.Write(&recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONLWriterWrite(b *testing.B) {
	recs := testRecords()
	w := NewJSONLWriter(io.Discard)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := w.Write(&recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSummaryAdd(b *testing.B) {
	recs := testRecords()
	s := NewSummary()
	s.SetSLO(SLO{TTFT: 30e6})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Add(&recs[i%len(recs)])
		s.AddITL(int64(i))
	}
}

func BenchmarkSeriesAdvance(b *testing.B) {
	sw := NewSeriesWriter(io.Discard, 1e9)
	snap := func() Snapshot { return Snapshot{Running: 3, KVUsedBlocks: 5, KVTotalBlocks: 10} }
	ivs := []*Interval{sw.Add(0, snap), sw.Add(1, snap)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = sw.Advance(int64(i) * 10e6) // a boundary every 100 calls
		ivs[i&1].AddGenTokens(1)
	}
}

// TestZeroAllocs pins the hot paths at zero allocations.
func TestZeroAllocs(t *testing.T) {
	recs := testRecords()
	cw := NewCSVWriter(io.Discard)
	jw := NewJSONLWriter(io.Discard)
	s := NewSummary()
	for i := range recs { // map keys for reasons exist after the first pass
		s.Add(&recs[i])
	}
	sw := NewSeriesWriter(io.Discard, 1e9)
	iv := sw.Add(0, func() Snapshot { return Snapshot{KVTotalBlocks: 1} })
	now := int64(0)
	var werr error // the first write error, checked after each measurement
	keep := func(err error) {
		if err != nil && werr == nil {
			werr = err
		}
	}
	checks := map[string]func(){
		"csv":    func() { keep(cw.Write(&recs[1])) },
		"jsonl":  func() { keep(jw.Write(&recs[2])) },
		"add":    func() { s.Add(&recs[0]); s.Add(&recs[2]); s.AddITL(12345) },
		"series": func() { now += 700e6; keep(sw.Advance(now)); iv.AddPromptTokens(3) },
	}
	for name, f := range checks {
		if n := testing.AllocsPerRun(200, f); n != 0 {
			t.Errorf("%s: %v allocs/op, want 0", name, n)
		}
		if werr != nil {
			t.Fatalf("%s: %v", name, werr)
		}
	}
}
