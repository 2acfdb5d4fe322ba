package kv

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// twinOwner is one table held in both pools of a twin: in the named pool
// every block has an id (named); in the tail pool the table's first
// len(head) blocks are named and its last tail blocks are an anonymous
// tail, the first priv of them committed.
type twinOwner struct {
	named      []BlockID
	head       []BlockID
	tail, priv int
}

// twin drives a pool that names every block and one that keeps tables'
// private ends as anonymous tails through the same operations.
type twin struct {
	named, tails *Pool
	owners       []twinOwner
}

// queueContent lists a pool's free queue, oldest first, as the kind of each
// block and the content it holds: the ids differ between the pools, the
// order and the content must not.
func queueContent(p *Pool) []string {
	var out []string
	p.eachFree(func(_ int, b int32, kind uint32) bool {
		if b < 0 {
			out = append(out, fmt.Sprintf("anon/%d", kind))
		} else {
			out = append(out, fmt.Sprintf("%d:%x", kind, p.content(b)))
		}
		return true
	})
	return out
}

func (w *twin) verify() error {
	for _, p := range []*Pool{w.named, w.tails} {
		if err := p.Check(); err != nil {
			return err
		}
	}
	a, b := w.named, w.tails
	if a.Free() != b.Free() || a.Cached() != b.Cached() || a.CachedFree() != b.CachedFree() ||
		a.TotalRefs() != b.TotalRefs() || a.HitRate() != b.HitRate() {
		return fmt.Errorf("counts differ: named free %d cached %d cachedFree %d refs %d hit %v, tails %d %d %d %d %v",
			a.Free(), a.Cached(), a.CachedFree(), a.TotalRefs(), a.HitRate(), b.Free(), b.Cached(), b.CachedFree(), b.TotalRefs(), b.HitRate())
	}
	qa, qb := queueContent(a), queueContent(b)
	if fmt.Sprint(qa) != fmt.Sprint(qb) {
		return fmt.Errorf("free queues differ:\nnamed %v\ntails %v", qa, qb)
	}
	return nil
}

// TestTailsMatchNamedBlocks drives a pool that names every block and one
// that keeps tables' private ends as anonymous tails (AllocateTail,
// CommitTail, ReleaseTail, NameTail) with the same random operations:
// the two must agree on every count, on the free queue's order and
// content (evictions included), and both must pass their checks.
func TestTailsMatchNamedBlocks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity := rapid.IntRange(1, 40).Draw(t, "capacity")
		caching := rapid.Bool().Draw(t, "caching")
		nOwners := rapid.IntRange(1, 4).Draw(t, "owners")
		a, err := NewPool(capacity, caching)
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewPool(capacity, caching)
		if err != nil {
			t.Fatal(err)
		}
		w := &twin{named: a, tails: b, owners: make([]twinOwner, nOwners)}
		owner := rapid.IntRange(0, nOwners-1)
		chain := rapid.IntRange(0, 2)
		t.Repeat(map[string]func(*rapid.T){
			// Named blocks with shared content from a chain, found in the
			// cache or allocated, only before a tail starts.
			"head": func(t *rapid.T) {
				o := &w.owners[owner.Draw(t, "owner")]
				if len(o.named) > 0 {
					t.Skip("the table holds blocks")
				}
				c := chain.Draw(t, "chain")
				n := rapid.IntRange(1, chainLen).Draw(t, "blocks")
				hs := make([]uint64, n)
				for i := range hs {
					hs[i] = chainHash(c, i)
				}
				hit := a.Match(hs)
				if hb := b.Match(hs); hb != hit {
					t.Fatalf("match: named %d, tails %d", hit, hb)
				}
				if a.EvictableHits(hs, hit) != b.EvictableHits(hs, hit) {
					t.Fatal("evictable hits differ")
				}
				if n-hit+a.EvictableHits(hs, hit) > a.Free() {
					t.Skip("no room")
				}
				o.named = a.Acquire(o.named, hs, hit)
				o.head = b.Acquire(o.head, hs, hit)
				var oka, okb bool
				o.named, oka = a.Allocate(o.named, n-hit)
				o.head, okb = b.Allocate(o.head, n-hit)
				if !oka || !okb {
					t.Fatalf("allocate %d: named %v tails %v", n-hit, oka, okb)
				}
				for i := hit; i < n; i++ {
					a.Commit(o.named[i], hs[i])
					b.Commit(o.head[i], hs[i])
				}
			},
			"grow": func(t *rapid.T) {
				o := &w.owners[owner.Draw(t, "owner")]
				n := rapid.IntRange(0, capacity+1).Draw(t, "n")
				var oka bool
				o.named, oka = a.Allocate(o.named, n)
				okb := b.AllocateTail(n)
				if oka != okb {
					t.Fatalf("allocate %d: named %v, tail %v", n, oka, okb)
				}
				if okb {
					o.tail += n
				}
			},
			"commit": func(t *rapid.T) {
				o := &w.owners[owner.Draw(t, "owner")]
				k := rapid.IntRange(0, o.tail-o.priv).Draw(t, "k")
				start := len(o.head) + o.priv
				a.CommitPrivateBlocks(o.named[start : start+k])
				b.CommitTail(k)
				if caching {
					o.priv += k
				}
			},
			"release": func(t *rapid.T) {
				o := &w.owners[owner.Draw(t, "owner")]
				if err := a.Release(o.named); err != nil {
					t.Fatal(err)
				}
				if err := b.ReleaseTail(o.priv, o.tail-o.priv); err != nil {
					t.Fatal(err)
				}
				if err := b.Release(o.head); err != nil {
					t.Fatal(err)
				}
				*o = twinOwner{}
			},
			"name": func(t *rapid.T) {
				o := &w.owners[owner.Draw(t, "owner")]
				var err error
				if o.head, err = b.NameTail(o.head, o.priv, o.tail); err != nil {
					t.Fatal(err)
				}
				o.tail, o.priv = 0, 0
			},
			"": func(t *rapid.T) {
				if err := w.verify(); err != nil {
					t.Fatal(err)
				}
			},
		})
		for i := range w.owners {
			o := &w.owners[i]
			if err := a.Release(o.named); err != nil {
				t.Fatal(err)
			}
			if err := b.ReleaseTail(o.priv, o.tail-o.priv); err != nil {
				t.Fatal(err)
			}
			if err := b.Release(o.head); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.verify(); err != nil {
			t.Fatal(err)
		}
		if b.Free() != capacity || b.TailBlocks() != 0 {
			t.Fatalf("all released: free %d of %d, %d blocks in tails", b.Free(), capacity, b.TailBlocks())
		}
	})
}

// TestTailReleaseErrors checks that releasing or naming more than the
// tails hold is an error that changes nothing.
func TestTailReleaseErrors(t *testing.T) {
	p, err := NewPool(8, true)
	if err != nil {
		t.Fatal(err)
	}
	if !p.AllocateTail(3) {
		t.Fatal("allocate 3 of 8")
	}
	p.CommitTail(1)
	for _, c := range []struct{ priv, none int }{{2, 1}, {1, 3}, {-1, 0}} {
		if err := p.ReleaseTail(c.priv, c.none); err == nil {
			t.Errorf("ReleaseTail(%d, %d) of a tail of 3, 1 private: no error", c.priv, c.none)
		}
	}
	if _, err := p.NameTail(nil, 0, 4); err == nil {
		t.Error("NameTail of 4 blocks of a tail of 3: no error")
	}
	if p.TailBlocks() != 3 || p.Free() != 5 || p.Cached() != 1 {
		t.Fatalf("after failed calls: tail %d free %d cached %d, want 3 5 1", p.TailBlocks(), p.Free(), p.Cached())
	}
	if err := p.ReleaseTail(1, 2); err != nil {
		t.Fatal(err)
	}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	if p.Free() != 8 || p.CachedFree() != 1 {
		t.Fatalf("after release: free %d cachedFree %d, want 8 1", p.Free(), p.CachedFree())
	}
}

// FuzzTails interprets a byte string as the operations of
// TestTailsMatchNamedBlocks on a pool that names every block and one that
// keeps tables' private ends as anonymous tails: the first byte picks the
// capacity (1..32) and whether prefix caching is on; each op byte selects,
// by its value modulo 5, a chain head / grow / commit / release / name,
// and in bits 3-4 one of four owners, its arguments following as further
// bytes. The pools must never panic nor disagree.
func FuzzTails(f *testing.F) {
	f.Add([]byte{0x87, 0x00, 0x02, 0x01, 0x05, 0x02, 0x01, 0x03, 0x09, 0x04, 0x08, 0x03})
	f.Add([]byte{0x1f, 0x01, 0x10, 0x09, 0x08, 0x02, 0x01, 0x03, 0x0b, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &byteReader{b: data}
		h := r.next()
		capacity, caching := h%32+1, h&0x80 != 0
		a, err := NewPool(capacity, caching)
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewPool(capacity, caching)
		if err != nil {
			t.Fatal(err)
		}
		w := &twin{named: a, tails: b, owners: make([]twinOwner, 4)}
		for step := 0; !r.done(); step++ {
			op := r.next()
			o := &w.owners[(op>>3)%4]
			switch op % 5 {
			case 0: // shared head from chain c, before any block
				c, n := r.next()%3, r.next()%chainLen+1
				if len(o.named) > 0 {
					break
				}
				hs := make([]uint64, n)
				for i := range hs {
					hs[i] = chainHash(c, i)
				}
				hit := a.Match(hs)
				if b.Match(hs) != hit || a.EvictableHits(hs, hit) != b.EvictableHits(hs, hit) {
					t.Fatalf("step %d: the pools match chain %d differently", step, c)
				}
				if n-hit+a.EvictableHits(hs, hit) > a.Free() {
					break
				}
				o.named, o.head = a.Acquire(o.named, hs, hit), b.Acquire(o.head, hs, hit)
				var oka, okb bool
				o.named, oka = a.Allocate(o.named, n-hit)
				o.head, okb = b.Allocate(o.head, n-hit)
				if !oka || !okb {
					t.Fatalf("step %d: allocate %d: named %v, tails %v", step, n-hit, oka, okb)
				}
				for i := hit; i < n; i++ {
					a.Commit(o.named[i], hs[i])
					b.Commit(o.head[i], hs[i])
				}
			case 1:
				n := r.next() % (capacity + 2)
				var oka bool
				o.named, oka = a.Allocate(o.named, n)
				if okb := b.AllocateTail(n); oka != okb {
					t.Fatalf("step %d: allocate %d: named %v, tail %v", step, n, oka, okb)
				} else if okb {
					o.tail += n
				}
			case 2:
				k := r.next() % (o.tail - o.priv + 1)
				start := len(o.head) + o.priv
				a.CommitPrivateBlocks(o.named[start : start+k])
				b.CommitTail(k)
				if caching {
					o.priv += k
				}
			case 3:
				if err := a.Release(o.named); err != nil {
					t.Fatal(err)
				}
				if err := b.ReleaseTail(o.priv, o.tail-o.priv); err != nil {
					t.Fatal(err)
				}
				if err := b.Release(o.head); err != nil {
					t.Fatal(err)
				}
				*o = twinOwner{}
			case 4:
				if o.head, err = b.NameTail(o.head, o.priv, o.tail); err != nil {
					t.Fatal(err)
				}
				o.tail, o.priv = 0, 0
			}
			if err := w.verify(); err != nil {
				t.Fatalf("step %d (op %d): %v", step, op%5, err)
			}
		}
	})
}
