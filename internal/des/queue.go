package des

import "fmt"

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

// Queue is a min-heap of events ordered by (At, Seq) with a monotone clock.
// The zero value is ready to use.
//
// (At, Seq) is a total order (Seq is unique), so the order in which events
// come out does not depend on the heap's shape, only on the keys. Two
// things keep a pop cheap when many events are pending (one step end per
// instance of a cluster):
//
//   - Pop leaves the root empty (a hole) instead of refilling it at once.
//     An event loop nearly always schedules something while it handles
//     the event it popped (an instance's next step end), and the next Push
//     drops its event into the hole and sifts it down: one pass through
//     the heap instead of a sift-down for the pop and a sift-up for the
//     push. Peek or Pop refill a hole still open with the last event.
//   - A hole is sifted down bottom-up: the smaller child moves up into it
//     level by level to a leaf (one comparison per level), and the event
//     to place climbs back from there. The event placed is usually late
//     (the heap's last one, or a step end a whole step ahead), so it climbs
//     little, where the top-down sift compared it at every level too.
type Queue struct {
	heap []Event // heap[0] is vacant while hole is set
	hole bool
	seq  int64
	now  Time
}

// Now is the time of the most recently popped event (0 before the first).
func (q *Queue) Now() Time { return q.now }

// Len is the number of pending events.
func (q *Queue) Len() int {
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
	if q.hole {
		q.hole = false
		q.place(e)
		return nil
	}
	q.heap = append(q.heap, e)
	q.climb(len(q.heap)-1, e)
	return nil
}

// pastError is Push's error for an event scheduled before the current time.
func (q *Queue) pastError(e Event) error {
	return fmt.Errorf("des: event kind %d scheduled at %d ns, before the current time %d ns", e.Kind, e.At, q.now)
}

// Peek returns the next event without removing it.
func (q *Queue) Peek() (Event, bool) {
	if q.hole {
		q.fill()
	}
	if len(q.heap) == 0 {
		return Event{}, false
	}
	return q.heap[0], true
}

// NextAt returns the time of the next pending event, as Peek's At, without
// closing a root hole Pop or Drop left: the next Push still drops into it.
// With the root vacant the earliest remaining event is one of its
// children.
func (q *Queue) NextAt() (Time, bool) {
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
	if q.hole {
		q.fill()
	}
	n := len(q.heap)
	if n == 0 {
		return Event{}, false
	}
	e := q.heap[0]
	if n == 1 {
		q.heap = q.heap[:0]
	} else {
		q.hole = true
	}
	q.now = e.At
	return e, true
}

// Drop removes the event the last Peek returned, as Pop would, without
// copying it out: for a loop that peeks at each event before handling it.
// Call it only right after a Peek that found an event (Peek has closed
// the root hole, so the event is at the root); it is inlined.
func (q *Queue) Drop() {
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
