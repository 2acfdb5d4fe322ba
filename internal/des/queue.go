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
type Queue struct {
	heap []Event
	seq  int64
	now  Time
}

// Now is the time of the most recently popped event (0 before the first).
func (q *Queue) Now() Time { return q.now }

// Len is the number of pending events.
func (q *Queue) Len() int { return len(q.heap) }

// Push schedules e at e.At. Scheduling into the past is a programming error
// and is reported as an error rather than silently reordering time.
func (q *Queue) Push(e Event) error {
	if e.At < q.now {
		return fmt.Errorf("des: event kind %d scheduled at %d ns, before the current time %d ns", e.Kind, e.At, q.now)
	}
	q.seq++
	e.Seq = q.seq
	q.heap = append(q.heap, e)
	q.up(len(q.heap) - 1)
	return nil
}

// Peek returns the next event without removing it.
func (q *Queue) Peek() (Event, bool) {
	if len(q.heap) == 0 {
		return Event{}, false
	}
	return q.heap[0], true
}

// Pop removes and returns the next event and advances the clock to its time.
func (q *Queue) Pop() (Event, bool) {
	n := len(q.heap)
	if n == 0 {
		return Event{}, false
	}
	e := q.heap[0]
	q.heap[0] = q.heap[n-1]
	q.heap = q.heap[:n-1]
	if n > 1 {
		q.down(0)
	}
	q.now = e.At
	return e, true
}

func less(a, b *Event) bool {
	if a.At != b.At {
		return a.At < b.At
	}
	return a.Seq < b.Seq
}

func (q *Queue) up(i int) {
	h := q.heap
	for i > 0 {
		p := (i - 1) / 2
		if !less(&h[i], &h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *Queue) down(i int) {
	h := q.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && less(&h[r], &h[l]) {
			m = r
		}
		if !less(&h[m], &h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
