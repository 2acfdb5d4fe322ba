package cluster

// idTable maps request ids to values: an open-addressing table (linear
// probing, at most half full, deletion by shifting the entries after the
// hole back instead of tombstones). It holds the requests and the
// handoffs in flight, looked up by id several times per request, for
// under half the instructions of a Go map (no hash function call, no
// control words). Iteration is in slot order, the same in every run. The
// zero value is an empty table.
//
// A slot is the id's key and the value, nothing else (16 bytes for a
// pointer or an index: four slots a cache line), and the home slot of an
// id is twice the id folded onto the table (see home): the ids of a run
// are consecutive, so the requests admitted one after another take
// neighbouring homes and the ones in flight fill a compact window of the
// table instead of lines spread over all of it.
type idTable[V any] struct {
	slots []idSlot[V] // length 0 or a power of two, at most half used
	n     int
	// The one id whose key is the empty slot's (minID), kept aside.
	minHeld bool
	minV    V
}

// idSlot is one slot: key is the id's key (keyOf), 0 when empty.
type idSlot[V any] struct {
	key uint64
	v   V
}

// minID is the id whose key would be 0, the empty slot's; the table
// keeps it outside the slots.
const minID = -1 << 63

// keyOf is id's key in a slot: nonzero for every id but minID.
func keyOf(id int64) uint64 { return uint64(id) ^ 1<<63 }

// len is the number of ids held.
func (t *idTable[V]) len() int { return t.n }

// home is the first slot of the id whose key is k: twice the id's low
// bits, mixed with the bits from 16 up so that ids spaced by a large power
// of two do not all share a home. Consecutive ids take every other slot,
// the odd slots between them stay free for an id whose home is taken, so
// that probe runs stay short (they would span the whole window of
// consecutive ids held were the homes adjacent).
func (t *idTable[V]) home(k uint64) int {
	return int((k ^ k>>16) << 1 & uint64(len(t.slots)-1))
}

// get returns the value of id (the zero value when id is not held).
func (t *idTable[V]) get(id int64) V {
	v, _ := t.lookup(id)
	return v
}

// lookup returns the value of id and whether id is held.
func (t *idTable[V]) lookup(id int64) (V, bool) {
	k := keyOf(id)
	if k == 0 {
		return t.minV, t.minHeld
	}
	if len(t.slots) > 0 {
		mask := len(t.slots) - 1
		for i := t.home(k); t.slots[i].key != 0; i = (i + 1) & mask {
			if t.slots[i].key == k {
				return t.slots[i].v, true
			}
		}
	}
	var zero V
	return zero, false
}

// put sets the value of id.
func (t *idTable[V]) put(id int64, v V) {
	p, _ := t.ref(id)
	*p = v
}

// ref returns where the value of id is kept, adding id with the zero
// value if it is not held, and whether it was held. The place is valid
// until the next put, ref or deletion.
func (t *idTable[V]) ref(id int64) (*V, bool) {
	k := keyOf(id)
	if k == 0 {
		held := t.minHeld
		if !held {
			t.minHeld = true
			t.n++
		}
		return &t.minV, held
	}
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	i := t.home(k)
	for ; t.slots[i].key != 0; i = (i + 1) & mask {
		if t.slots[i].key == k {
			return &t.slots[i].v, true
		}
	}
	t.slots[i].key = k
	t.n++
	return &t.slots[i].v, false
}

// del removes id, if held.
func (t *idTable[V]) del(id int64) { t.take(id) }

// take removes id, if held, and returns its value and whether it was held.
func (t *idTable[V]) take(id int64) (V, bool) {
	var zero V
	k := keyOf(id)
	if k == 0 {
		v, held := t.minV, t.minHeld
		if held {
			t.minHeld, t.minV = false, zero
			t.n--
		}
		return v, held
	}
	if len(t.slots) == 0 {
		return zero, false
	}
	mask := len(t.slots) - 1
	i := t.home(k)
	for t.slots[i].key != k {
		if t.slots[i].key == 0 {
			return zero, false
		}
		i = (i + 1) & mask
	}
	v := t.slots[i].v
	t.n--
	if t.slots[(i+1)&mask].key == 0 {
		t.slots[i] = idSlot[V]{} // no entry after the hole: none to move back
	} else {
		t.closeHole(i)
	}
	return v, true
}

// closeHole empties slot i: an entry after it moves back into it unless
// its home lies cyclically in (i, j], where it is still reachable.
func (t *idTable[V]) closeHole(i int) {
	mask := len(t.slots) - 1
	for j := (i + 1) & mask; t.slots[j].key != 0; j = (j + 1) & mask {
		k := t.home(t.slots[j].key)
		if i <= j && (i < k && k <= j) || i > j && (i < k || k <= j) {
			continue
		}
		t.slots[i] = t.slots[j]
		i = j
	}
	t.slots[i] = idSlot[V]{}
}

// grow doubles the table (64 slots at first) and puts every entry back.
func (t *idTable[V]) grow() {
	old := t.slots
	t.slots = make([]idSlot[V], max(2*len(old), 64))
	mask := len(t.slots) - 1
	for _, s := range old {
		if s.key == 0 {
			continue
		}
		i := t.home(s.key)
		for t.slots[i].key != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// all yields every id held and its value, in slot order (minID first).
func (t *idTable[V]) all(yield func(int64, V) bool) {
	if t.minHeld && !yield(minID, t.minV) {
		return
	}
	for i := range t.slots {
		if s := &t.slots[i]; s.key != 0 && !yield(int64(s.key^1<<63), s.v) {
			return
		}
	}
}

// liveTable holds the requests in flight: an idTable of indices into
// recs, whose free entries are listed in free. The table's slots stay
// small (a lookup reads one line); a request's record, read only when a
// limit cuts the run, is written once when it is admitted.
type liveTable struct {
	ids  idTable[int32]
	recs []liveReq
	free []int32
}

// len is the number of requests held.
func (l *liveTable) len() int { return l.ids.len() }

// put notes request id in flight with record r.
func (l *liveTable) put(id int64, r liveReq) { *l.add(id) = r }

// add notes request id in flight and returns where its record is kept
// (the caller sets it), valid until the next add.
func (l *liveTable) add(id int64) *liveReq {
	at, held := l.ids.ref(id)
	if !held {
		if n := len(l.free); n > 0 {
			*at, l.free = l.free[n-1], l.free[:n-1]
		} else {
			*at = int32(len(l.recs))
			l.recs = append(l.recs, liveReq{})
		}
	}
	return &l.recs[*at]
}

// lookup returns the record of id and whether id is held.
func (l *liveTable) lookup(id int64) (liveReq, bool) {
	if at, ok := l.ids.lookup(id); ok {
		return l.recs[at], true
	}
	return liveReq{}, false
}

// get returns the record of id (the zero value when id is not held).
func (l *liveTable) get(id int64) liveReq {
	r, _ := l.lookup(id)
	return r
}

// del removes id, if held.
func (l *liveTable) del(id int64) {
	// The record stays until its entry is reused (not read again: a
	// write would touch its line for nothing).
	if at, ok := l.ids.take(id); ok {
		l.free = append(l.free, at)
	}
}

// all yields every id held and its record, in the table's slot order.
func (l *liveTable) all(yield func(int64, liveReq) bool) {
	for id, at := range l.ids.all {
		if !yield(id, l.recs[at]) {
			return
		}
	}
}
