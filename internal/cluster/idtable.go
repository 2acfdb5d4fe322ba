package cluster

import "math/bits"

// idTable maps request ids to values: an open-addressing table (linear
// probing, the home slot a Fibonacci hash of the id, at most half full,
// deletion by shifting the entries after the hole back instead of
// tombstones). It holds the requests and the handoffs in flight, looked
// up by id several times per request, for under half the instructions of
// a Go map (no hash function call, no control words). Iteration is in slot order,
// the same in every run. The zero value is an empty table.
type idTable[V any] struct {
	slots []idSlot[V] // length 0 or a power of two, at most half used
	n     int
	shift uint // 64 - log2(len(slots))
}

type idSlot[V any] struct {
	id   int64
	used bool
	v    V
}

// len is the number of ids held.
func (t *idTable[V]) len() int { return t.n }

// home is id's first slot.
func (t *idTable[V]) home(id int64) int {
	return int((uint64(id) * 0x9e3779b97f4a7c15) >> t.shift)
}

// get returns the value of id (the zero value when id is not held).
func (t *idTable[V]) get(id int64) V {
	v, _ := t.lookup(id)
	return v
}

// lookup returns the value of id and whether id is held.
func (t *idTable[V]) lookup(id int64) (V, bool) {
	if t.n > 0 {
		mask := len(t.slots) - 1
		for i := t.home(id); t.slots[i].used; i = (i + 1) & mask {
			if t.slots[i].id == id {
				return t.slots[i].v, true
			}
		}
	}
	var zero V
	return zero, false
}

// put sets the value of id.
func (t *idTable[V]) put(id int64, v V) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	i := t.home(id)
	for ; t.slots[i].used; i = (i + 1) & mask {
		if t.slots[i].id == id {
			t.slots[i].v = v
			return
		}
	}
	t.slots[i] = idSlot[V]{id: id, used: true, v: v}
	t.n++
}

// del removes id, if held.
func (t *idTable[V]) del(id int64) {
	if t.n == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(id)
	for t.slots[i].id != id {
		if !t.slots[i].used {
			return
		}
		i = (i + 1) & mask
	}
	if !t.slots[i].used {
		return
	}
	// Close the hole at i: an entry after it moves back into it unless
	// its home lies cyclically in (i, j], where it is still reachable.
	for j := (i + 1) & mask; t.slots[j].used; j = (j + 1) & mask {
		k := t.home(t.slots[j].id)
		if i <= j && (i < k && k <= j) || i > j && (i < k || k <= j) {
			continue
		}
		t.slots[i] = t.slots[j]
		i = j
	}
	t.slots[i] = idSlot[V]{}
	t.n--
}

// grow doubles the table (64 slots at first) and puts every entry back.
func (t *idTable[V]) grow() {
	old := t.slots
	t.slots, t.n = make([]idSlot[V], max(2*len(old), 64)), 0
	t.shift = uint(64 - bits.TrailingZeros(uint(len(t.slots))))
	for i := range old {
		if old[i].used {
			t.put(old[i].id, old[i].v)
		}
	}
}

// all yields every id held and its value, in slot order.
func (t *idTable[V]) all(yield func(int64, V) bool) {
	for i := range t.slots {
		if s := &t.slots[i]; s.used && !yield(s.id, s.v) {
			return
		}
	}
}
