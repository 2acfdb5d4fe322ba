package engine

import "fmt"

// Swap preemption, vLLM v0's legacy preemption_mode "swap" (vLLM v1 only
// recomputes): a preempted request's KV blocks are copied to a swap space
// in host memory instead of being discarded, and copied back before it
// runs again, so nothing is recomputed.
//
//   - preempt (Config.SwapBlocks > 0) starts the swap-out copy of the
//     blocks holding the victim's computed tokens; the victim (stSwapOut)
//     keeps its GPU blocks until the copy ends (they cannot be reused
//     before), then releases them and joins the swapped queue
//     (stSwapped, FIFO), holding only its swap-space blocks.
//   - A running request short of blocks while swap-outs are in flight
//     waits for them (the batch stops there) instead of preempting more.
//   - Swapped requests come before waiting ones, as in vLLM v0, whose
//     scheduler admits no new prompt while any request is swapped out:
//     when forming a batch, the head of the swapped queue takes GPU
//     blocks for its KV and the rest of its prompt (or its next token)
//     when they are free (head-of-line) and starts the swap-in copy
//     (stSwapIn); when it ends the swap space is freed and the request
//     goes to the front of the waiting queue holding its blocks
//     (stLoaded, as after a tier load), ahead of everything else.
//     Requests at the head of the waiting queue that hold blocks are
//     admitted before any swap-in starts, so blocks held in the queue
//     never wait behind blocks they keep from being freed.
//   - When the swap space cannot take the victim's blocks, it is
//     preempted by recompute instead (counted in SwapStats.Fallbacks;
//     vLLM v0 aborted the engine then).

// SwapStats count swap preemptions.
type SwapStats struct {
	Outs, Ins      int64 // swap-out and swap-in copies started
	Fallbacks      int64 // preemptions that recomputed because the swap space was full
	BlocksOut      int64 // blocks copied out
	BlocksIn       int64 // blocks copied in
	OutNs, InNs    int64 // summed durations of the finished copies
	OutsDone       int64 // swap-out copies finished
	InsDone        int64 // swap-in copies finished
	PeakUsedBlocks int   // most swap-space blocks held at once
}

// swapState is the engine's swap space and the copies it waits for.
type swapState struct {
	queue   deque // stSwapped requests, in order of swap-out end (first: see Engine)
	used    int   // swap-space blocks held by swapped requests
	gpuOut  int   // GPU blocks held by requests whose swap-out is in flight
	copying int   // requests in stSwapOut or stSwapIn
	stats   SwapStats
}

// SwapTotals returns the swap preemption counters.
func (e *Engine) SwapTotals() SwapStats { return e.swap.stats }

// Swapping is the number of requests swapped out or whose swap copy is
// in flight.
func (e *Engine) Swapping() int { return e.swap.copying + e.swap.queue.len() }

// SwapUsed is the number of swap-space blocks held now.
func (e *Engine) SwapUsed() int { return e.swap.used }

// swapOut preempts the running request in slot by swapping its KV out,
// and reports whether it did (false: the swap space is full, or there is
// nothing to keep; the caller recomputes).
func (e *Engine) swapOut(slot int32, s *seq, now int64) bool {
	nb := cdiv(int(s.computed), int(e.blockSize))
	if nb == 0 || e.tiers == nil {
		return false
	}
	if e.swap.used+nb > e.cfg.SwapBlocks {
		e.swap.stats.Fallbacks++
		return false
	}
	e.swap.used += nb
	e.swap.stats.PeakUsedBlocks = max(e.swap.stats.PeakUsedBlocks, e.swap.used)
	e.swap.gpuOut += int(s.nblocks)
	e.swap.copying++
	e.swap.stats.Outs++
	e.swap.stats.BlocksOut += int64(nb)
	s.loadEnd = int32(nb) // swap-space blocks held
	s.loadStart = now
	s.state = stSwapOut
	if err := e.tiers.Swap(int(e.id), slot, nb, true, now); err != nil {
		e.fail(fmt.Errorf("request %d: %w", s.rec.ID, err))
	}
	return true
}

// swapWait reports whether a running request short of blocks should wait
// for the swap-outs in flight to release theirs rather than preempt more.
func (e *Engine) swapWait() bool { return e.swap.gpuOut > 0 }

// SwapDone marks the swap copy of the request in slot as ended at now
// (out: a swap-out).
func (e *Engine) SwapDone(slot int32, out bool, now int64) error {
	s := &e.slots[slot]
	want := stSwapIn
	if out {
		want = stSwapOut
	}
	if s.state != want {
		e.fail(fmt.Errorf("request %d: swap copy (out: %t) done in state %s", s.rec.ID, out, s.state))
		return e.err
	}
	e.swap.copying--
	// The engine itself moved the request: visible to the next batch
	// formed, even one formed (async) before the copy ended, so that no
	// batch is left empty waiting for a wake-up that will not come.
	s.enqueued = 0
	if out {
		e.swap.stats.OutNs += now - s.loadStart
		e.swap.stats.OutsDone++
		e.swap.gpuOut -= int(s.nblocks)
		e.release(slot)
		s.state = stSwapped
		e.swap.queue.pushBack(slot)
		e.queued++
	} else {
		e.swap.stats.InNs += now - s.loadStart
		e.swap.stats.InsDone++
		e.swap.used -= int(s.loadEnd)
		s.loadEnd = 0
		// The copied blocks hold its KV again: offer them to the prefix
		// cache as they were before the swap-out.
		s.committed = 0
		e.commitBlocks(s, now)
		s.state = stLoaded
		e.waitPushFront(slot)
		e.waitingTokens += int64(s.numTokens())
	}
	return e.err
}

// swapIns starts the swap-ins of the requests at the head of the swapped
// queue whose blocks are free, unless the waiting queue's head holds
// blocks (it is admitted first).
func (e *Engine) swapIns(now int64) {
	if e.waiting.len() > 0 && e.slots[e.waiting.front()].state == stLoaded {
		return
	}
	for e.swap.queue.len() > 0 {
		slot := e.swap.queue.front()
		s := &e.slots[slot]
		if !e.startSwapIn(slot, s, now) {
			return
		}
		e.swap.queue.popFront()
		e.queued--
	}
}

// startSwapIn takes GPU blocks for a swapped request's KV and the rest of
// its prompt (its next token when decoding), so that it can be scheduled
// once the copy ends, and starts copying its KV back. It reports false
// when the blocks are not free (state unchanged).
func (e *Engine) startSwapIn(slot int32, s *seq, now int64) bool {
	need := cdiv(int(s.numTokens()), int(e.blockSize))
	if need > e.pool.Free() {
		return false
	}
	s.blocks, s.nblocks, s.tailed = s.blocks[:0], 0, false
	if !e.allocBlocks(s, need) {
		e.fail(fmt.Errorf("request %d: %d blocks checked free but allocation failed", s.rec.ID, need))
		return false
	}
	e.swap.copying++
	e.swap.stats.Ins++
	e.swap.stats.BlocksIn += int64(s.loadEnd)
	s.state = stSwapIn
	s.loadStart = now
	if err := e.tiers.Swap(int(e.id), slot, int(s.loadEnd), false, now); err != nil {
		e.fail(fmt.Errorf("request %d: %w", s.rec.ID, err))
	}
	return true
}

// checkSwap verifies the swap accounting: the swap space held equals the
// blocks of the requests swapping or swapped, within [0, SwapBlocks]; the
// GPU blocks awaiting a swap-out's end equal those its requests hold.
func (e *Engine) checkSwap() error {
	used, gpuOut, copying, swapped := 0, 0, 0, 0
	for i := range e.slots {
		s := &e.slots[i]
		switch s.state {
		case stSwapOut:
			gpuOut += int(s.nblocks)
			copying++
			used += int(s.loadEnd)
		case stSwapIn:
			copying++
			used += int(s.loadEnd)
		case stSwapped:
			used += int(s.loadEnd)
			swapped++
		}
	}
	if used != e.swap.used || used < 0 || used > e.cfg.SwapBlocks {
		return fmt.Errorf("swapped requests hold %d swap-space blocks, counted %d, capacity %d", used, e.swap.used, e.cfg.SwapBlocks)
	}
	if swapped != e.swap.queue.len() {
		return fmt.Errorf("%d requests swapped out but the swapped queue holds %d", swapped, e.swap.queue.len())
	}
	if gpuOut != e.swap.gpuOut || copying != e.swap.copying {
		return fmt.Errorf("swap-outs in flight hold %d GPU blocks (counted %d); %d swap copies (counted %d)", gpuOut, e.swap.gpuOut, copying, e.swap.copying)
	}
	return nil
}
