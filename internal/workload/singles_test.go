package workload

import "testing"

// TestSinglesAreDisjoint: plain entries carved from one backing array are
// separate elements of capacity 1; writing one (or appending to it) leaves
// the others alone, across chunk boundaries.
func TestSinglesAreDisjoint(t *testing.T) {
	var s singles
	n := 3*singlesChunk + 5
	es := make([]Entry, n)
	for i := range es {
		es[i] = s.entry(Request{ID: int64(i), InputTokens: i + 1})
		if len(es[i].Requests) != 1 || cap(es[i].Requests) != 1 {
			t.Fatalf("entry %d: len %d cap %d, want 1 and 1", i, len(es[i].Requests), cap(es[i].Requests))
		}
	}
	for i := range es {
		es[i].Requests[0].Arrival = int64(1000 + i)
		_ = append(es[i].Requests, Request{ID: -1})
	}
	for i, e := range es {
		r := e.Requests[0]
		if r.ID != int64(i) || r.InputTokens != i+1 || r.Arrival != int64(1000+i) {
			t.Fatalf("entry %d holds %+v", i, r)
		}
	}
}

// TestScaleAllocatesNothingPerEntry: scaling arrival times works on the
// requests the source handed over, so a scaled synthetic source allocates
// only the shared chunk of plain entries (one per singlesChunk requests).
func TestScaleAllocatesNothingPerEntry(t *testing.T) {
	src, err := NewSynthetic(ShareGPTLike(100_000, 1), 1)
	if err != nil {
		t.Fatal(err)
	}
	scaled := Scale(src, 0.5)
	allocs := testing.AllocsPerRun(10*singlesChunk, func() {
		if _, err := scaled.Next(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2.0/singlesChunk {
		t.Fatalf("%.3f allocations per scaled entry, want at most %.3f", allocs, 2.0/singlesChunk)
	}
}
