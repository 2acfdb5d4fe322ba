package kv

import (
	"strings"
	"testing"
)

func TestNewPoolRejectsNonPositive(t *testing.T) {
	for _, c := range []int{0, -1} {
		if p, err := NewPool(c, true); err == nil || p != nil {
			t.Errorf("NewPool(%d) = %v, %v; want nil and an error", c, p, err)
		}
	}
}

func TestHitRate(t *testing.T) {
	p, _ := NewPool(4, true)
	if r := p.HitRate(); r != 0 {
		t.Fatalf("HitRate with no queries = %v, want 0", r)
	}
	table, _ := p.Allocate(nil, 1)
	p.Commit(table[0], 11)
	hs := []uint64{11, 12, 13, 14}
	other := p.Acquire(nil, hs, p.Match(hs)) // 1 hit of 4
	if r := p.HitRate(); r != 0.25 {
		t.Fatalf("HitRate = %v, want 0.25", r)
	}
	// Match and EvictableHits are queries without effect: no statistics.
	p.Match(hs)
	p.EvictableHits(hs, 1)
	if r := p.HitRate(); r != 0.25 {
		t.Fatalf("HitRate after Match = %v, want 0.25", r)
	}
	other = p.Acquire(other, hs[:1], 1) // 1 hit of 1: 2/5
	if r := p.HitRate(); r != 0.4 {
		t.Fatalf("HitRate = %v, want 0.4", r)
	}
	if err := p.Release(other); err != nil {
		t.Fatal(err)
	}
	if err := p.Release(table); err != nil {
		t.Fatal(err)
	}
	if p.Free() != p.Capacity() {
		t.Fatalf("Free = %d after releasing everything", p.Free())
	}
}

// Check is the engine's safety net; it must notice each kind of
// corruption. The pool is damaged by hand (white-box).
func TestCheckDetectsCorruption(t *testing.T) {
	setup := func() *Pool {
		p, _ := NewPool(4, true)
		tb, _ := p.Allocate(nil, 3) // blocks 0, 1, 2 referenced; queue: block 3, anonymous
		p.Commit(tb[0], 5)
		p.Commit(tb[2], 8)
		if err := p.Release(tb[2:]); err != nil { // queue: 3 (anonymous, a run of one at ring index 0), 2 (content 8, ring index 1)
			t.Fatal(err)
		}
		if err := p.Check(); err != nil {
			t.Fatalf("fresh pool fails Check: %v", err)
		}
		return p
	}
	tests := []struct {
		name    string
		corrupt func(p *Pool)
		want    string
	}{
		{"referenced block in queue", func(p *Pool) { p.hot[2] = heldBit | oneRef | kindShared }, "is in the free queue with 1 references"},
		{"free count off", func(p *Pool) { p.numFree++ }, "free queue holds 2 blocks but the free count is 3"},
		{"misplaced entry", func(p *Pool) { p.hot[2] = kindShared }, "free block 2 sits at queue position 1 but records 0"},
		{"stale kind", func(p *Pool) { p.setKind(2, kindTagged) }, "free block 2 is queued with content kind 2 but records kind 3"},
		{"anonymous block with state", func(p *Pool) { p.hot[3] = kindPrivate }, "anonymous free block 3 records state 0x1"},
		{"empty run", func(p *Pool) { p.ring[0] = kindNone }, "free queue entry 0 is an empty run of anonymous blocks"},
		{"anonymous id lost", func(p *Pool) { p.anon.remove(3) }, "0 anonymous ids but 1 anonymous queue entries and 0 blocks in tails"},
		{"anonymous and identified", func(p *Pool) { p.anon.remove(3); p.anon.add(2) }, "anonymous free block 2 records state 0xa"},
		{"held block lost", func(p *Pool) { p.hot[1] = 0 }, "block 1 is free without content but not among the anonymous ids"},
		{"shared kind not indexed", func(p *Pool) { p.hash[1] = 9; p.setKind(1, kindShared) }, "block 1 records shared content 9 that the cache index does not map to it"},
		{"tagged without a tag", func(p *Pool) { p.setKind(1, kindTagged); p.numPriv++ }, "block 1 is tagged private but holds no tag"},
		{"private count off", func(p *Pool) { p.numPriv++ }, "0 blocks hold private content but the count is 1"},
		{"held without references", func(p *Pool) { p.hot[0] = heldBit | kindShared }, "block 0 is held with 0 references"},
		{"leaked block", func(p *Pool) { p.hot[1] = kindPrivate; p.refs-- }, "1 referenced + 2 free != capacity 4"},
		{"reference total drift", func(p *Pool) { p.refs++ }, "blocks hold 2 references but the total is 3"},
		{"stale index", func(p *Pool) { p.index.put(7, 1) }, "cache index maps 7 to block 1 holding 0 (content kind 0)"},
		{"index mismatch", func(p *Pool) { p.hash[0] = 6 }, "block 0 records shared content 6 that the cache index does not map to it"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := setup()
			tc.corrupt(p)
			err := p.Check()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// doc.go promises that all operations are allocation-free in steady
// state. With tables preallocated by the caller, a request's life cycle
// (match, acquire its cached prefix, allocate the rest, commit, release)
// must not allocate once the cache index has reached its size.
func TestSteadyStateAllocationFree(t *testing.T) {
	p, _ := NewPool(64, true)
	prefix := []uint64{101, 102, 103, 104}
	hs := make([]uint64, 8)
	table := make([]BlockID, 0, 8)
	var round uint64
	cycle := func() {
		round++
		copy(hs, prefix)
		for i := 4; i < 8; i++ {
			hs[i] = 1000 + round%16*8 + uint64(i) // a few recurring suffixes
		}
		n := p.Match(hs)
		p.EvictableHits(hs, n)
		table = p.Acquire(table[:0], hs, n)
		var ok bool
		if table, ok = p.Allocate(table, 8-n); !ok {
			t.Fatal("allocation failed")
		}
		for i, b := range table {
			p.Commit(b, hs[i])
		}
		if err := p.Release(table); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 { // warm the index to its steady size
		cycle()
	}
	if a := testing.AllocsPerRun(1000, cycle); a != 0 {
		t.Fatalf("request cycle allocates %v times per run, want 0", a)
	}
	if err := deepCheck(p); err != nil {
		t.Fatal(err)
	}
}
