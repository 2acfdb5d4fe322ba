package kv

import (
	"fmt"
	"slices"
)

// This file holds the test-only reference model of Pool and a small
// driver that applies the same operations to a Pool and to the model and
// compares them after every step. The property test (pool_rapid_test.go)
// and the fuzz test (pool_fuzz_test.go) share it.
//
// The model is written for clarity, not speed: the free queue is a slice
// in order of freeing, the cache index a map, exactly as doc.go describes
// the pool. A free block without content is anonymous: its queue entry is
// -1, and its id joins the set of anonymous ids (a fresh pool's ids all);
// an allocation that takes an anonymous entry hands out the id following
// the table's last block if it is in the set, else the lowest id in the
// set; one that evicts a block's content hands out that block.

type model struct {
	capacity int
	caching  bool
	queue    []BlockID // free blocks, least recently freed first; -1: anonymous
	anon     []bool    // anonymous free ids
	ref      []int32
	hash     []uint64
	index    map[uint64]BlockID
}

func newModel(capacity int, caching bool) *model {
	m := &model{
		capacity: capacity,
		caching:  caching,
		ref:      make([]int32, capacity),
		hash:     make([]uint64, capacity),
		index:    map[uint64]BlockID{},
		anon:     make([]bool, capacity),
	}
	for b := range capacity {
		m.queue = append(m.queue, -1)
		m.anon[b] = true
	}
	return m
}

// takeAnon takes the anonymous id for the next block of table.
func (m *model) takeAnon(table []BlockID) BlockID {
	if len(table) > 0 {
		if next := table[len(table)-1] + 1; int(next) < m.capacity && m.anon[next] {
			m.anon[next] = false
			return next
		}
	}
	b := BlockID(slices.Index(m.anon, true))
	m.anon[b] = false
	return b
}

func (m *model) match(hashes []uint64) int {
	if !m.caching {
		return 0
	}
	for i, h := range hashes {
		if _, ok := m.index[h]; !ok {
			return i
		}
	}
	return len(hashes)
}

func (m *model) evictableHits(hashes []uint64, n int) int {
	c := 0
	for _, h := range hashes[:n] {
		if m.ref[m.index[h]] == 0 {
			c++
		}
	}
	return c
}

func (m *model) removeFromQueue(b BlockID) {
	i := slices.Index(m.queue, b)
	if i < 0 {
		panic(fmt.Sprintf("model: block %d not in queue", b))
	}
	m.queue = slices.Delete(m.queue, i, i+1)
}

func (m *model) acquire(table []BlockID, hashes []uint64, n int) []BlockID {
	for _, h := range hashes[:n] {
		b := m.index[h]
		if m.ref[b] == 0 {
			m.removeFromQueue(b)
		}
		m.ref[b]++
		table = append(table, b)
	}
	return table
}

func (m *model) allocate(table []BlockID, n int) ([]BlockID, bool) {
	if n > len(m.queue) {
		return table, false
	}
	for range n {
		b := m.queue[0]
		m.queue = m.queue[1:]
		if b >= 0 { // evict its content
			delete(m.index, m.hash[b])
			m.hash[b] = 0
		} else {
			b = m.takeAnon(table)
		}
		m.ref[b] = 1
		table = append(table, b)
	}
	return table, true
}

func (m *model) commit(b BlockID, h uint64) {
	if !m.caching || h == 0 || m.hash[b] != 0 || m.ref[b] == 0 {
		return
	}
	if _, dup := m.index[h]; dup {
		return
	}
	m.hash[b] = h
	m.index[h] = b
}

// release mirrors Pool.Release, including where it stops on an error.
func (m *model) release(table []BlockID) error {
	for i := len(table) - 1; i >= 0; i-- {
		b := table[i]
		if m.ref[b] <= 0 {
			return fmt.Errorf("double release of %d", b)
		}
		m.ref[b]--
		if m.ref[b] == 0 {
			if m.hash[b] == 0 {
				m.queue = append(m.queue, -1)
				m.anon[b] = true
			} else {
				m.queue = append(m.queue, b)
			}
		}
	}
	return nil
}

// freeQueue walks the pool's free queue from head to tail.
func freeQueue(p *Pool) []BlockID {
	var q []BlockID
	p.eachFree(func(_ int, b int32, _ uint32) bool {
		q = append(q, b)
		return len(q) <= p.capacity
	})
	return q
}

// deepCheck is Check plus what only a white-box test can see: the free
// list's back links agree with its forward links, every hashed block is
// indexed under its hash, and Used/Free/Cached agree with the arrays.
func deepCheck(p *Pool) error {
	if err := p.Check(); err != nil {
		return err
	}
	if p.Free()+p.Used() != p.Capacity() {
		return fmt.Errorf("free %d + used %d != capacity %d", p.Free(), p.Used(), p.Capacity())
	}
	holes, blocks, mask := 0, 0, len(p.ring)-1
	for i := 0; i < p.qlen; i++ {
		switch e := p.ring[(int(p.qhead)+i)&mask]; {
		case e == hole:
			holes++
		case e&3 <= kindPrivate: // a run of anonymous blocks
			if e>>2 == 0 {
				return fmt.Errorf("ring entry %d is an empty run", i)
			}
			blocks += int(e >> 2)
		default:
			blocks++
		}
	}
	if blocks != p.numFree || p.qlen > len(p.ring) {
		return fmt.Errorf("ring holds %d entries, %d holes, for %d blocks; %d free blocks (ring size %d)", p.qlen, holes, blocks, p.numFree, len(p.ring))
	}
	hashed := 0
	for b, h := range poolHashes(p) {
		if h == 0 {
			continue
		}
		hashed++
		if got, ok := p.index.get(h); !ok || got != BlockID(b) {
			return fmt.Errorf("block %d holds hash %x but the index maps it to %d (present %v)", b, h, got, ok)
		}
	}
	if hashed != p.Cached() {
		return fmt.Errorf("%d hashed blocks but Cached() = %d", hashed, p.Cached())
	}
	if !p.caching && p.Cached() != 0 {
		return fmt.Errorf("caching off but %d blocks cached", p.Cached())
	}
	return nil
}

// sameAsModel compares every observable and internal piece of state.
func sameAsModel(p *Pool, m *model) error {
	if q := freeQueue(p); !slices.Equal(q, m.queue) {
		return fmt.Errorf("free queue %v, model %v", q, m.queue)
	}
	if p.Free() != len(m.queue) {
		return fmt.Errorf("Free() = %d, model %d", p.Free(), len(m.queue))
	}
	if !slices.Equal(poolRefs(p), m.ref) {
		return fmt.Errorf("refs %v, model %v", poolRefs(p), m.ref)
	}
	if !slices.Equal(poolHashes(p), m.hash) {
		return fmt.Errorf("hashes %v, model %v", poolHashes(p), m.hash)
	}
	if p.index.len() != len(m.index) {
		return fmt.Errorf("index size %d, model %d", p.index.len(), len(m.index))
	}
	for h, b := range m.index {
		if got, _ := p.index.get(h); got != b {
			return fmt.Errorf("index[%x] = %d, model %d", h, got, b)
		}
	}
	return nil
}

// driver applies operations to a Pool and its model side by side. Owners
// are small integers; each owns one block table, as a request does.
type driver struct {
	p      *Pool
	m      *model
	tables [][]BlockID
	stale  [][]BlockID // each owner's last released table
	hits   int64
	quer   int64
}

func newDriver(capacity int, caching bool, owners int) (*driver, error) {
	p, err := NewPool(capacity, caching)
	if err != nil {
		return nil, err
	}
	return &driver{
		p:      p,
		m:      newModel(capacity, caching),
		tables: make([][]BlockID, owners),
		stale:  make([][]BlockID, owners),
	}, nil
}

func (d *driver) alloc(owner, n int) error {
	before := len(d.tables[owner])
	got, ok := d.p.Allocate(d.tables[owner], n)
	want, mok := d.m.allocate(slices.Clone(d.tables[owner]), n)
	if ok != mok {
		return fmt.Errorf("Allocate(%d) ok=%v, model %v", n, ok, mok)
	}
	if !ok && len(got) != before {
		return fmt.Errorf("failed Allocate changed the table length %d -> %d", before, len(got))
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("Allocate(%d) gave %v, model %v", n, got, want)
	}
	d.tables[owner] = got
	return nil
}

func (d *driver) commit(owner, idx int, h uint64) error {
	t := d.tables[owner]
	if len(t) == 0 {
		return nil
	}
	b := t[idx%len(t)]
	d.p.Commit(b, h)
	d.m.commit(b, h)
	return nil
}

// acquire queries hashes and takes the first min(want, Match) hits.
func (d *driver) acquire(owner int, hashes []uint64, want int) error {
	n := d.p.Match(hashes)
	if mn := d.m.match(hashes); n != mn {
		return fmt.Errorf("Match = %d, model %d", n, mn)
	}
	if want < n {
		n = want
	}
	ev := d.p.EvictableHits(hashes, n)
	if mev := d.m.evictableHits(hashes, n); ev != mev {
		return fmt.Errorf("EvictableHits = %d, model %d", ev, mev)
	}
	free := d.p.Free()
	d.tables[owner] = d.p.Acquire(d.tables[owner], hashes, n)
	d.m.acquire(nil, hashes, n)
	d.quer += int64(len(hashes))
	d.hits += int64(n)
	// EvictableHits promises that taking the hits costs exactly that many
	// free blocks -- unless the same block is hit twice in one list.
	distinct := map[BlockID]bool{}
	for _, b := range d.tables[owner][len(d.tables[owner])-n:] {
		distinct[b] = true
	}
	if len(distinct) == n && free-d.p.Free() != ev {
		return fmt.Errorf("Acquire took %d free blocks, EvictableHits said %d", free-d.p.Free(), ev)
	}
	return nil
}

func (d *driver) release(owner int) error {
	t := d.tables[owner]
	if err := d.p.Release(t); err != nil {
		return fmt.Errorf("Release(%v) of a live table: %v", t, err)
	}
	if err := d.m.release(t); err != nil {
		return fmt.Errorf("model: %v", err)
	}
	d.stale[owner] = t
	d.tables[owner] = nil
	return nil
}

// releaseStale releases an owner's already released table again. When all
// its blocks are still unreferenced the pool must refuse and change
// nothing; otherwise (blocks reused by others) it is skipped, as a real
// double release then corrupts other owners' accounting silently.
func (d *driver) releaseStale(owner int) error {
	t := d.stale[owner]
	if len(t) == 0 {
		return nil
	}
	for _, b := range t {
		if d.p.Refs(b) != 0 {
			return nil
		}
	}
	if err := d.p.Release(t); err == nil {
		return fmt.Errorf("double release of %v succeeded", t)
	}
	return nil // the model is unchanged too; verify compares them
}

// verify checks the pool's invariants, the model, the hit statistics and
// that each block's refcount is the number of table entries naming it.
func (d *driver) verify() error {
	if err := deepCheck(d.p); err != nil {
		return err
	}
	if err := sameAsModel(d.p, d.m); err != nil {
		return err
	}
	if d.p.hits != d.hits || d.p.queries != d.quer {
		return fmt.Errorf("hits %d/%d, want %d/%d", d.p.hits, d.p.queries, d.hits, d.quer)
	}
	refs := make([]int32, d.p.Capacity())
	for _, t := range d.tables {
		for _, b := range t {
			refs[b]++
		}
	}
	if !slices.Equal(refs, poolRefs(d.p)) {
		return fmt.Errorf("refcounts %v, tables say %v", poolRefs(d.p), refs)
	}
	return nil
}

// releaseAll releases every table and checks the pool is entirely free.
func (d *driver) releaseAll() error {
	for o := range d.tables {
		if err := d.release(o); err != nil {
			return err
		}
	}
	if err := d.verify(); err != nil {
		return err
	}
	if d.p.Free() != d.p.Capacity() || d.p.Used() != 0 {
		return fmt.Errorf("after releasing everything Free=%d Used=%d Capacity=%d", d.p.Free(), d.p.Used(), d.p.Capacity())
	}
	return nil
}

// poolRefs and poolHashes gather the pool's per-block reference counts
// and hashes (white-box).
func poolRefs(p *Pool) []int32 {
	out := make([]int32, len(p.hot))
	for b := range p.hot {
		out[b] = p.Refs(int32(b))
	}
	return out
}

func poolHashes(p *Pool) []uint64 {
	out := make([]uint64, len(p.hot))
	for b := range p.hot {
		out[b] = p.content(int32(b))
	}
	return out
}
