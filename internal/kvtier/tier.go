package kvtier

import "fmt"

// State is where one chunk slot of a tier stands. Every slot is in exactly
// one state at a time.
type State uint8

// Slot states.
const (
	Free    State = iota // holds nothing
	Writing              // a store is in flight: not readable, not evictable
	Stored               // readable; evictable (least recently used first)
	Reading              // being loaded by at least one request: not evictable
)

var stateNames = [...]string{"free", "writing", "stored", "reading"}

// String returns the state's name.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// SlotID names one chunk slot of a tier, 0 <= id < Capacity.
type SlotID = int32

// slot is one chunk's place in a tier.
type slot struct {
	hash    uint64 // chunk key (chained hash of its last block); 0 when free
	state   State
	readers int32 // loads in flight reading it (state Reading iff > 0)
	// prev and next link the slot in the LRU list (state Stored) or the
	// free list (state Free, next only); -1: none.
	prev, next int32
}

// Tier is one KV storage level below the GPU (host DRAM or local disk)
// holding whole chunks keyed by content. It is a pure state machine: it
// decides which chunk is stored where and which is evicted; the timing of
// the copies belongs to the caller. Eviction is least recently used among
// Stored chunks; chunks being written or read are never evicted.
type Tier struct {
	slots    []slot
	index    map[uint64]SlotID
	freeHead int32
	numFree  int
	// LRU list of Stored slots: head is the least recently used.
	lruHead, lruTail int32
	numStored        int // Stored (in the LRU list)
	numWriting       int
	numReading       int
	evictions        int64
	dropped          int64 // stores refused: no free or evictable slot
}

// NewTier returns an empty tier of capacity chunks.
func NewTier(capacity int) (*Tier, error) {
	if capacity <= 0 {
		return nil, fmt.Errorf("kvtier: tier capacity must be > 0 chunks (got %d)", capacity)
	}
	if capacity > 1<<30 {
		return nil, fmt.Errorf("kvtier: tier capacity must be at most %d chunks (got %d); use larger chunks", 1<<30, capacity)
	}
	t := &Tier{slots: make([]slot, capacity), index: make(map[uint64]SlotID), lruHead: -1, lruTail: -1}
	t.freeHead = -1
	for i := capacity - 1; i >= 0; i-- {
		t.slots[i] = slot{prev: -1, next: t.freeHead}
		t.freeHead = int32(i)
	}
	t.numFree = capacity
	return t, nil
}

// Capacity is the number of chunk slots.
func (t *Tier) Capacity() int { return len(t.slots) }

// Occupied is the number of slots holding or receiving a chunk.
func (t *Tier) Occupied() int { return len(t.slots) - t.numFree }

// Evictions is the number of chunks evicted to make room so far.
func (t *Tier) Evictions() int64 { return t.evictions }

// Dropped is the number of stores refused because every slot was being
// written or read.
func (t *Tier) Dropped() int64 { return t.dropped }

// Readable reports whether chunk h is stored and can be read.
func (t *Tier) Readable(h uint64) bool {
	id, ok := t.index[h]
	return ok && (t.slots[id].state == Stored || t.slots[id].state == Reading)
}

// Has reports whether chunk h is stored or being written.
func (t *Tier) Has(h uint64) bool {
	_, ok := t.index[h]
	return ok
}

// StateOf returns the state of slot id.
func (t *Tier) StateOf(id SlotID) State { return t.slots[id].state }

// BeginWrite reserves a slot for chunk h, evicting the least recently
// used stored chunk when no slot is free, and puts it in state Writing.
// It returns false (and changes nothing but the dropped count) when h is
// already present, h is 0, or no slot is free or evictable.
func (t *Tier) BeginWrite(h uint64) (SlotID, bool) {
	if h == 0 {
		return -1, false
	}
	if id, ok := t.index[h]; ok {
		if t.slots[id].state == Stored {
			t.lruRemove(id) // touched: most recently used
			t.lruPush(id)
		}
		return -1, false
	}
	var id int32
	switch {
	case t.numFree > 0:
		id = t.freeHead
		t.freeHead = t.slots[id].next
		t.numFree--
	case t.lruHead >= 0:
		id = t.lruHead
		t.lruRemove(id)
		delete(t.index, t.slots[id].hash)
		t.evictions++
	default:
		t.dropped++
		return -1, false
	}
	t.slots[id] = slot{hash: h, state: Writing, prev: -1, next: -1}
	t.index[h] = id
	t.numWriting++
	return id, true
}

// EndWrite completes the write into slot id: the chunk becomes Stored and
// most recently used. It is an error unless the slot is Writing.
func (t *Tier) EndWrite(id SlotID) error {
	if id < 0 || int(id) >= len(t.slots) || t.slots[id].state != Writing {
		return fmt.Errorf("kvtier: end of write into slot %d in state %s", id, t.stateName(id))
	}
	t.slots[id].state = Stored
	t.numWriting--
	t.lruPush(id)
	return nil
}

// BeginRead pins stored chunk h for a load: it leaves the LRU list (not
// evictable) until every read of it has ended. It returns false when h is
// not readable.
func (t *Tier) BeginRead(h uint64) (SlotID, bool) {
	id, ok := t.index[h]
	if !ok {
		return -1, false
	}
	s := &t.slots[id]
	switch s.state {
	case Stored:
		t.lruRemove(id)
		s.state = Reading
		t.numReading++
	case Reading:
	default:
		return -1, false
	}
	s.readers++
	return id, true
}

// EndRead ends one read of slot id; after the last one the chunk is
// Stored again, most recently used. It is an error unless the slot is
// Reading.
func (t *Tier) EndRead(id SlotID) error {
	if id < 0 || int(id) >= len(t.slots) || t.slots[id].state != Reading {
		return fmt.Errorf("kvtier: end of read of slot %d in state %s", id, t.stateName(id))
	}
	s := &t.slots[id]
	s.readers--
	if s.readers == 0 {
		s.state = Stored
		t.numReading--
		t.lruPush(id)
	}
	return nil
}

func (t *Tier) stateName(id SlotID) string {
	if id < 0 || int(id) >= len(t.slots) {
		return "none (no such slot)"
	}
	return t.slots[id].state.String()
}

// lruPush appends slot id at the most recently used end.
func (t *Tier) lruPush(id int32) {
	s := &t.slots[id]
	s.prev, s.next = t.lruTail, -1
	if t.lruTail >= 0 {
		t.slots[t.lruTail].next = id
	} else {
		t.lruHead = id
	}
	t.lruTail = id
	t.numStored++
}

// lruRemove takes slot id out of the LRU list.
func (t *Tier) lruRemove(id int32) {
	s := &t.slots[id]
	if s.prev >= 0 {
		t.slots[s.prev].next = s.next
	} else {
		t.lruHead = s.next
	}
	if s.next >= 0 {
		t.slots[s.next].prev = s.prev
	} else {
		t.lruTail = s.prev
	}
	s.prev, s.next = -1, -1
	t.numStored--
}

// Check verifies the tier's invariants: every slot is in exactly one
// state and on the list of that state (free list, LRU list) or on none
// (writing, reading); readers are positive exactly when Reading; the
// index maps exactly the non-free slots; the counts add up to the
// capacity. It costs O(capacity).
func (t *Tier) Check() error {
	onFree := make([]bool, len(t.slots))
	n := 0
	for id := t.freeHead; id >= 0; id = t.slots[id].next {
		if onFree[id] || n > len(t.slots) {
			return fmt.Errorf("kvtier: free list loops at slot %d", id)
		}
		onFree[id] = true
		n++
	}
	if n != t.numFree {
		return fmt.Errorf("kvtier: free list holds %d slots but the count is %d", n, t.numFree)
	}
	onLRU := make([]bool, len(t.slots))
	n = 0
	prev := int32(-1)
	for id := t.lruHead; id >= 0; id = t.slots[id].next {
		if onLRU[id] || n > len(t.slots) {
			return fmt.Errorf("kvtier: LRU list loops at slot %d", id)
		}
		if t.slots[id].prev != prev {
			return fmt.Errorf("kvtier: LRU slot %d links back to %d, not %d", id, t.slots[id].prev, prev)
		}
		onLRU[id] = true
		prev = id
		n++
	}
	if prev != t.lruTail || n != t.numStored {
		return fmt.Errorf("kvtier: LRU list holds %d slots ending at %d but counts %d ending at %d", n, prev, t.numStored, t.lruTail)
	}
	var count [4]int
	for i := range t.slots {
		s := &t.slots[i]
		if int(s.state) >= len(count) {
			return fmt.Errorf("kvtier: slot %d in unknown state %d", i, s.state)
		}
		count[s.state]++
		if onFree[i] != (s.state == Free) {
			return fmt.Errorf("kvtier: slot %d in state %s is on the free list: %t", i, s.state, onFree[i])
		}
		if onLRU[i] != (s.state == Stored) {
			return fmt.Errorf("kvtier: slot %d in state %s is on the LRU (evictable) list: %t", i, s.state, onLRU[i])
		}
		if (s.readers > 0) != (s.state == Reading) || s.readers < 0 {
			return fmt.Errorf("kvtier: slot %d in state %s has %d readers", i, s.state, s.readers)
		}
		if s.state == Free {
			continue
		}
		if id, ok := t.index[s.hash]; !ok || id != int32(i) {
			return fmt.Errorf("kvtier: slot %d holds chunk %x but the index maps it to %d (present %t)", i, s.hash, id, ok)
		}
	}
	if count[Free] != t.numFree || count[Stored] != t.numStored || count[Writing] != t.numWriting || count[Reading] != t.numReading {
		return fmt.Errorf("kvtier: state counts %v disagree with free %d stored %d writing %d reading %d", count, t.numFree, t.numStored, t.numWriting, t.numReading)
	}
	if len(t.index) != len(t.slots)-t.numFree {
		return fmt.Errorf("kvtier: index holds %d chunks but %d slots are occupied", len(t.index), len(t.slots)-t.numFree)
	}
	return nil
}
