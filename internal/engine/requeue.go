package engine

// requeueFront puts a preempted request back at the front of the waiting
// queue, but behind the requests there whose prefix was loaded from a
// lower tier (stLoaded). Those hold their blocks already and are admitted
// without waiting for memory (admitLoaded); a preempted request ahead of
// them could wait for exactly the blocks they hold, with nothing running
// to free any: a stall. LoadDone puts loaded requests at the front, so
// they are the leading entries; there are at most as many as loads ended
// since the last batch was formed.
func (e *Engine) requeueFront(slot int32) {
	var stack [8]int32
	loaded := stack[:0]
	for e.waiting.len() > 0 && e.slots[e.waiting.front()].state == stLoaded {
		loaded = append(loaded, e.waiting.popFront())
	}
	e.waiting.pushFront(slot)
	for i := len(loaded) - 1; i >= 0; i-- {
		e.waiting.pushFront(loaded[i])
	}
}
