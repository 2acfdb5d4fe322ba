package engine

// requeueFront puts a preempted request back at the front of the waiting
// queue, but behind the requests there whose prefix was loaded from a
// lower tier (stLoaded). Those hold their blocks already and are admitted
// without waiting for memory (admitLoaded); a preempted request ahead of
// them could wait for exactly the blocks they hold, with nothing running
// to free any: a stall. LoadDone puts loaded requests at the front, so
// they are the leading entries; there are at most as many as loads ended
// since the last batch was formed.
//
// Under the priority policy the request re-enters by its priority and
// arrival instead (vLLM's PriorityRequestQueue.prepend_request).
func (e *Engine) requeueFront(slot int32) {
	if e.waiting.prio {
		e.waitAdd(e.waitKey(slot))
		return
	}
	var stack [8]int32
	loaded := stack[:0]
	for e.waiting.len() > 0 && e.slots[e.waiting.front()].state == stLoaded {
		loaded = append(loaded, e.waitPopFront())
	}
	e.waitPushFront(slot)
	for i := len(loaded) - 1; i >= 0; i-- {
		e.waitPushFront(loaded[i])
	}
}

// waitKey is the request in slot's place in the priority order: its
// priority, its arrival at the cluster and its id (vLLM orders by
// priority, then arrival_time, then request id).
func (e *Engine) waitKey(slot int32) waitKey {
	s := &e.slots[slot]
	return waitKey{priority: s.prio, slot: slot, arrival: s.rec.Arrival, id: s.rec.ID}
}
