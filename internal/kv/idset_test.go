package kv

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIDSetMatchesModel applies random adds and removes to sets of
// several sizes (one to four levels) and compares has, min and count with
// a plain slice of flags after every operation.
func TestIDSetMatchesModel(t *testing.T) {
	for _, capacity := range []int{1, 63, 64, 65, 4095, 4096, 4097, 35651, 300000} {
		s := newIDSet(capacity)
		in := make([]bool, capacity)
		r := rand.New(rand.NewPCG(uint64(capacity), 1))
		n := 0
		for op := 0; op < 20000; op++ {
			b := int32(r.IntN(capacity))
			if r.IntN(4) == 0 && n > 0 { // remove the lowest, as an allocation does
				b = int32(slices.Index(in, true))
			}
			if in[b] {
				s.remove(b)
				n--
			} else {
				s.add(b)
				n++
			}
			in[b] = !in[b]
			if s.has(b) != in[b] {
				t.Fatalf("capacity %d op %d: has(%d) = %v, want %v", capacity, op, b, s.has(b), in[b])
			}
			if n > 0 {
				if got, want := s.min(), int32(slices.Index(in, true)); got != want {
					t.Fatalf("capacity %d op %d: min = %d, want %d", capacity, op, got, want)
				}
			}
			if op%997 == 0 && (s.count() != n || !s.check()) {
				t.Fatalf("capacity %d op %d: count %d (want %d), summaries consistent %v", capacity, op, s.count(), n, s.check())
			}
		}
	}
}

// TestIDSetCheckDetectsStaleSummary clears a summary bit by hand.
func TestIDSetCheckDetectsStaleSummary(t *testing.T) {
	s := newIDSet(4097)
	s.add(4000)
	if !s.check() {
		t.Fatal("a consistent set fails check")
	}
	s.sum[0][0] = 0
	if s.check() {
		t.Fatal("check missed a cleared summary bit")
	}
}

// TestIDSetFill compares a filled set with one built by adds.
func TestIDSetFill(t *testing.T) {
	for _, capacity := range []int{1, 63, 64, 65, 4096, 4097, 35651} {
		a, b := newIDSet(capacity), newIDSet(capacity)
		a.fill(capacity)
		for id := range capacity {
			b.add(int32(id))
		}
		if !slices.Equal(a.leaf, b.leaf) || a.low != b.low || !a.check() || a.count() != capacity {
			t.Fatalf("capacity %d: filled set differs from one built by adds", capacity)
		}
		for k := range a.sum {
			if !slices.Equal(a.sum[k], b.sum[k]) {
				t.Fatalf("capacity %d: summary level %d differs", capacity, k+1)
			}
		}
	}
}
