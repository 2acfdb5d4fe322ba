package engine

import (
	"testing"

	"github.com/servesim/servesim/internal/kv"
	"github.com/servesim/servesim/internal/workload"
)

// TestPreemptedRequestRehitsPrivateBlocks: a request without token ids
// commits its full blocks as private content, out of the shared index;
// after a preemption it finds exactly those blocks again, while another
// request of the same shape finds none.
func TestPreemptedRequestRehitsPrivateBlocks(t *testing.T) {
	cfg := testConfig()
	cfg.NumBlocks = 32
	e, err := New(0, cfg, fixedStep{base: 1000})
	if err != nil {
		t.Fatal(err)
	}
	r := workload.Request{ID: 7, InputTokens: 64, OutputTokens: 40}
	slot := e.Add(&r, 0)
	now := int64(0)
	// Step 1 computes the 64-token prompt; each of the next 19 one token:
	// 83 tokens computed, 5 full blocks of 16.
	for i := 0; i < 20; i++ {
		d, ok := begin(e, now)
		if !ok {
			t.Fatalf("step %d: no batch", i)
		}
		now += d
		finish(e, now)
	}
	e.flush() // bring the decode lane's implicit progress up to date
	s := &e.slots[slot]
	if s.computed != 83 || s.committed != 5 || s.shared != 0 {
		t.Fatalf("computed %d, committed %d, shared %d; want 83, 5, 0", s.computed, s.committed, s.shared)
	}
	if got := e.pool.Cached(); got != 5 {
		t.Fatalf("pool caches %d blocks, want the 5 private ones", got)
	}
	for i := 0; i < 5; i++ {
		if _, ok := e.pool.Lookup(kv.Private(s.salt, i)); ok {
			t.Fatalf("private block %d reached the shared index", i)
		}
	}
	e.nameTail(s) // ids to follow (preempt names only a tail it must tag)
	held := append([]int32(nil), s.blocks[:5]...)
	e.running = e.running[:0]
	e.preempt(slot, 0)
	for i, b := range held { // tagged when preempted
		if !e.pool.Holds(b, kv.Private(s.salt, i)) {
			t.Fatalf("block %d does not hold its private content", i)
		}
	}
	if err := e.check(0); err != nil {
		t.Fatal(err)
	}
	if n := e.match(s, 5); n != 5 {
		t.Fatalf("preempted request re-hits %d of its 5 private blocks", n)
	}
	for i, b := range e.hits {
		if b != held[i] {
			t.Fatalf("hit %d is block %d, want %d (the one it held)", i, b, held[i])
		}
	}
	other := workload.Request{ID: 8, InputTokens: 64, OutputTokens: 40}
	s2 := &e.slots[e.Add(&other, now)]
	if n := e.match(s2, 4); n != 0 {
		t.Fatalf("another request hits %d private blocks", n)
	}
	s = &e.slots[slot] // Add may have grown the slot array
	// Re-admitted, the request resumes from its cached blocks: 80 of its
	// 84 tokens (prompt and outputs so far) from the cache, 4 recomputed.
	d, ok := begin(e, now)
	if !ok {
		t.Fatal("no batch after the preemption")
	}
	if s.computed != 84 || s.rec.Preemptions != 1 {
		t.Fatalf("after re-admission computed %d (want 80 cached + 4), preemptions %d", s.computed, s.rec.Preemptions)
	}
	finish(e, now+d)
	if err := e.err; err != nil {
		t.Fatal(err)
	}
}
