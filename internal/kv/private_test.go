package kv

import (
	"testing"
	"unsafe"
)

// TestPrivateContent: a block committed as private counts as cached and,
// once tagged, holds its content for Holds; it is never found through the
// shared index, survives release like shared content, is forgotten when
// evicted, and the pool's Check accounts for it.
func TestPrivateContent(t *testing.T) {
	p, _ := NewPool(3, true)
	tb, _ := p.Allocate(nil, 2) // blocks 0 and 1; queue: 2
	p.CommitPrivate(tb[0])
	p.Commit(tb[1], 8)
	if p.Holds(tb[0], 7) || p.Cached() != 2 {
		t.Fatalf("untagged private block: holds %t, cached %d; want false, 2", p.Holds(tb[0], 7), p.Cached())
	}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	p.TagPrivate(tb[0], 7)
	p.TagPrivate(tb[1], 9) // shared content: no tag
	steps := []struct {
		name string
		got  any
		want any
	}{
		{"Holds private", p.Holds(tb[0], 7), true},
		{"Holds shared", p.Holds(tb[1], 8), true},
		{"Holds wrong hash", p.Holds(tb[0], 8), false},
		{"Holds hash 0", p.Holds(tb[0], 0), false},
		{"Holds no block", p.Holds(-1, 7), false},
		{"Lookup private", p.Match([]uint64{7}), 0},
		{"Lookup shared", p.Match([]uint64{8}), 1},
		{"Cached", p.Cached(), 2},
	}
	for _, s := range steps {
		if s.got != s.want {
			t.Errorf("%s = %v, want %v", s.name, s.got, s.want)
		}
	}
	// A block that already holds content, or a tag, is left as it is.
	p.CommitPrivate(tb[0])
	p.CommitPrivate(tb[1])
	p.TagPrivate(tb[0], 9)
	if !p.Holds(tb[0], 7) || !p.Holds(tb[1], 8) || p.Cached() != 2 {
		t.Fatal("CommitPrivate or TagPrivate overwrote committed content")
	}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	// Released: still cached and free (queue: 2, 1, 0, last block first).
	if err := p.Release(tb); err != nil {
		t.Fatal(err)
	}
	if p.CachedFree() != 2 || !p.Holds(0, 7) {
		t.Fatalf("after release: %d cached free blocks, holds %t", p.CachedFree(), p.Holds(0, 7))
	}
	// The owner takes its private block back: a hit of 1 in 1.
	if ev := p.EvictableBlocks([]BlockID{0}); ev != 1 {
		t.Fatalf("EvictableBlocks = %d, want 1", ev)
	}
	again := p.AcquireBlocks(nil, []BlockID{0}, 1)
	if p.Refs(0) != 1 || p.Free() != 2 || p.HitRate() != 1 {
		t.Fatalf("AcquireBlocks: refs %d, free %d, hit rate %v", p.Refs(0), p.Free(), p.HitRate())
	}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	// Allocating the two free blocks (2, then 1) evicts the shared one.
	other, ok := p.Allocate(nil, 2)
	if !ok || p.Cached() != 1 || p.Match([]uint64{8}) != 0 || !p.Holds(0, 7) {
		t.Fatalf("after eviction: cached %d", p.Cached())
	}
	if err := p.Release(again); err != nil {
		t.Fatal(err)
	}
	// Now block 0 is the only free one: allocating evicts private content.
	last, _ := p.Allocate(nil, 1)
	if last[0] != 0 || p.Holds(0, 7) || p.Cached() != 0 {
		t.Fatalf("private content not evicted: block %d, cached %d", last[0], p.Cached())
	}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	if err := p.Release(append(other, last...)); err != nil {
		t.Fatal(err)
	}
	// Check notices a private count that disagrees with the blocks.
	p.numPriv++
	if err := p.Check(); err == nil {
		t.Fatal("Check missed a wrong private count")
	}
}

// TestPrivateNeedsCaching: with prefix caching off nothing is committed.
func TestPrivateNeedsCaching(t *testing.T) {
	p, _ := NewPool(2, false)
	tb, _ := p.Allocate(nil, 1)
	p.CommitPrivate(tb[0])
	p.TagPrivate(tb[0], 7)
	if p.Holds(tb[0], 7) || p.Cached() != 0 {
		t.Fatal("a pool without caching kept private content")
	}
	if _, ok := p.Lookup(7); ok {
		t.Fatal("Lookup hit without caching")
	}
}

// TestFreeQueueCompaction: prefix hits leave holes in the free-queue ring;
// when it fills up it is compacted, keeping the queue order (least
// recently freed first) and every block's recorded position.
func TestFreeQueueCompaction(t *testing.T) {
	p, _ := NewPool(3, true)
	tb, _ := p.Allocate(nil, 3)
	for i, b := range tb {
		p.Commit(b, uint64(100+i))
	}
	if err := p.Release(tb); err != nil { // queue: 2 1 0 (last block first)
		t.Fatal(err)
	}
	// Hit block 1 (content 101) out of the middle and give it back, many
	// times: each round leaves a hole and appends an entry.
	for round := 0; round < 20; round++ {
		got := p.AcquireBlocks(nil, []BlockID{1}, 1)
		if err := p.Check(); err != nil {
			t.Fatalf("round %d, after the hit: %v", round, err)
		}
		if err := p.Release(got); err != nil {
			t.Fatal(err)
		}
		if err := p.Check(); err != nil {
			t.Fatalf("round %d, after the release: %v", round, err)
		}
		if p.qlen > len(p.ring) {
			t.Fatalf("round %d: %d entries in a ring of %d", round, p.qlen, len(p.ring))
		}
	}
	if q := freeQueue(p); len(q) != 3 || q[0] != 2 || q[1] != 0 || q[2] != 1 {
		t.Fatalf("free queue %v, want [2 0 1]", q)
	}
	// Hits and releases, compactions included, allocate nothing.
	table := make([]BlockID, 0, 1)
	ids := []BlockID{1}
	if a := testing.AllocsPerRun(50, func() {
		table = p.AcquireBlocks(table[:0], ids, 1)
		if err := p.Release(table); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Fatalf("%v allocations per hit and release", a)
	}
	// Allocation follows that order and evicts each block's content.
	got, _ := p.Allocate(nil, 3)
	if got[0] != 2 || got[1] != 0 || got[2] != 1 || p.Cached() != 0 || p.CachedFree() != 0 {
		t.Fatalf("allocated %v, cached %d, cached free %d", got, p.Cached(), p.CachedFree())
	}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestCommitWhileFree: a free block without content is anonymous (callers
// commit and tag blocks they hold): committing or tagging it changes
// nothing, and a free block's tagged content stays findable.
func TestCommitWhileFree(t *testing.T) {
	p, _ := NewPool(3, true)
	p.Commit(0, 7)
	p.CommitPrivate(1)
	p.TagPrivate(1, 8)
	if _, hit := p.Lookup(7); hit || p.CachedFree() != 0 || p.Cached() != 0 || p.Holds(1, 8) {
		t.Fatalf("hit %v, cached free %d, cached %d", hit, p.CachedFree(), p.Cached())
	}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	tb, _ := p.Allocate(nil, 1)
	p.CommitPrivate(tb[0])
	p.TagPrivate(tb[0], 9)
	if err := p.Release(tb); err != nil {
		t.Fatal(err)
	}
	p.CommitPrivate(tb[0]) // free, tagged: unchanged
	if !p.Holds(tb[0], 9) || p.CachedFree() != 1 || p.Cached() != 1 {
		t.Fatalf("holds %v, cached free %d, cached %d", p.Holds(tb[0], 9), p.CachedFree(), p.Cached())
	}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestEvictedTagIsForgotten: a block whose tagged private content was
// evicted keeps the stale tag in its hash slot; committed again as
// another owner's untagged private content it must not match the old tag.
func TestEvictedTagIsForgotten(t *testing.T) {
	p, _ := NewPool(1, true)
	tb, _ := p.Allocate(nil, 1)
	p.CommitPrivate(tb[0])
	p.TagPrivate(tb[0], 7)
	if err := p.Release(tb); err != nil {
		t.Fatal(err)
	}
	again, _ := p.Allocate(nil, 1) // evicts the tagged content
	p.CommitPrivate(again[0])
	if p.Holds(again[0], 7) {
		t.Fatal("a new owner's untagged block matches the evicted tag")
	}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestCommitPrivateBlocks: committing a run of blocks at once leaves the
// pool exactly as committing them one by one (held and free blocks, some
// already holding content; the free ones hold none, so they are anonymous
// and stay so).
func TestCommitPrivateBlocks(t *testing.T) {
	build := func() (*Pool, []BlockID) {
		p, _ := NewPool(8, true)
		tb, _ := p.Allocate(nil, 6) // blocks 0..5 held; 6, 7 free
		p.Commit(tb[1], 11)
		p.CommitPrivate(tb[3])
		if err := p.Release(tb[4:5]); err != nil { // block 4 free again
			t.Fatal(err)
		}
		return p, []BlockID{0, 1, 2, 3, 4, 6}
	}
	one, ids := build()
	for _, b := range ids {
		one.CommitPrivate(b)
	}
	batch, _ := build()
	batch.CommitPrivateBlocks(ids)
	if err := batch.Check(); err != nil {
		t.Fatal(err)
	}
	if batch.Cached() != one.Cached() || batch.CachedFree() != one.CachedFree() || batch.Cached() != 4 || batch.CachedFree() != 0 {
		t.Fatalf("batch: cached %d, cached free %d; one by one: %d, %d; want 4, 0",
			batch.Cached(), batch.CachedFree(), one.Cached(), one.CachedFree())
	}
	for b := range one.hot {
		if one.hot[b] != batch.hot[b] {
			t.Fatalf("block %d: hot word %#x one by one, %#x in a batch", b, one.hot[b], batch.hot[b])
		}
	}
	for i := range one.ring {
		if one.ring[i] != batch.ring[i] {
			t.Fatalf("ring entry %d: %#x one by one, %#x in a batch", i, one.ring[i], batch.ring[i])
		}
	}
}

// TestPoolLayout checks that the pool is a whole number of cache lines
// (so that its size class keeps it line-aligned) and that the fields a
// steady decode step touches share its first.
func TestPoolLayout(t *testing.T) {
	var p Pool
	if size := unsafe.Sizeof(p); size%64 != 0 {
		t.Errorf("Pool is %d bytes, not a multiple of 64: pad it (pool.go)", size)
	}
	for name, end := range map[string]uintptr{
		"ring":       unsafe.Offsetof(p.ring) + unsafe.Sizeof(p.ring),
		"qhead":      unsafe.Offsetof(p.qhead) + unsafe.Sizeof(p.qhead),
		"numFree":    unsafe.Offsetof(p.numFree) + unsafe.Sizeof(p.numFree),
		"tail":       unsafe.Offsetof(p.tail) + unsafe.Sizeof(p.tail),
		"tailPriv":   unsafe.Offsetof(p.tailPriv) + unsafe.Sizeof(p.tailPriv),
		"numPriv":    unsafe.Offsetof(p.numPriv) + unsafe.Sizeof(p.numPriv),
		"cachedFree": unsafe.Offsetof(p.cachedFree) + unsafe.Sizeof(p.cachedFree),
		"refs":       unsafe.Offsetof(p.refs) + unsafe.Sizeof(p.refs),
		"caching":    unsafe.Offsetof(p.caching) + unsafe.Sizeof(p.caching),
	} {
		if end > 64 {
			t.Errorf("Pool.%s ends at byte %d, past the first cache line", name, end)
		}
	}
}
