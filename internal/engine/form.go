package engine

import (
	"fmt"

	"github.com/servesim/servesim/internal/perf"
)

// form builds the batch at time now from what was known at time formed and
// returns the token budget left.
func (e *Engine) form(now, formed int64) int32 {
	e.sched = e.sched[:0]
	e.batch = perf.Batch{}
	e.preempted = 0
	budget := e.maxBatched
	if e.laneOn() {
		if len(e.running) == 0 && !e.recount {
			if left, ok := e.laneOnly(budget); ok {
				return left
			}
		}
		budget = e.formLane(budget)
	}
	stalled := false // a running request lacks blocks until a batch in flight ends

	// 1. Running requests, in admission order. Most are steady decoders:
	// one token, room for it in their last block. They take a short path
	// that accumulates the decode aggregates in locals (merged into the
	// batch below; sum, minimum and maximum do not depend on the order) and
	// skips the first-scheduled check (a running request has been
	// scheduled before: check verifies it).
	bs := e.blockSize
	spec := e.specOn()
	// The short path: not for verifications, nor for a hybrid model's
	// decoder whose window slides in this step (steadyLocal).
	short, hybrid := !spec && !e.hybrid(), !spec && e.hybrid()
	var dn, dmin, dmax int
	var dsum int64
	for i := 0; i < len(e.running) && budget > 0; i++ {
		slot := e.running[i]
		s := &e.slots[slot]
		if s.state != stRunning || s.inFlight {
			continue // a request in a batch in flight waits for its end
		}
		if ctx := s.computed; ctx+1 == s.prompt+s.generated && ctx < s.nblocks*bs && (short || hybrid && e.steadyLocal(slot, ctx)) {
			c := int(ctx)
			if dn == 0 || c < dmin {
				dmin = c
			}
			if c > dmax {
				dmax = c
			}
			dn++
			dsum += int64(c)
			e.sched = append(e.sched, scheduled{slot: slot, tokens: 1})
			s.computed = ctx + 1
			budget--
			continue
		}
		n := e.chunk(s.numTokens()-s.computed, budget)
		verify := spec && s.generated > 0 && !s.redo && s.computed+1 == s.numTokens()
		if verify {
			n = e.verifyTokens(s, budget)
		}
		if n <= 0 {
			continue
		}
		slots := n
		if verify {
			// vLLM's num_lookahead_tokens: room for the K proposals the
			// drafter writes after this step's verification.
			slots += int32(e.cfg.Spec.K)
		}
		at, ok, wait := e.makeRoom(slot, s, slots, now, i)
		if e.refund > 0 {
			// A request scheduled earlier in this step was preempted
			// (priority policy): its tokens are back in the budget and
			// the batch is recounted after the loop.
			budget += e.refund
			e.refund = 0
		}
		i = at
		if !ok {
			stalled = wait
			break
		}
		if verify {
			e.scheduleVerify(slot, n)
		} else {
			e.schedule(slot, n, formed)
		}
		budget -= n
	}
	if e.recount {
		e.rebatch() // it counts the short path's decodes too
		dn = 0
	}
	e.laneBatch()
	e.addDecodes(dn, dmin, dmax, dsum)

	// 2. Waiting requests, only if nothing was preempted (or if preemption
	// left the batch empty, which only happens when the head request must
	// restart alone).
	if (e.preempted == 0 || len(e.sched) == 0) && !stalled && // (no preemption with lane members)
		e.queued > 0 {
		budget = e.formWaiting(now, formed, budget)
	}

	return budget
}

// makeRoom grows request slot's blocks by n tokens, preempting running
// requests not in flight while memory is short (see victim). It reports
// whether the request got its room and, when it did not, whether it
// stalls (it waits for swap-outs or batches in flight to end) rather than
// having preempted itself. at is the request's index in the running list
// and the index returned is its index after the preemptions (smaller when
// a victim came before it, which only the priority policy chooses).
func (e *Engine) makeRoom(slot int32, s *seq, n int32, now int64, at int) (int, bool, bool) {
	for !e.grow(slot, s, n) {
		if e.swapWait() {
			// Swap-outs in flight will free blocks: wait for them.
			return at, false, true
		}
		// With batches in flight, rather than preempting itself the
		// request waits for them to end.
		vi := e.victim()
		victim := e.running[vi]
		if victim == slot && len(e.flights) > 0 {
			return at, false, true
		}
		e.running = append(e.running[:vi], e.running[vi+1:]...)
		if vi < at {
			at--
			e.unschedule(victim)
		}
		e.preempt(victim, now)
		if victim == slot {
			return at, false, false
		}
	}
	return at, true, false
}

// addDecodes merges into the batch the decode aggregates form's short
// path accumulated: dn decoders whose contexts span dmin to dmax tokens
// and sum to dsum.
func (e *Engine) addDecodes(dn, dmin, dmax int, dsum int64) {
	if dn == 0 {
		return
	}
	b := &e.batch
	if b.NumDecode == 0 || dmin < b.DecodeKVMin {
		b.DecodeKVMin = dmin
	}
	if dmax > b.DecodeKVMax {
		b.DecodeKVMax = dmax
	}
	b.NumDecode += dn
	b.DecodeKVSum += dsum
}

// formWaiting schedules requests not yet running, transferred ones first
// and then the waiting queue's, within budget, and returns the budget left.
func (e *Engine) formWaiting(now, formed int64, budget int32) int32 {
	// Transferred requests first: their slot was reserved.
	for e.ready.len() > 0 && budget > 0 && e.numRunning()+len(e.zombies) < int(e.maxSeqs) {
		slot := e.ready.front()
		s := &e.slots[slot]
		if s.enqueued > formed {
			break
		}
		e.ready.popFront()
		e.queued--
		e.reservedSeqs--
		s.state = stRunning
		e.running = append(e.running, slot)
		s.order = e.nextOrder
		e.nextOrder++
		n := e.chunk(s.numTokens()-s.computed, budget)
		e.schedule(slot, n, formed)
		budget -= n
	}
	if e.swap.queue.len() > 0 {
		e.swapIns(now)
	}
	for e.waiting.len() > 0 && budget > 0 && e.numRunning()+len(e.zombies)+int(e.reservedSeqs) < int(e.maxSeqs) {
		slot := e.waiting.front()
		s := &e.slots[slot]
		if s.enqueued > formed {
			if e.waiting.prio && e.waiting.fifo.len() == 0 {
				// Under the priority policy a request ordered after
				// it may have been visible: set it aside for this
				// batch (vLLM had not received it yet).
				e.unseen = append(e.unseen, e.waitPopFront())
				continue
			}
			break // not yet visible when this batch was formed
		}
		hit := e.admit(slot, s, budget, now)
		if hit == loadStarted {
			// Its prefix is being loaded from a lower tier; it comes
			// back to the front of the queue when the load ends.
			e.waitPopFront()
			e.waitingTokens -= int64(s.numTokens())
			continue
		}
		if hit < 0 {
			break
		}
		e.waitPopFront()
		e.waitingTokens -= int64(s.numTokens())
		s.state = stRunning
		e.running = append(e.running, slot)
		s.order = e.nextOrder
		e.nextOrder++
		// admit allocated the blocks of its chunk, or (a loaded
		// prefix, memory short) kept it to the blocks it holds.
		n := min(e.chunk(s.numTokens()-s.computed, budget), e.room(s))
		e.schedule(slot, n, formed)
		budget -= n
	}
	for _, slot := range e.unseen {
		e.waitAdd(e.waitKey(slot))
	}
	e.unseen = e.unseen[:0]
	return budget
}

// releaseZombies frees the slots and blocks of requests that finished in
// the previous step, once the batch formed without knowing it is out.
func (e *Engine) releaseZombies() {
	for _, slot := range e.zombies {
		s := &e.slots[slot]
		switch s.state {
		case stDone:
			e.release(slot)
			e.freeSlot(slot)
		case stPrefilled:
			s.state = stPinned
		}
	}
	e.zombies = e.zombies[:0]
}

// chunk caps a request's remaining tokens by the long-prefill threshold and
// the step budget.
func (e *Engine) chunk(remaining, budget int32) int32 {
	n := remaining
	if t := e.longPrefill; t > 0 && n > t {
		n = t
	}
	if n > budget {
		n = budget
	}
	return n
}

// grow allocates the blocks s needs to hold computed+n tokens. The common
// case, room left in the last block, costs a multiplication, no division.
func (e *Engine) grow(slot int32, s *seq, n int32) bool {
	if e.hybrid() {
		return e.growHybrid(slot, s, n)
	}
	bs := e.blockSize
	room := s.nblocks * bs
	if s.computed+n <= room {
		return true
	}
	return e.allocBlocks(s, cdiv(int(s.computed+n-room), int(bs)))
}

// admit tries to take a waiting request in: prefix-cache hits first, then
// blocks for its first chunk. It returns the number of hit tokens, or -1
// when the request cannot be admitted now (state unchanged).
func (e *Engine) admit(slot int32, s *seq, budget int32, now int64) int {
	if s.state == stLoaded {
		return e.admitLoaded(s, budget)
	}
	if e.swap.queue.len() > 0 {
		return -1 // no new prompt while requests are swapped out (vLLM v0)
	}
	bs := e.blockSize
	hitBlocks, maxBlocks := 0, 0
	if e.caching && s.computed == 0 {
		maxBlocks = int((s.numTokens() - 1) / bs)
		hitBlocks = e.match(s, maxBlocks)
		if e.tiers != nil {
			if end, tier := e.tiers.Lookup(int(e.id), s.hashes, hitBlocks, maxBlocks); end > hitBlocks {
				return e.startLoad(slot, s, hitBlocks, end, tier, budget, now)
			}
		}
	}
	hitTokens := int32(hitBlocks) * bs
	remaining := s.numTokens() - hitTokens
	if !e.cfg.ChunkedPrefill && remaining > budget {
		return -1
	}
	n := e.chunk(remaining, budget)
	need := cdiv(int(hitTokens+n), int(e.blockSize)) - hitBlocks
	evictable := 0
	if hitBlocks > 0 {
		evictable = e.pool.EvictableBlocks(e.hits)
	}
	local := 0
	if e.hybrid() {
		local = e.cfg.Local.Groups * (hitBlocks + need - int(e.skipBlocks(hitTokens)))
	}
	if need+evictable+local > e.pool.Free() {
		return -1
	}
	if e.caching && s.computed == 0 {
		s.blocks = e.pool.AcquireBlocks(s.blocks, e.hits, maxBlocks)
		s.nblocks = int32(len(s.blocks))
	}
	if !e.allocBlocks(s, need) {
		e.fail(fmt.Errorf("request %d: %d blocks checked free but allocation failed", s.rec.ID, need))
		return -1
	}
	if e.hybrid() {
		e.startLocal(slot, hitTokens)
		e.extendLocal(slot, int(s.nblocks))
	}
	s.computed = hitTokens
	s.committed = int32(hitBlocks)
	if s.rec.Scheduled < 0 {
		s.rec.CachedTokens = int(hitTokens)
	}
	return int(hitTokens)
}

// schedule puts n tokens of slot into the batch and accounts them for the
// latency predictor. Blocks must already be allocated. formed is when the
// scheduler formed the batch: a request's first one stamps its Scheduled
// time, as vLLM stamps `scheduled_ts` inside `Scheduler.schedule()`. With
// async scheduling that is the start of the step running while the batch
// was formed, one step before the batch is launched; the request's tokens
// still start at the launch, so only the queue delay moves.
func (e *Engine) schedule(slot, n int32, formed int64) {
	s := &e.slots[slot]
	e.sched = append(e.sched, scheduled{slot: slot, tokens: n})
	if s.rec.Scheduled < 0 {
		s.rec.Scheduled = formed
		if e.prefill {
			e.firstSched = append(e.firstSched, s.rec.ID)
		}
	}
	b := &e.batch
	ctx := int(s.computed)
	if n == 1 {
		if b.NumDecode == 0 || ctx < b.DecodeKVMin {
			b.DecodeKVMin = ctx
		}
		b.NumDecode++
		b.DecodeKVSum += int64(ctx)
		if ctx > b.DecodeKVMax {
			b.DecodeKVMax = ctx
		}
	} else {
		b.PrefillSeqs++
		b.PrefillTokens += int(n)
		b.PrefillKV += ctx
	}
	s.computed += n
}
