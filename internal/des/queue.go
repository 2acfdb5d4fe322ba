package des

import (
	"fmt"
	"slices"
)

// Time is simulated time in nanoseconds since the start of a run.
type Time = int64

// Event is one scheduled occurrence. Kind and Target are opaque to the queue:
// the owner of the queue decides what they mean (for example an event kind
// and the index of the instance or request it concerns).
type Event struct {
	At     Time  // when the event fires
	Seq    int64 // tie-breaker: order of scheduling, assigned by Push
	Kind   int32 // caller-defined event type
	Target int32 // caller-defined subject (instance index, request slot, ...)
	Arg    int64 // caller-defined payload
}

// Queue is a priority queue of events ordered by (At, Seq) with a monotone
// clock. The zero value is ready to use.
//
// (At, Seq) is a total order (Seq is unique and grows with every Push), so
// the order in which events come out depends only on the keys, not on how
// they are kept. Up to ringCap pending events (a cluster keeps about one
// step end per instance) are kept sorted in a ring of short keys: the
// events' times, and beside each the slot of the pool that holds the
// event itself.
//
//   - Pop, Peek and Front take the ring's first event, NextAt reads its
//     time.
//   - Push writes the event into a free slot of the pool and inserts its
//     key by shifting the keys on one side of its place by a position:
//     the later ones towards the tail, or, when the new event goes before
//     the ring's middle one, the earlier ones towards the head. An event
//     is pushed after every event of its time (its Seq is the largest), so
//     only times are compared. A step end is pushed a step ahead and goes
//     near the tail; an arrival is pushed shortly ahead and goes near the
//     head: either way few keys move, 9 bytes each where a whole event is
//     32.
//   - The slots form a permutation of the pool: the ring's positions
//     outside the pending events hold the free slots, so a pop frees its
//     event's slot by moving the head on, with no free list to keep. A
//     push takes the slot at the position before the head, the one the
//     last pop freed, whose line that pop has just read (a pool slot is
//     otherwise touched only when its event is pushed and popped); the
//     free slot past the tail takes its position.
//
// A push beyond ringCap events turns the ring into a binary heap (a sorted
// slice is one), which keeps a push and a pop logarithmic however many
// events are pending (timers of thousands of requests); a push that finds
// ringCap/2 or fewer events left moves them back into the ring, sorted.
// In the heap two things keep a pop cheap:
//
//   - Pop leaves the root empty (a hole) instead of refilling it at once.
//     An event loop nearly always schedules something while it handles
//     the event it popped (an instance's next step end), and the next Push
//     drops its event into the hole and sifts it down: one pass through
//     the heap instead of a sift-down for the pop and a sift-up for the
//     push. Peek, Front or Pop refill a hole still open with the last
//     event.
//   - A hole is sifted down bottom-up: the smaller child moves up into it
//     level by level to a leaf (one comparison per level), and the event
//     to place climbs back from there. The event placed is usually late
//     (the heap's last one, or a step end a whole step ahead), so it climbs
//     little, where the top-down sift compared it at every level too.
type Queue struct {
	// The ring: positions head <= i < tail (taken modulo ringCap) hold the
	// pending events in order while !heaped (head and tail are 0 while
	// heaped): times[i%ringCap] is the time of the event in
	// pool[slots[i%ringCap]]. slots is a permutation of the pool's
	// indices once ready.
	pool       [ringCap]Event // first: an event in one line
	times      [ringCap]Time
	slots      [ringCap]uint8
	head, tail uint
	now        Time
	seq        int64
	heaped     bool // the events are in heap
	hole       bool // heap[0] is vacant
	ready      bool // slots is a permutation
	heap       []Event
}

// ringCap is how many events the sorted ring holds (a power of two, at
// most 256 for a slot to fit in a byte).
const ringCap = 64

// Now is the time of the most recently popped event (0 before the first).
func (q *Queue) Now() Time { return q.now }

// Len is the number of pending events.
func (q *Queue) Len() int {
	if !q.heaped {
		return int(q.tail - q.head)
	}
	if q.hole {
		return len(q.heap) - 1
	}
	return len(q.heap)
}

// Push schedules e at e.At. Scheduling into the past is a programming error
// and is reported as an error rather than silently reordering time.
func (q *Queue) Push(e Event) error {
	if e.At < q.now {
		return q.pastError(e)
	}
	q.seq++
	e.Seq = q.seq
	if h, t := q.head, q.tail; t-h-1 < ringCap-1 { // the ring has 1 to ringCap-1 events
		// The slot the last pop freed; the free slot past the tail takes
		// its position.
		s := q.slots[(h-1)%ringCap]
		q.slots[(h-1)%ringCap] = q.slots[t%ringCap]
		q.pool[s%ringCap] = e               // s%ringCap is s: no bounds check
		if q.times[(t-1)%ringCap] <= e.At { // the latest: at the tail
			q.times[t%ringCap], q.slots[t%ringCap] = e.At, s
			q.tail = t + 1
			return nil
		}
		q.insert(e.At, s)
		return nil
	}
	q.pushSlow(e)
	return nil
}

// pushSlow is Push into an empty or full ring, or the heap.
func (q *Queue) pushSlow(e Event) {
	if q.heaped && q.Len() <= ringCap/2 {
		q.toRing()
	}
	if !q.heaped {
		if q.tail == q.head {
			if !q.ready {
				q.resetSlots()
			}
			i := q.tail % ringCap
			q.times[i] = e.At
			q.pool[q.slots[i]] = e
			q.tail++
			return
		}
		q.toHeap()
	}
	if q.hole {
		q.hole = false
		q.place(e)
		return
	}
	q.heap = append(q.heap, e)
	q.climb(len(q.heap)-1, e)
}

// resetSlots makes slots the identity permutation.
func (q *Queue) resetSlots() {
	for i := range q.slots {
		q.slots[i] = uint8(i)
	}
	q.ready = true
}

// insert puts the key of the event at time at, in pool slot s, into its
// place in the ring, which has room for it and holds an event later than
// it. Push took s from the position before the head and copied the free
// slot past the tail there, so whichever of the two positions the ring
// grows into, the other keeps that free slot.
func (q *Queue) insert(at Time, s uint8) {
	ts, ss := &q.times, &q.slots
	h, t := q.head, q.tail
	q.tail = t + 1
	if at >= ts[(h+(t-h)/2)%ringCap] {
		// From the tail: the later keys move one position on.
		i := t % ringCap
		for {
			j := (i - 1) % ringCap
			if ts[j] <= at {
				break
			}
			ts[i%ringCap], ss[i%ringCap] = ts[j], ss[j] // i%ringCap is i: no bounds check
			i = j
		}
		ts[i%ringCap], ss[i%ringCap] = at, s
		return
	}
	// From the head: the keys before the event's move one position back;
	// the tail's event is later, so the walk stops before it.
	q.head, q.tail = h-1, t // the ring keeps its tail
	i := (h - 1) % ringCap
	for {
		j := (i + 1) % ringCap
		if ts[j] > at {
			break
		}
		ts[i%ringCap], ss[i%ringCap] = ts[j], ss[j]
		i = j
	}
	ts[i%ringCap], ss[i%ringCap] = at, s
}

// toHeap moves the full ring's events into the heap, in order (a sorted
// slice is a heap).
func (q *Queue) toHeap() {
	q.heap = q.heap[:0]
	for i := q.head; i != q.tail; i++ {
		q.heap = append(q.heap, q.pool[q.slots[i%ringCap]])
	}
	q.head, q.tail = 0, 0
	q.heaped, q.hole = true, false
}

// toRing moves the heap's events, ringCap/2 or fewer, back into the ring
// in order.
func (q *Queue) toRing() {
	if q.hole {
		q.fill()
	}
	slices.SortFunc(q.heap, func(a, b Event) int {
		if less(&a, &b) {
			return -1
		}
		return 1
	})
	n := copy(q.pool[:], q.heap)
	for i, e := range q.pool[:n] {
		q.times[i] = e.At
	}
	q.resetSlots()
	q.head, q.tail = 0, uint(n)
	q.heap = q.heap[:0]
	q.heaped = false
}

// pastError is Push's error for an event scheduled before the current time.
func (q *Queue) pastError(e Event) error {
	return fmt.Errorf("des: event kind %d scheduled at %d ns, before the current time %d ns", e.Kind, e.At, q.now)
}

// Peek returns the next event without removing it.
func (q *Queue) Peek() (Event, bool) {
	if e := q.Front(); e != nil {
		return *e, true
	}
	return Event{}, false
}

// Front returns the next event, or nil when none is pending, as Peek
// without the copy: the event is the queue's own, valid until the next
// Push or Drop. It is inlined.
func (q *Queue) Front() *Event {
	if q.head != q.tail {
		return &q.pool[q.slots[q.head%ringCap]]
	}
	return q.frontHeap() // empty, or the events are in the heap
}

// frontHeap is Front for the heap (or an empty queue).
//
//go:noinline
func (q *Queue) frontHeap() *Event {
	if q.hole {
		q.fill()
	}
	if len(q.heap) == 0 {
		return nil
	}
	return &q.heap[0]
}

// NextAt returns the time of the next pending event, as Peek's At, without
// closing a root hole Pop or Drop left in the heap: the next Push still
// drops into it. With the root vacant the earliest remaining event is one
// of its children.
func (q *Queue) NextAt() (Time, bool) {
	if !q.heaped {
		return q.times[q.head%ringCap], q.head != q.tail
	}
	h := q.heap
	switch {
	case !q.hole:
		if len(h) == 0 {
			return 0, false
		}
		return h[0].At, true
	case len(h) == 1:
		return 0, false
	case len(h) == 2:
		return h[1].At, true
	}
	return min(h[1].At, h[2].At), true
}

// Pop removes and returns the next event and advances the clock to its time.
func (q *Queue) Pop() (Event, bool) {
	e, ok := q.Peek()
	if ok {
		q.Drop()
	}
	return e, ok
}

// Drop removes the event the last Peek returned, as Pop would, without
// copying it out: for a loop that peeks at each event before handling it.
// Call it only right after a Peek that found an event (Peek has closed
// the heap's root hole, so the event is at the root); it is inlined.
func (q *Queue) Drop() {
	if q.head != q.tail {
		q.now = q.times[q.head%ringCap]
		q.head++
		return
	}
	// The events are in the heap (back in the ring at the next Push
	// once few are left).
	q.now = q.heap[0].At
	if len(q.heap) == 1 {
		q.heap = q.heap[:0]
	} else {
		q.hole = true
	}
}

// fill closes the root hole with the last event.
func (q *Queue) fill() {
	q.hole = false
	n := len(q.heap) - 1
	last := q.heap[n]
	q.heap = q.heap[:n]
	q.place(last)
}

func less(a, b *Event) bool {
	if a.At != b.At {
		return a.At < b.At
	}
	return a.Seq < b.Seq
}

// climb puts e into the hole at i or, moving down the events it goes
// before, higher on the path to the root.
func (q *Queue) climb(i int, e Event) {
	h := q.heap
	for i > 0 {
		p := (i - 1) / 2
		if !less(&e, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
}

// place puts e into the hole at the root of a non-empty heap (the hole's
// slot counts in len(q.heap)): the smaller child moves up into the hole
// down to a leaf, then e climbs back up to its place.
func (q *Queue) place(e Event) {
	h := q.heap
	n := len(h)
	if n == 2 { // one other event (one instance's step end and the next arrival)
		if less(&h[1], &e) {
			h[0], h[1] = h[1], e
		} else {
			h[0] = e
		}
		return
	}
	i := 0
	hole := &h[0]
	for {
		r := 2*i + 2
		if r >= n {
			if r == n { // an only child, the last event
				*hole = h[r-1]
				i = r - 1
			}
			break
		}
		kids := h[r-1 : r+1]
		k := 0
		if less(&kids[1], &kids[0]) {
			k = 1
		}
		*hole = kids[k]
		hole = &kids[k]
		i = r - 1 + k
	}
	q.climb(i, e)
}
