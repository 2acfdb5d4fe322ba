package engine

// waitQueue is the engine's waiting queue (vLLM's Scheduler.waiting, a
// RequestQueue of vllm/v1/core/sched/request_queue.py).
//
// Under the fcfs policy it is one deque in arrival order: new requests at
// the back, preempted ones and loaded prefixes at the front. Under the
// priority policy (Config.PriorityScheduling) requests are kept in a
// binary heap ordered by (priority, arrival, id), the order of vLLM's
// PriorityRequestQueue (Request.__lt__ in vllm/v1/request.py): a smaller
// priority value is served first, ties by earlier arrival. A preempted
// request re-enters by that order too (vLLM's prepend_request is a push
// there). Requests whose prefix was loaded from a lower KV tier (or
// swapped back in) hold blocks already and stay in the deque ahead of the
// heap under both policies, so that they can never stall behind a request
// waiting for exactly those blocks (see requeueFront).
type waitQueue struct {
	heap []waitKey
	fifo deque
	prio bool
}

// waitKey is a request's place in the priority order.
type waitKey struct {
	priority int32
	slot     int32
	arrival  int64
	id       int64
}

// before reports whether a is served before b under the priority policy.
func (a waitKey) before(b waitKey) bool {
	if a.priority != b.priority {
		return a.priority < b.priority
	}
	if a.arrival != b.arrival {
		return a.arrival < b.arrival
	}
	return a.id < b.id
}

func (q *waitQueue) len() int { return q.fifo.len() + len(q.heap) }

// front is the next request in order; the queue must not be empty.
func (q *waitQueue) front() int32 {
	if q.fifo.len() > 0 {
		return q.fifo.front()
	}
	return q.heap[0].slot
}

// popFront removes and returns the next request in order.
func (q *waitQueue) popFront() int32 {
	if q.fifo.len() > 0 {
		return q.fifo.popFront()
	}
	top := q.heap[0].slot
	q.removeAt(0)
	return top
}

// pushFront puts slot ahead of every request (a loaded prefix, or under
// fcfs a preempted request).
func (q *waitQueue) pushFront(slot int32) { q.fifo.pushFront(slot) }

// add queues a request by the policy: at the back under fcfs, by its key
// under priority.
func (q *waitQueue) add(k waitKey) {
	if !q.prio {
		q.fifo.pushBack(k.slot)
		return
	}
	q.heap = append(q.heap, k)
	q.up(len(q.heap) - 1)
}

// remove deletes slot from the queue and reports whether it was there. It
// costs O(len).
func (q *waitQueue) remove(slot int32) bool {
	if q.fifo.remove(slot) {
		return true
	}
	for i := range q.heap {
		if q.heap[i].slot == slot {
			q.removeAt(i)
			return true
		}
	}
	return false
}

// removeAt deletes heap entry i and restores the heap order.
func (q *waitQueue) removeAt(i int) {
	last := len(q.heap) - 1
	if i != last {
		q.heap[i] = q.heap[last]
	}
	q.heap = q.heap[:last]
	if i < last {
		q.down(i)
		q.up(i)
	}
}

func (q *waitQueue) up(i int) {
	h := q.heap
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *waitQueue) down(i int) {
	h := q.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// waitAdd, waitPopFront, waitPushFront and waitRemove are the waiting
// queue's add, popFront, pushFront and remove, keeping the engine's count
// of queued requests (Engine.queued).
func (e *Engine) waitAdd(k waitKey) {
	e.waiting.add(k)
	e.queued++
}

func (e *Engine) waitPopFront() int32 {
	e.queued--
	return e.waiting.popFront()
}

func (e *Engine) waitPushFront(slot int32) {
	e.waiting.pushFront(slot)
	e.queued++
}

func (e *Engine) waitRemove(slot int32) bool {
	if !e.waiting.remove(slot) {
		return false
	}
	e.queued--
	return true
}
