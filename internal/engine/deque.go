package engine

// deque is a ring buffer of slot ids with O(1) push and pop at both ends.
type deque struct {
	buf  []int32
	head int
	n    int
}

func (d *deque) len() int { return d.n }

func (d *deque) grow() {
	size := 2 * len(d.buf)
	if size == 0 {
		size = 16
	}
	nb := make([]int32, size)
	for i := 0; i < d.n; i++ {
		nb[i] = d.buf[(d.head+i)%len(d.buf)]
	}
	d.buf, d.head = nb, 0
}

func (d *deque) pushBack(v int32) {
	if d.n == len(d.buf) {
		d.grow()
	}
	d.buf[(d.head+d.n)%len(d.buf)] = v
	d.n++
}

func (d *deque) pushFront(v int32) {
	if d.n == len(d.buf) {
		d.grow()
	}
	d.head = (d.head - 1 + len(d.buf)) % len(d.buf)
	d.buf[d.head] = v
	d.n++
}

func (d *deque) front() int32 { return d.buf[d.head] }

func (d *deque) popFront() int32 {
	v := d.buf[d.head]
	d.head = (d.head + 1) % len(d.buf)
	d.n--
	return v
}

// remove deletes v from the deque, keeping the order of the rest, and
// reports whether it was there. It costs O(len).
func (d *deque) remove(v int32) bool {
	for i := 0; i < d.n; i++ {
		if d.buf[(d.head+i)%len(d.buf)] != v {
			continue
		}
		for j := i; j < d.n-1; j++ {
			d.buf[(d.head+j)%len(d.buf)] = d.buf[(d.head+j+1)%len(d.buf)]
		}
		d.n--
		return true
	}
	return false
}
