package kv

// index maps content hashes to blocks: an open-addressing table with
// linear probing and backward-shift deletion, so heavy insert/delete churn
// (every eviction deletes) leaves no tombstones and probes stay short.
// Keys are chained block hashes, already uniformly mixed, so their low bits
// pick the home slot. Key 0 marks an empty slot (hash 0 is never used).
type index struct {
	keys []uint64
	vals []BlockID
	mask uint64
	n    int
}

func newIndex() index {
	const size = 1024
	return index{keys: make([]uint64, size), vals: make([]BlockID, size), mask: size - 1}
}

// len is the number of entries.
func (x *index) len() int { return x.n }

// get returns the block holding content h.
func (x *index) get(h uint64) (BlockID, bool) {
	if h == 0 {
		return 0, false
	}
	for i := h & x.mask; ; i = (i + 1) & x.mask {
		switch x.keys[i] {
		case h:
			return x.vals[i], true
		case 0:
			return 0, false
		}
	}
}

// put maps h to b; h must not be present.
func (x *index) put(h uint64, b BlockID) {
	if 2*(x.n+1) > len(x.keys) {
		x.grow()
	}
	i := h & x.mask
	for x.keys[i] != 0 {
		i = (i + 1) & x.mask
	}
	x.keys[i], x.vals[i] = h, b
	x.n++
}

// del removes h if present, shifting later entries of its probe run back.
func (x *index) del(h uint64) {
	if h == 0 {
		return
	}
	i := h & x.mask
	for {
		switch x.keys[i] {
		case 0:
			return
		case h:
			x.n--
			for {
				x.keys[i] = 0
				j := i
				for {
					j = (j + 1) & x.mask
					k := x.keys[j]
					if k == 0 {
						return
					}
					// Move k back to i unless its home lies cyclically in
					// (i, j].
					home := k & x.mask
					if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
						x.keys[i], x.vals[i] = k, x.vals[j]
						i = j
						break
					}
				}
			}
		}
		i = (i + 1) & x.mask
	}
}

func (x *index) grow() {
	old, oldVals := x.keys, x.vals
	size := 2 * len(old)
	x.keys, x.vals, x.mask, x.n = make([]uint64, size), make([]BlockID, size), uint64(size-1), 0
	for i, k := range old {
		if k != 0 {
			x.put(k, oldVals[i])
		}
	}
}

// each calls f for every entry (for checks).
func (x *index) each(f func(h uint64, b BlockID) bool) {
	for i, k := range x.keys {
		if k != 0 && !f(k, x.vals[i]) {
			return
		}
	}
}
