package engine

import (
	"slices"
	"testing"
)

// TestTickLists checks the lane's per-batch lists against a map of
// slices: pushes to batches within the window, takes that empty them,
// and node reuse through the free list.
func TestTickLists(t *testing.T) {
	var l tickLists
	var heads [laneWindow]int32
	h := func(n int64) *int32 { return &heads[n&(laneWindow-1)] }
	want := map[int64][]int32{}
	push := func(n int64, slot int32) {
		l.push(h(n), slot)
		want[n] = append(want[n], slot)
	}
	check := func(n int64) {
		t.Helper()
		var seen []int32
		l.each(*h(n), func(s int32) { seen = append(seen, s) })
		got := l.take(h(n), nil)
		if !slices.Equal(got, seen) {
			t.Fatalf("batch %d: take %v, each %v", n, got, seen)
		}
		w := slices.Clone(want[n])
		slices.Reverse(w) // most recently pushed first
		if !slices.Equal(got, w) {
			t.Fatalf("batch %d: took %v, want %v", n, got, w)
		}
		if *h(n) != 0 {
			t.Fatalf("batch %d not empty after take", n)
		}
		delete(want, n)
	}
	for round := int64(0); round < 4; round++ {
		base := round * 3 * laneWindow / 4
		for i := int32(0); i < 40; i++ {
			push(base+1+int64(i%7), i)
		}
		push(base+laneWindow-1, 99)
		for n := base + 1; n < base+8; n++ {
			check(n)
		}
		check(base + laneWindow - 1)
	}
	// 41 slots were ever queued at once: the free list must have
	// recycled nodes across the rounds.
	if len(l.nodes) > 42 {
		t.Fatalf("%d nodes for at most 41 queued slots", len(l.nodes))
	}
}
