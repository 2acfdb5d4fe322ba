package kv

import "testing"

// benchPool returns a new pool of capacity blocks.
func benchPool(b *testing.B, capacity int, caching bool) *Pool {
	b.Helper()
	p, err := NewPool(capacity, caching)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// cachedPrompt returns a caching pool of 1024 blocks and the hashes of a
// 64-block (1024-token) prompt whose first 48 blocks are cached and free.
func cachedPrompt(b *testing.B) (*Pool, []uint64) {
	b.Helper()
	p := benchPool(b, 1024, true)
	hs := make([]uint64, 64)
	for i := range hs {
		hs[i] = Private(1, i) // any distinct hashes
	}
	table, ok := p.Allocate(nil, 48)
	if !ok {
		b.Fatal("allocation failed")
	}
	for i, blk := range table {
		p.Commit(blk, hs[i])
	}
	if err := p.Release(table); err != nil {
		b.Fatal(err)
	}
	return p, hs
}

// BenchmarkAllocateRelease measures one request's worth of blocks taken
// from the free queue and given back (16 blocks = 256 tokens at block
// size 16), into a caller-owned table. Expect 0 allocs/op.
func BenchmarkAllocateRelease(b *testing.B) {
	for _, caching := range []bool{false, true} {
		name := "caching=off"
		if caching {
			name = "caching=on"
		}
		b.Run(name, func(b *testing.B) {
			p := benchPool(b, 4096, caching)
			table := make([]BlockID, 0, 16)
			b.ReportAllocs()
			for b.Loop() {
				var ok bool
				table, ok = p.Allocate(table[:0], 16)
				if !ok {
					b.Fatal("allocation failed")
				}
				if err := p.Release(table); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAllocateEvictRelease is the same with every free block cached,
// so each allocation also evicts index entries and each commit re-inserts
// them: the map churn of a busy prefix cache.
func BenchmarkAllocateEvictRelease(b *testing.B) {
	p := benchPool(b, 256, true)
	table := make([]BlockID, 0, 16)
	var h uint64
	b.ReportAllocs()
	for b.Loop() {
		var ok bool
		if table, ok = p.Allocate(table[:0], 16); !ok {
			b.Fatal("allocation failed")
		}
		for _, blk := range table {
			h++
			p.Commit(blk, h)
		}
		if err := p.Release(table); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMatch measures the prefix lookup of a 64-block (1024-token)
// prompt whose first 48 blocks are cached.
func BenchmarkMatch(b *testing.B) {
	p, hs := cachedPrompt(b)
	b.ReportAllocs()
	for b.Loop() {
		if n := p.Match(hs); n != 48 {
			b.Fatalf("Match = %d, want 48", n)
		}
	}
}

// BenchmarkAcquireRelease measures taking the 48 cached blocks of the
// prompt above (pulling them out of the free queue) and releasing them.
func BenchmarkAcquireRelease(b *testing.B) {
	p, hs := cachedPrompt(b)
	table := make([]BlockID, 0, 48)
	b.ReportAllocs()
	for b.Loop() {
		n := p.Match(hs)
		table = p.Acquire(table[:0], hs, n)
		if err := p.Release(table); err != nil {
			b.Fatal(err)
		}
	}
}
