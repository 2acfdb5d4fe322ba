package engine

// preempt frees a running request's blocks and puts it back at the front of
// the waiting queue (behind loaded prefixes, see requeueFront); it will
// recompute its prompt and outputs so far. With
// a swap space (Config.SwapBlocks) it swaps the request's KV out instead
// when the space can take it (swap.go).
func (e *Engine) preempt(slot int32, now int64) {
	s := &e.slots[slot]
	e.preemptions++
	if e.cfg.SwapBlocks > 0 && e.swapOut(slot, s, now) {
		s.rec.Preemptions++
		e.preempted++
		return
	}
	e.notePrivate(s)
	e.release(s)
	s.computed, s.committed = 0, 0
	s.redo = true
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

// Preemptions is the number of preemptions (recompute or swap) this
// instance has made so far. Every one is counted in exactly one request's
// final record (metrics.Record.Preemptions).
func (e *Engine) Preemptions() int64 { return e.preemptions }
