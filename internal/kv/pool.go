package kv

import (
	"fmt"
	"math/bits"
)

// BlockID names one block of a pool, 0 <= id < Capacity.
type BlockID = int32

// Pool is a paged KV block pool with an optional prefix cache.
//
// Its first cache line holds every field the decode lane's steady steps
// read or write (Free, AllocateTail's common case, CommitTail): with many
// pools each one's fields have left the CPU cache by its next step, so a
// step then misses on this line (and the free queue's head) only. The struct's size
// is a multiple of 64 bytes, which keeps it line-aligned in its size class
// (TestPoolLayout).
type Pool struct {
	// The free queue is a ring of entries in order of freeing, each a
	// block id and the kind of content it holds, or a run of anonymous
	// blocks (below) of one kind and their number: a released table's
	// blocks of one kind take one entry. A block taken out of the middle
	// (a prefix hit) leaves a hole, skipped when it reaches the head.
	// Allocation thus reads the queue sequentially and writes only the
	// head entry, which is what keeps it cheap when the least recently
	// freed block is long out of the CPU cache.
	ring    []uint32
	numFree int
	refs    int64 // references held, summed over blocks
	qhead   int32 // ring index of the oldest entry
	// tail is the number of blocks held in anonymous tails (tail.go),
	// whose ids are in anon too; tailPriv how many of them hold private
	// content. (Counts of blocks fit 32 bits: MaxCapacity.)
	tail, tailPriv int32
	numPriv        int32 // blocks holding private content (see CommitPrivate)
	cachedFree     int32 // free blocks still holding indexed content
	caching        bool

	qlen     int // entries, runs and holes included
	capacity int

	// hot holds the per-block word that allocation, release and the
	// free queue touch (4 bytes a block, sixteen blocks a cache line),
	// including the kind of content a block holds; hash the hashes of
	// shared content and the tags of tagged private content (8 bytes a
	// block), read only to evict shared content, match, or commit or tag
	// content, and meaningful only while the block's kind is kindShared or
	// kindTagged (eviction changes the kind and leaves the stale hash).
	// With many pools the per-block state of a pool no longer fits in the
	// CPU cache, and the operations done for every block of every request
	// then miss once per sixteen blocks instead of once or twice per
	// block; allocation, which evicts, and a private commit write only the
	// hot word.
	hot  []uint32
	hash []uint64

	// A free block that holds no content, or private content without a
	// tag, can never be looked for: nothing but its queue entry's kind
	// (which the LRU order and the cached counts need) distinguishes it
	// from another such block. Its entry keeps only that kind (an
	// anonymous entry; consecutive anonymous entries of one kind are one
	// run), its id is in the set anon, and its hot word is 0. The ids of
	// blocks held in anonymous tails (tail.go) are in anon too.
	// An allocation that takes an anonymous entry hands out the id
	// following the table's last block when that one is anonymous, else
	// the lowest anonymous id; one that evicts the content of an
	// identified block hands out that block. The ids in use thus stay
	// packed at the low end of the pool, whose hot words (and the low
	// words of anon) stay in the CPU cache however large the pool, and a
	// table's ids run on from one another where they can, so that its hot
	// words share cache lines, instead of cycling through the whole pool
	// with the free queue.
	anon idSet

	index index // hash -> block holding shared content

	hits, queries int64    // prefix-cache statistics, in blocks
	_             [56]byte // to a multiple of 64 bytes
}

// A block's hot word holds, in its low 2 bits, the kind of content it
// holds (kindNone, kindPrivate, kindShared, kindTagged); in bit 2 whether
// it is referenced (heldBit); and above them (countShift) its reference count
// when referenced, or the ring index of its free-queue entry when free.
// A block needs one or the other, never both, so one 32-bit word serves:
// ring indices are below 2^28 (MaxCapacity) and reference counts are
// limited to 2^29 - 1.
const (
	kindMask   = 3
	heldBit    = 4
	countShift = 3
	oneRef     = 1 << countShift
)

// NewPool returns a pool of capacity blocks, all free. With caching off,
// Commit does nothing and Match never hits.
func NewPool(capacity int, caching bool) (*Pool, error) {
	if capacity <= 0 {
		return nil, fmt.Errorf("kv: pool capacity must be > 0 blocks (got %d)", capacity)
	}
	if capacity > MaxCapacity {
		return nil, fmt.Errorf("kv: pool capacity must be at most %d blocks (got %d); use larger blocks", MaxCapacity, capacity)
	}
	p := &Pool{
		capacity: capacity,
		caching:  caching,
		hot:      make([]uint32, capacity),
		hash:     make([]uint64, capacity),
		ring:     make([]uint32, ringSize(capacity)),
		index:    newIndex(),
	}
	// Every block free and anonymous: one run of capacity anonymous
	// entries of kind none, and every id in anon.
	p.anon = newIDSet(capacity)
	p.anon.fill(capacity)
	p.ring[0] = uint32(capacity)<<2 | kindNone
	p.qlen, p.numFree = 1, capacity
	return p, nil
}

// Capacity is the number of blocks in the pool.
func (p *Pool) Capacity() int { return p.capacity }

// Free is the number of blocks no request references (cached or not); all
// of them can be handed out by Allocate.
func (p *Pool) Free() int { return p.numFree }

// Used is Capacity - Free: blocks referenced by at least one holder.
func (p *Pool) Used() int { return p.capacity - p.numFree }

// Cached is the number of blocks currently holding reusable content,
// shared (indexed by the prefix cache) or private, referenced or free.
func (p *Pool) Cached() int { return p.index.len() + int(p.numPriv) }

// HitRate is the fraction of queried blocks found in the prefix cache.
func (p *Pool) HitRate() float64 {
	if p.queries == 0 {
		return 0
	}
	return float64(p.hits) / float64(p.queries)
}

// Match returns how many leading hashes are cached, i.e. the length of the
// longest cached prefix in blocks. It changes nothing.
func (p *Pool) Match(hashes []uint64) int {
	if !p.caching {
		return 0
	}
	n := 0
	for _, h := range hashes {
		if _, ok := p.index.get(h); !ok {
			break
		}
		n++
	}
	return n
}

// EvictableHits counts how many of the first n cached blocks of hashes are
// currently free (taking them removes them from the free queue, so they
// count against the free blocks available for new allocations).
func (p *Pool) EvictableHits(hashes []uint64, n int) int {
	c := 0
	for _, h := range hashes[:n] {
		if b, ok := p.index.get(h); ok && p.hot[b]&heldBit == 0 {
			c++
		}
	}
	return c
}

// Acquire references the cached blocks of the first n hashes (n must not
// exceed Match(hashes)) and appends them to table. It records n hits out of
// len(hashes) queried blocks.
func (p *Pool) Acquire(table []BlockID, hashes []uint64, n int) []BlockID {
	p.queries += int64(len(hashes))
	p.hits += int64(n)
	for _, h := range hashes[:n] {
		b, _ := p.index.get(h)
		p.ref(b)
		table = append(table, b)
	}
	p.refs += int64(n)
	return table
}

// Allocate takes n free blocks, evicting their cached content, and appends
// them to table. It returns false and changes nothing when fewer than n
// blocks are free.
func (p *Pool) Allocate(table []BlockID, n int) ([]BlockID, bool) {
	if n > p.numFree {
		return table, false
	}
	hot, anon, ring := p.hot, &p.anon, p.ring
	mask := len(ring) - 1
	next := int32(-1) // the id following the table's last block
	if len(table) > 0 {
		next = table[len(table)-1] + 1
	}
	if e := ring[p.qhead]; n == 1 && e&kindMask <= kindPrivate {
		// One block from an anonymous run, the commonest call (a lane
		// member's next block): the loop below without its loops, whose
		// exits a branch predictor cannot learn when calls of one block
		// and of many mix.
		if e >= 2<<2 {
			ring[p.qhead] = e - 1<<2
		} else {
			p.qhead = (p.qhead + 1) & int32(mask)
			p.qlen--
		}
		if e&kindMask == kindPrivate {
			p.numPriv--
			p.cachedFree--
		}
		leaf := anon.leaf
		var b int32
		if uint(next) < uint(len(hot)) && leaf[uint(next)>>6]&(1<<(uint(next)&63)) != 0 {
			b = next
		} else {
			b = int32(anon.low<<6 + bits.TrailingZeros64(leaf[anon.low]))
		}
		w := uint(b) >> 6
		if v := leaf[w] &^ (1 << (uint(b) & 63)); v != 0 {
			leaf[w] = v
		} else {
			leaf[w] = 0
			anon.wordCleared(w)
		}
		hot[b] = heldBit | oneRef // kind none
		p.numFree--
		p.refs++
		return append(table, b), true
	}
	for left := n; left > 0; {
		// The least recently freed entry: a block, a hole, or a run of
		// anonymous blocks, left at the head until its last is taken.
		e := ring[p.qhead]
		if k := e & kindMask; k <= kindPrivate {
			// An anonymous run: m of its blocks take anonymous ids (see
			// Pool.anon), evicting private content the tag of which
			// nobody knows.
			m := p.takeRun(e, left)
			left -= m
			leaf := anon.leaf
			for ; m > 0; m-- {
				// anon.has, min and remove, inline, as in the one-block path
				// above: as a method (cost 148, past the inliner's 80) the
				// call costs 4.4 % more instructions (bench-100k and 32
				// mixed at 20,000 requests, cachegrind).
				var b int32
				if uint(next) < uint(len(hot)) && leaf[uint(next)>>6]&(1<<(uint(next)&63)) != 0 {
					b = next
				} else {
					b = int32(anon.low<<6 + bits.TrailingZeros64(leaf[anon.low]))
				}
				w := uint(b) >> 6
				if v := leaf[w] &^ (1 << (uint(b) & 63)); v != 0 {
					leaf[w] = v
				} else {
					leaf[w] = 0
					anon.wordCleared(w)
				}
				hot[b] = heldBit | oneRef // kind none
				table = append(table, b)
				next = b + 1
			}
			continue
		}
		p.qhead = (p.qhead + 1) & int32(mask)
		p.qlen--
		if e == hole {
			continue
		}
		b := p.evict(e)
		hot[b] = heldBit | oneRef // kind none
		table = append(table, b)
		next = b + 1
		left--
	}
	p.numFree -= n
	p.refs += int64(n)
	return table, true
}

// takeRun takes up to left blocks off the anonymous run e at the free
// queue's head, evicting their private content if they hold any, and
// returns how many it took.
func (p *Pool) takeRun(e uint32, left int) int {
	m := min(int(e>>2), left)
	if m < int(e>>2) {
		p.ring[p.qhead] = e - uint32(m)<<2
	} else {
		p.qhead = (p.qhead + 1) & int32(len(p.ring)-1)
		p.qlen--
	}
	if e&kindMask == kindPrivate {
		p.numPriv -= int32(m)
		p.cachedFree -= int32(m)
	}
	return m
}

// evict drops the content of the identified block of entry e, just taken
// off the free queue's head, and returns the block. The entry's kind says
// what to evict without reading the block: only shared content needs its
// hash (to leave the index; Commit never indexes a duplicate, so the
// entry is this block's), and the block's new kind, set by the caller,
// is what makes the old hash meaningless, so the hash is not cleared.
func (p *Pool) evict(e uint32) int32 {
	b := int32(e >> 2)
	p.cachedFree--
	if e&kindMask == kindShared {
		p.index.del(p.hash[b])
	} else {
		p.numPriv-- // tagged
	}
	return b
}

// setAnon makes free block b anonymous: its id in anon, its hot word 0
// (its queue entry, if any, is the caller's).
func (p *Pool) setAnon(b int32) {
	p.hot[b] = 0
	p.anon.add(b)
}

// Commit records that block b is full with content hash h, making it
// available to later prefix matches. A hash already cached in another block
// is not indexed twice. Hash 0 is reserved and ignored. Only a referenced
// block, or a free one that already holds content, can be committed: a free
// block without content is anonymous (see Pool.anon) and stays so.
func (p *Pool) Commit(b BlockID, h uint64) {
	if !p.caching || h == 0 || p.kindOf(b) != kindNone || p.hot[b]&heldBit == 0 {
		return
	}
	if _, dup := p.index.get(h); dup {
		return
	}
	p.hash[b] = h
	p.setKind(b, kindShared)
	p.index.put(h, b)
}

// CommitPrivate records that block b is full with content that only its
// owner can ever ask for again (content of a request whose token ids are
// unknown, tagged by its identity: see Private). The block keeps it until
// it is evicted and counts as cached, like a committed block, but nothing
// enters the shared index, and the pool does not even record the tag:
// an owner that will look for the block again (a request being preempted)
// tags it first with TagPrivate and finds it with Holds. Most private
// blocks are never looked for (their request finishes), so their commit
// writes only the block's hot word. A block that already holds content is
// unchanged.
func (p *Pool) CommitPrivate(b BlockID) {
	if !p.caching || p.kindOf(b) != kindNone || p.hot[b]&heldBit == 0 {
		return
	}
	p.setKind(b, kindPrivate)
	p.numPriv++
}

// TagPrivate records h as the tag of the private content of block b
// (committed with CommitPrivate and not evicted since), so that Holds(b, h)
// reports it until it is evicted. It does nothing when b holds no private
// content, already has a tag, or h is 0, and to a free block (a free
// block's untagged private content is anonymous: tag before releasing).
func (p *Pool) TagPrivate(b BlockID, h uint64) {
	if h == 0 || p.kindOf(b) != kindPrivate || p.hot[b]&heldBit == 0 {
		return
	}
	p.hash[b] = h
	p.setKind(b, kindTagged)
}

// CommitPrivateBlocks is CommitPrivate for each block of bs, in order.
func (p *Pool) CommitPrivateBlocks(bs []BlockID) {
	if !p.caching {
		return
	}
	hot := p.hot
	for _, b := range bs {
		w := hot[b]
		if w&kindMask != kindNone || w&heldBit == 0 {
			continue // holds content already, or free and anonymous
		}
		hot[b] = w | kindPrivate
		p.numPriv++
	}
}

// Lookup returns the block holding shared content h, if any.
func (p *Pool) Lookup(h uint64) (BlockID, bool) {
	if !p.caching {
		return 0, false
	}
	return p.index.get(h)
}

// Holds reports whether block b still holds content h (committed as shared
// content, or private and tagged with TagPrivate, and not evicted since).
// h 0 never matches.
func (p *Pool) Holds(b BlockID, h uint64) bool {
	return p.caching && h != 0 && b >= 0 && int(b) < p.capacity && p.content(b) == h
}

// content is the content hash or tag block b holds, 0 for none (or
// untagged private content).
func (p *Pool) content(b int32) uint64 {
	if k := p.kindOf(b); k != kindShared && k != kindTagged {
		return 0
	}
	return p.hash[b]
}

// AcquireBlocks references the cached blocks ids (found with Lookup or
// Holds, in prefix order) and appends them to table. It records len(ids)
// hits out of queried blocks, as Acquire does.
func (p *Pool) AcquireBlocks(table, ids []BlockID, queried int) []BlockID {
	p.queries += int64(queried)
	p.hits += int64(len(ids))
	for _, b := range ids {
		p.ref(b)
		table = append(table, b)
	}
	p.refs += int64(len(ids))
	return table
}

// EvictableBlocks counts the blocks of ids that are currently free (see
// EvictableHits).
func (p *Pool) EvictableBlocks(ids []BlockID) int {
	c := 0
	for _, b := range ids {
		if p.hot[b]&heldBit == 0 {
			c++
		}
	}
	return c
}

// Release drops one reference to each block of table, last block first, so
// that a request's tail blocks are evicted before its shared prefix. Blocks
// left without references join the back of the free queue and keep their
// cached content until evicted.
func (p *Pool) Release(table []BlockID) error {
	hot, ring, anon, mask := p.hot, p.ring, &p.anon, len(p.ring)-1
	held := uint32(heldBit)
	for _, b := range table {
		held &= hot[b]
	}
	if held == 0 { // some block is not held: find the first
		for _, b := range table {
			if hot[b]&heldBit == 0 {
				return fmt.Errorf("kv: block %d released with 0 references (double release)", b)
			}
		}
	}
	// Anonymous blocks join the queue's back as runs: run blocks of kind
	// runKind are freed but not yet counted in the ring.
	leaf, run, runKind := anon.leaf, 0, uint32(kindNone)
	for i := len(table) - 1; i >= 0; i-- {
		b := table[i]
		w := hot[b] - oneRef
		if w>>countShift != 0 {
			hot[b] = w
			continue
		}
		// pushBack, inline: block b joins the back of the free queue.
		kind := w & kindMask
		if kind <= kindPrivate { // anonymous (setAnon, inline)
			hot[b] = 0
			// anon.add, inline.
			lw := uint(b) >> 6
			old := leaf[lw]
			leaf[lw] = old | 1<<(uint(b)&63)
			if old == 0 {
				anon.wordSet(lw)
			}
			if kind != runKind && run > 0 {
				p.pushAnon(runKind, run)
				run = 0
			}
			runKind = kind
			run++
			continue
		}
		if run > 0 {
			p.pushAnon(runKind, run)
			run = 0
		}
		if p.qlen == len(ring) {
			p.pushBack(b) // compacts the ring first
			continue
		}
		pos := (int(p.qhead) + p.qlen) & mask
		p.qlen++
		p.numFree++
		p.cachedFree++
		ring[pos] = uint32(b)<<2 | kind
		hot[b] = uint32(pos)<<countShift | kind
	}
	if run > 0 {
		p.pushAnon(runKind, run)
	}
	p.refs -= int64(len(table))
	return nil
}

// TotalRefs is the number of references held on all blocks together (a
// block shared by two requests counts twice).
func (p *Pool) TotalRefs() int64 { return p.refs }

// Refs is the number of references to block b.
func (p *Pool) Refs(b BlockID) int32 {
	if p.hot[b]&heldBit == 0 {
		return 0
	}
	return int32(p.hot[b] >> countShift)
}

// ref adds a reference to block b, taking it out of the free queue if it
// was free.
func (p *Pool) ref(b int32) {
	if p.hot[b]&heldBit != 0 {
		p.hot[b] += oneRef
		return
	}
	p.unlink(b)
	p.hot[b] = p.hot[b]&kindMask | heldBit | oneRef
}

// CachedFree is the number of free blocks that still hold reusable
// prefixes (evictable cached content).
func (p *Pool) CachedFree() int { return int(p.cachedFree) }

// Content kinds (low 2 bits of a block's hot word and of its ring entry;
// the block id above): none, private content without a tag, shared
// content (hash in the index), private content with its tag in hash.
const (
	kindNone    = 0
	kindPrivate = 1
	kindShared  = 2
	kindTagged  = 3
	hole        = ^uint32(0)
)

// MaxCapacity bounds a pool so that a free-queue position (below the
// ring size, at most 2 x capacity rounded up to a power of two) shifted
// left by countShift fits a block's hot word, and a block id shifted left
// by 2 fits a free-queue entry.
const MaxCapacity = 1 << 27

// ringSize is the ring's length for a pool of capacity blocks: a power of
// two at least twice the capacity, so that a full ring is at least half
// holes and compacting it costs O(1) per hole made.
func ringSize(capacity int) int {
	n := 4
	for n < 2*capacity {
		n *= 2
	}
	return n
}

// kindOf is the content kind of block b, as kept in its hot entry.
func (p *Pool) kindOf(b int32) uint32 { return p.hot[b] & kindMask }

// setKind records block b's content kind in its hot entry.
func (p *Pool) setKind(b int32, kind uint32) {
	p.hot[b] = p.hot[b]&^kindMask | kind
}

// pushBack appends block b to the free queue.
func (p *Pool) pushBack(b int32) {
	kind := p.kindOf(b)
	if kind <= kindPrivate {
		p.setAnon(b)
		p.pushAnon(kind, 1)
		return
	}
	p.numFree++
	p.cachedFree++
	if p.qlen == len(p.ring) {
		p.compact()
	}
	pos := (int(p.qhead) + p.qlen) & (len(p.ring) - 1)
	p.ring[pos] = uint32(b)<<2 | kind
	p.hot[b] = uint32(pos)<<countShift | kind
	p.qlen++
}

// pushAnon appends n anonymous free blocks of the given kind to the free
// queue, counting them free (and cached, for private content): the back
// entry, if it is a run of that kind, grows by n (a hole is of kind
// tagged), else a run of n starts.
func (p *Pool) pushAnon(kind uint32, n int) {
	p.numFree += n
	if kind == kindPrivate {
		p.cachedFree += int32(n)
	}
	mask := len(p.ring) - 1
	if last := (int(p.qhead) + p.qlen - 1) & mask; p.qlen > 0 && p.ring[last]&kindMask == kind {
		p.ring[last] += uint32(n) << 2
		return
	}
	if p.qlen == len(p.ring) {
		p.compact()
	}
	p.ring[(int(p.qhead)+p.qlen)&mask] = uint32(n)<<2 | kind
	p.qlen++
}

// unlink takes free block b out of the middle of the queue (a prefix hit),
// leaving a hole.
func (p *Pool) unlink(b int32) {
	if p.kindOf(b) != kindNone {
		p.cachedFree--
	}
	p.ring[p.hot[b]>>countShift] = hole
	p.numFree--
}

// compact removes the holes of a full ring in place, keeping the order:
// live entries slide towards the head (the write position never passes
// the read position), so it allocates nothing.
func (p *Pool) compact() {
	mask := len(p.ring) - 1
	n := 0
	for i := 0; i < p.qlen; i++ {
		e := p.ring[(int(p.qhead)+i)&mask]
		if e == hole {
			continue
		}
		if e&3 <= kindPrivate && n > 0 {
			// Two runs of one kind, once apart, are one.
			if last := (int(p.qhead) + n - 1) & mask; p.ring[last]&3 == e&3 {
				p.ring[last] += e &^ 3
				continue
			}
		}
		pos := (int(p.qhead) + n) & mask
		p.ring[pos] = e
		if e&3 > kindPrivate {
			p.hot[e>>2] = uint32(pos)<<countShift | e&3
		}
		n++
	}
	p.qlen = n
}
