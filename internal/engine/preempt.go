package engine

// preempt frees a running request's blocks and puts it back at the front of
// the waiting queue (behind loaded prefixes, see requeueFront); it will
// recompute its prompt and outputs so far.
func (e *Engine) preempt(slot int32) {
	s := &e.slots[slot]
	e.notePrivate(s)
	e.release(s)
	s.computed, s.committed = 0, 0
	s.rec.Preemptions++
	s.state = stWaiting
	e.waitingTokens += int64(s.numTokens())
	e.preempted++
	e.requeueFront(slot)
}

// release drops the request's references to its blocks.
func (e *Engine) release(s *seq) {
	if err := e.pool.Release(s.blocks); err != nil {
		e.fail(err)
	}
	s.blocks = s.blocks[:0]
}
