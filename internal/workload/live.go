package workload

import (
	"errors"
	"io"
)

// ErrNotYet is returned by a real-time source's Next when it has no entry
// now but may have one later (Live). A simulation then waits to be told
// to read again instead of ending its workload.
var ErrNotYet = errors.New("workload: no entry yet")

// Live is a Source fed while a simulation runs, for a driver that turns
// requests received in real time into arrivals: Add appends a plain
// request, Next hands the requests out in order, returns ErrNotYet when
// none is waiting and io.EOF after Close. Ids are assigned from 0 in the
// order requests are added, as a trace reader assigns them in file order.
// Arrival times must not decrease. A Live is not safe for concurrent use:
// the goroutine that owns the simulation owns it.
type Live struct {
	one    singles
	queue  []Request // queue[head:] are waiting
	head   int
	nextID int64
	last   int64
	closed bool
}

// Add appends a plain request arriving at r.Arrival and returns its id.
// An arrival earlier than the previous one is moved to the previous one.
func (l *Live) Add(r Request) int64 {
	r.ID = l.nextID
	l.nextID++
	r.Arrival = max(r.Arrival, l.last)
	l.last = r.Arrival
	l.queue = append(l.queue, r)
	return r.ID
}

// Close ends the source: Next returns io.EOF once the queue is empty.
func (l *Live) Close() { l.closed = true }

// Next implements Source.
func (l *Live) Next() (Entry, error) {
	if l.head == len(l.queue) {
		l.queue, l.head = l.queue[:0], 0
		if l.closed {
			return Entry{}, io.EOF
		}
		return Entry{}, ErrNotYet
	}
	r := l.queue[l.head]
	l.queue[l.head] = Request{}
	l.head++
	return l.one.entry(r), nil
}

// Release implements Releaser.
func (l *Live) Release(e Entry) { l.one.release(e) }
