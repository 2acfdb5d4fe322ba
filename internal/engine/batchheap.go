package engine

// batchQueue holds (batch number, slot) pairs, the lowest batch first: the
// decode lane's registrations of members for a future batch. A binary
// heap in one small slice: with many engines the per-batch lists it
// replaced (one slice header per batch number) were rarely in the CPU
// cache when a batch was formed, and the heap, a few entries per lane
// member, is.
type batchQueue struct {
	e []batchEntry
}

type batchEntry struct {
	batch int64
	slot  int32
}

func (q *batchQueue) len() int { return len(q.e) }

// due reports whether the lowest batch queued is at most n.
func (q *batchQueue) due(n int64) bool { return len(q.e) > 0 && q.e[0].batch <= n }

// push queues slot for batch n.
func (q *batchQueue) push(n int64, slot int32) {
	q.e = append(q.e, batchEntry{n, slot})
	h := q.e
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].batch <= h[i].batch {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

// pop removes and returns the entry of the lowest batch.
func (q *batchQueue) pop() (int64, int32) {
	h := q.e
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	q.e = h
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if r := c + 1; r < len(h) && h[r].batch < h[c].batch {
			c = r
		}
		if h[i].batch <= h[c].batch {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	return top.batch, top.slot
}
