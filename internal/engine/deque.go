package engine

// deque is a ring buffer of slot ids with O(1) push and pop at both ends.
// It is 32 bytes, so that the engine's queues share cache lines with its
// other per-step fields (its length is read at every step).
type deque struct {
	buf  []int32
	head int32
	n    int32
}

func (d *deque) len() int { return int(d.n) }

func (d *deque) grow() {
	size := 2 * len(d.buf)
	if size == 0 {
		size = 16
	}
	nb := make([]int32, size)
	for i := 0; i < int(d.n); i++ {
		nb[i] = d.buf[(int(d.head)+i)%len(d.buf)]
	}
	d.buf, d.head = nb, 0
}

func (d *deque) pushBack(v int32) {
	if int(d.n) == len(d.buf) {
		d.grow()
	}
	d.buf[(int(d.head)+int(d.n))%len(d.buf)] = v
	d.n++
}

func (d *deque) pushFront(v int32) {
	if int(d.n) == len(d.buf) {
		d.grow()
	}
	d.head = int32((int(d.head) - 1 + len(d.buf)) % len(d.buf))
	d.buf[d.head] = v
	d.n++
}

func (d *deque) front() int32 { return d.buf[d.head] }

func (d *deque) popFront() int32 {
	v := d.buf[d.head]
	d.head = int32((int(d.head) + 1) % len(d.buf))
	d.n--
	return v
}

// remove deletes v from the deque, keeping the order of the rest, and
// reports whether it was there. It costs O(len).
func (d *deque) remove(v int32) bool {
	h, n := int(d.head), int(d.n)
	for i := 0; i < n; i++ {
		if d.buf[(h+i)%len(d.buf)] != v {
			continue
		}
		for j := i; j < n-1; j++ {
			d.buf[(h+j)%len(d.buf)] = d.buf[(h+j+1)%len(d.buf)]
		}
		d.n--
		return true
	}
	return false
}
