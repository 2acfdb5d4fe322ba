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

// TestReleasedEntriesAreReused: a plain entry given back through the
// wrappers is the next one handed out, cleared of its old request, so a
// consumer that releases every entry makes the source allocate nothing;
// session entries are never taken back.
func TestReleasedEntriesAreReused(t *testing.T) {
	syn, err := NewSynthetic(ShareGPTLike(100_000, 1), 1)
	if err != nil {
		t.Fatal(err)
	}
	src := Take(Scale(syn, 0.5), 100_000)
	e, err := src.Next()
	if err != nil {
		t.Fatal(err)
	}
	first := &e.Requests[0]
	Release(src, e)
	if first.ID != 0 || first.InputTokens != 0 {
		t.Fatalf("released element still holds request %d (%d tokens)", first.ID, first.InputTokens)
	}
	e2, err := src.Next()
	if err != nil {
		t.Fatal(err)
	}
	if &e2.Requests[0] != first || e2.Requests[0].ID != 1 || cap(e2.Requests) != 1 {
		t.Fatalf("next entry: request %d, reused=%v, cap %d; want request 1 in the released element, cap 1",
			e2.Requests[0].ID, &e2.Requests[0] == first, cap(e2.Requests))
	}
	Release(src, e2)
	allocs := testing.AllocsPerRun(10*singlesChunk, func() {
		e, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		Release(src, e)
	})
	if allocs != 0 {
		t.Fatalf("%.3f allocations per released entry, want 0", allocs)
	}

	var s singles
	sess := Entry{Session: "s", Requests: make([]Request, 1)}
	s.release(sess)
	s.release(Entry{Requests: make([]Request, 2)})
	if len(s.free) != 0 {
		t.Fatalf("%d session or multi-request entries taken back, want 0", len(s.free))
	}
}
