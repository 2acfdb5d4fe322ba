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

// head gives owner o, while it holds no block, n named blocks of shared
// content from chain c, hits first, in both pools (nothing when they do
// not fit).
func (w *twin) head(o *twinOwner, c, n int) error {
	a, b := w.named, w.tails
	if len(o.named) > 0 {
		return nil
	}
	hs := make([]uint64, n)
	for i := range hs {
		hs[i] = chainHash(c, i)
	}
	hit := a.Match(hs)
	if b.Match(hs) != hit || a.EvictableHits(hs, hit) != b.EvictableHits(hs, hit) {
		return fmt.Errorf("the pools match chain %d differently", c)
	}
	if n-hit+a.EvictableHits(hs, hit) > a.Free() {
		return nil
	}
	o.named, o.head = a.Acquire(o.named, hs, hit), b.Acquire(o.head, hs, hit)
	var oka, okb bool
	o.named, oka = a.Allocate(o.named, n-hit)
	o.head, okb = b.Allocate(o.head, n-hit)
	if !oka || !okb {
		return fmt.Errorf("allocate %d: named %v, tails %v", n-hit, oka, okb)
	}
	for i := hit; i < n; i++ {
		a.Commit(o.named[i], hs[i])
		b.Commit(o.head[i], hs[i])
	}
	return nil
}

// grow allocates n more blocks for o: named in one pool, its tail in the
// other.
func (w *twin) grow(o *twinOwner, n int) error {
	var oka bool
	o.named, oka = w.named.Allocate(o.named, n)
	okb := w.tails.AllocateTail(n)
	if oka != okb {
		return fmt.Errorf("allocate %d: named %v, tail %v", n, oka, okb)
	}
	if okb {
		o.tail += n
	}
	return nil
}

// commit commits the next k of o's tail blocks as private content.
func (w *twin) commit(o *twinOwner, k int) {
	start := len(o.head) + o.priv
	w.named.CommitPrivateBlocks(o.named[start : start+k])
	w.tails.CommitTail(k)
	if w.named.caching {
		o.priv += k
	}
}

// release releases o's table in both pools, its tail first.
func (w *twin) release(o *twinOwner) error {
	if err := w.named.Release(o.named); err != nil {
		return err
	}
	if err := w.tails.ReleaseTail(o.priv, o.tail-o.priv); err != nil {
		return err
	}
	if err := w.tails.Release(o.head); err != nil {
		return err
	}
	*o = twinOwner{}
	return nil
}

// name gives o's tail ids.
func (w *twin) name(o *twinOwner) error {
	var err error
	if o.head, err = w.tails.NameTail(o.head, o.priv, o.tail); err != nil {
		return err
	}
	o.tail, o.priv = 0, 0
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
		w := newTwin(t, capacity, rapid.Bool().Draw(t, "caching"), rapid.IntRange(1, 4).Draw(t, "owners"))
		owner := rapid.IntRange(0, len(w.owners)-1)
		do := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"head": func(t *rapid.T) {
				o := &w.owners[owner.Draw(t, "owner")]
				do(w.head(o, rapid.IntRange(0, 2).Draw(t, "chain"), rapid.IntRange(1, chainLen).Draw(t, "blocks")))
			},
			"grow": func(t *rapid.T) {
				do(w.grow(&w.owners[owner.Draw(t, "owner")], rapid.IntRange(0, capacity+1).Draw(t, "n")))
			},
			"commit": func(t *rapid.T) {
				o := &w.owners[owner.Draw(t, "owner")]
				w.commit(o, rapid.IntRange(0, o.tail-o.priv).Draw(t, "k"))
			},
			"release": func(t *rapid.T) { do(w.release(&w.owners[owner.Draw(t, "owner")])) },
			"name":    func(t *rapid.T) { do(w.name(&w.owners[owner.Draw(t, "owner")])) },
			"":        func(t *rapid.T) { do(w.verify()) },
		})
		for i := range w.owners {
			do(w.release(&w.owners[i]))
		}
		do(w.verify())
		if b := w.tails; b.Free() != capacity || b.TailBlocks() != 0 {
			t.Fatalf("all released: free %d of %d, %d blocks in tails", b.Free(), capacity, b.TailBlocks())
		}
	})
}

// newTwin returns a twin of two empty pools of capacity blocks.
func newTwin(t interface{ Fatal(...any) }, capacity int, caching bool, owners int) *twin {
	a, err := NewPool(capacity, caching)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewPool(capacity, caching)
	if err != nil {
		t.Fatal(err)
	}
	return &twin{named: a, tails: b, owners: make([]twinOwner, owners)}
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
// TestTailsMatchNamedBlocks: the first byte picks the capacity (1..32)
// and whether prefix caching is on; each op byte selects, by its value
// modulo 5, a chain head / grow / commit / release / name, and in bits
// 3-4 one of four owners, its arguments following as further bytes. The
// pools must never panic nor disagree.
func FuzzTails(f *testing.F) {
	f.Add([]byte{0x87, 0x00, 0x02, 0x01, 0x05, 0x02, 0x01, 0x03, 0x09, 0x04, 0x08, 0x03})
	f.Add([]byte{0x1f, 0x01, 0x10, 0x09, 0x08, 0x02, 0x01, 0x03, 0x0b, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &byteReader{b: data}
		h := r.next()
		capacity := h%32 + 1
		w := newTwin(t, capacity, h&0x80 != 0, 4)
		for step := 0; !r.done(); step++ {
			op := r.next()
			o := &w.owners[(op>>3)%4]
			var err error
			switch op % 5 {
			case 0:
				err = w.head(o, r.next()%3, r.next()%chainLen+1)
			case 1:
				err = w.grow(o, r.next()%(capacity+2))
			case 2:
				w.commit(o, r.next()%(o.tail-o.priv+1))
			case 3:
				err = w.release(o)
			case 4:
				err = w.name(o)
			}
			if err == nil {
				err = w.verify()
			}
			if err != nil {
				t.Fatalf("step %d (op %d): %v", step, op%5, err)
			}
		}
	})
}
