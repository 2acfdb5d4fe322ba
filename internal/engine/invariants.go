package engine

import "fmt"

// The invariant check's slot walk (see check) runs at every call while
// there are at most checkAlways slots; beyond, it costs checkVisits slot
// visits per call on average for each slot above checkAlways.
const (
	checkAlways = 128
	checkVisits = 16
)

// CheckNow runs the invariant check with its slot walk, whatever the
// amortisation owes, when Config.CheckInvariants is on: a driver calls it
// on the state a run ends in, which the last amortised checks may not have
// walked. A violation is recorded as by a step (Err) and returned.
func (e *Engine) CheckNow(now int64) error {
	if !e.cfg.CheckInvariants || e.err != nil {
		return e.err
	}
	e.checkDebt = len(e.slots) // covers any slot count
	if err := e.check(0); err != nil {
		e.fail(fmt.Errorf("at the end of the run, t=%d ns: %w", now, err))
	}
	return e.err
}

// check verifies the engine's accounting. It is called after every batch
// formation and every step when Config.CheckInvariants is on:
//   - the running set respects max_num_seqs and the step the token budget;
//   - every running request has been scheduled (its record says when),
//     is in the running list or the decode lane, not both, and lane
//     entries are consistent;
//   - every request holds at least the blocks its computed tokens need, and
//     queued ones (waiting, in the handoff queue) hold none; a hybrid
//     model's local groups hold blocks for exactly the positions from the
//     window's first to the end of the request's full-attention table;
//   - the distinct blocks held by pinned requests, recounted from their
//     block lists, and decode reservations match their counters;
//   - the blocks referenced by requests (full-attention and local groups)
//     equal the pool's used blocks (each block referenced once per
//     holder), so blocks are conserved;
//   - periodically, the pool's full structural check.
//
// The checks of the batch, the decode lane and the running list cost
// O(max_num_seqs) and run every time. Those that walk every request slot
// (all the rest) cost O(slots), and slots include every queued request, so
// they are amortised: with n > checkAlways slots, each call adds
// checkVisits to a debt and the walk runs once the debt covers the
// n - checkAlways slots above checkAlways, then clears it. The walk thus
// runs at every call with up to checkAlways slots (unit tests, ordinary
// queues) and every ceil((n-checkAlways)/checkVisits) calls with more, at
// most about checkAlways + checkVisits slot visits per call however long
// the queues grow. What it verifies persists until repaired (a leaked
// block reference, a counter that drifted), so a violation is reported at
// most that many calls - 1 late, and CheckNow walks the final state. The
// pool's full check runs every 256th walk.
func (e *Engine) check(budgetLeft int32) error {
	if err := e.checkBatch(budgetLeft); err != nil {
		return err
	}
	if n := len(e.slots); n > checkAlways {
		e.checkDebt += checkVisits
		if e.checkDebt < n-checkAlways {
			return nil
		}
	}
	e.checkDebt = 0
	e.checks++
	full := e.checks%256 == 0
	var held map[int32]int32
	if full {
		held = make(map[int32]int32, 64)
	}
	var t slotTally
	if len(e.checkMark) != e.pool.Capacity() {
		e.checkMark = make([]uint32, e.pool.Capacity())
	}
	e.checkGen++
	if e.checkGen == 0 { // wrapped: old marks could read as current
		clear(e.checkMark)
		e.checkGen = 1
	}
	for slot := range e.slots {
		if err := e.checkSlot(slot, &e.slots[slot], &t, held); err != nil {
			return err
		}
	}
	if err := e.checkFlights(t.inFlight); err != nil {
		return err
	}
	if t.running != e.numRunning() {
		return fmt.Errorf("%d requests are running but the running list and the decode lane hold %d", t.running, e.numRunning())
	}
	if t.refs != e.pool.TotalRefs() {
		return fmt.Errorf("requests hold %d block references but the pool counts %d", t.refs, e.pool.TotalRefs())
	}
	if t.tail != e.pool.TailBlocks() {
		return fmt.Errorf("requests hold %d blocks in anonymous tails but the pool counts %d", t.tail, e.pool.TailBlocks())
	}
	if t.pinned != e.pinned {
		return fmt.Errorf("pinned requests hold %d distinct blocks but the pinned count is %d", t.pinned, e.pinned)
	}
	if t.queued != int(e.hqLen) {
		return fmt.Errorf("%d requests are in state %s but the admission queue holds %d", t.queued, stHandoff, e.hqLen)
	}
	if full {
		if err := e.checkHandoffQueue(); err != nil {
			return err
		}
	}
	if n := e.waiting.len() + e.ready.len() + e.swap.queue.len(); int(e.queued) != n {
		return fmt.Errorf("the waiting, ready and swapped queues hold %d requests but the count is %d", n, e.queued)
	}
	if e.cfg.SwapBlocks > 0 {
		if err := e.checkSwap(); err != nil {
			return err
		}
	}
	if t.reserved != int(e.reservedSeqs) {
		return fmt.Errorf("%d requests hold decode reservations but the count is %d", t.reserved, e.reservedSeqs)
	}
	if !full {
		return nil
	}
	return e.checkHeld(held)
}

// checkBatch runs check's O(max_num_seqs) part, on every call: the
// batch's size and token budget, the batches in flight, the decode lane
// and the running list.
func (e *Engine) checkBatch(budgetLeft int32) error {
	if e.numRunning()+len(e.zombies) > e.cfg.MaxNumSeqs {
		return fmt.Errorf("%d running requests exceed max_num_seqs %d", e.numRunning()+len(e.zombies), e.cfg.MaxNumSeqs)
	}
	if budgetLeft < 0 {
		return fmt.Errorf("batch exceeds the token budget by %d", -budgetLeft)
	}
	total := 0
	for _, t := range e.sched {
		total += int(t.tokens)
	}
	if n := len(e.flights); n > 0 {
		total += int(e.flights[n-1].lane) // one token per lane member
	}
	if total > e.cfg.MaxNumBatchedTokens {
		return fmt.Errorf("batch of %d tokens exceeds max_num_batched_tokens %d", total, e.cfg.MaxNumBatchedTokens)
	}
	if len(e.flights) > e.pp() {
		return fmt.Errorf("%d batches in flight exceed %d pipeline stages", len(e.flights), e.pp())
	}
	var offSum int64
	for _, o := range e.laneOff {
		offSum += o
		if !e.laneStale && (o < e.laneLo || o > e.laneHi) {
			return fmt.Errorf("decode-lane offset %d outside the kept range [%d, %d]", o, e.laneLo, e.laneHi)
		}
	}
	if offSum != e.laneSum {
		return fmt.Errorf("decode-lane offsets sum to %d but the kept sum is %d", offSum, e.laneSum)
	}
	if err := e.checkLaneCounts(); err != nil {
		return err
	}
	for _, slot := range e.running {
		if e.slots[slot].inLane() {
			return fmt.Errorf("request %d is both in the running list and in the decode lane", e.slots[slot].rec.ID)
		}
	}
	if e.numRunning()+int(e.reservedSeqs) > e.cfg.MaxNumSeqs {
		return fmt.Errorf("%d running and %d reserved exceed max_num_seqs %d", e.numRunning(), e.reservedSeqs, e.cfg.MaxNumSeqs)
	}
	return nil
}

// slotTally is what check's slot walk counts, to compare with the
// engine's counters.
type slotTally struct {
	pinned, reserved, inFlight, queued, running int
	refs                                        int64 // block references held
	tail                                        int   // blocks held in anonymous tails
}

// checkSlot verifies request slot s and adds it to the tally; held, when
// not nil (a full check), counts the references to each block.
func (e *Engine) checkSlot(slot int, s *seq, t *slotTally, held map[int32]int32) error {
	nblocks := s.nblocks // a counted lane member's, as leave would settle it
	if s.inLane() {
		nblocks, _ = e.laneSettled(s)
	}
	switch s.state {
	case stFree, stWaiting, stHandoff, stSwapped:
		if s.nblocks != 0 || len(s.blocks) != 0 {
			return fmt.Errorf("request %d in state %s holds %d blocks", s.rec.ID, s.state, s.nblocks)
		}
	case stRunning, stDone, stPrefilled, stReady, stLoading, stLoaded, stSwapOut, stSwapIn:
		if s.state == stRunning && s.rec.Scheduled < 0 {
			// form's decode path relies on it to skip the check.
			return fmt.Errorf("request %d is running but was never scheduled", s.rec.ID)
		}
		computed := s.computed
		if s.inLane() {
			computed = e.laneComputed(s)
		}
		if need := cdiv(int(computed), int(e.blockSize)); int(nblocks) < need {
			return fmt.Errorf("request %d holds %d blocks for %d computed tokens (needs %d)", s.rec.ID, nblocks, computed, need)
		}
	}
	tail := int(nblocks) - len(s.blocks)
	if err := e.checkTail(s, tail); err != nil {
		return err
	}
	t.tail += tail
	if e.hybrid() {
		if err := e.checkLocal(slot, s); err != nil {
			return err
		}
	}
	var local []int32
	if e.hybrid() && slot < len(e.loc) {
		local = e.loc[slot].ids
	}
	if s.state == stPinned || s.state == stPrefilled {
		t.pinned += len(local) + tail // a request's own: never shared
		// Distinct blocks: a shared prefix block pinned by several
		// requests counts once.
		for _, b := range s.blocks {
			if e.checkMark[b] != e.checkGen {
				e.checkMark[b] = e.checkGen
				t.pinned++
			}
		}
	}
	if s.state == stRunning {
		t.running++
	}
	if s.inLane() {
		if s.state != stRunning || int(s.laneAt) >= len(e.lane) || e.lane[s.laneAt] != int32(slot) ||
			e.laneOff[s.laneAt] != int64(s.computed)-s.joinTick || s.due <= e.tick || s.due-s.joinTick >= laneWindow {
			return fmt.Errorf("request %d: inconsistent decode-lane entry (state %s, index %d of %d)", s.rec.ID, s.state, s.laneAt, len(e.lane))
		}
	}
	if s.inFlight {
		t.inFlight++
		if s.state != stRunning {
			return fmt.Errorf("request %d in a batch in flight is in state %s", s.rec.ID, s.state)
		}
	}
	if s.state == stReserved || s.state == stReady {
		t.reserved++
	}
	if s.state == stHandoff {
		t.queued++
	}
	t.refs += int64(int(nblocks) + len(local))
	if held != nil {
		for _, b := range s.blocks {
			held[b]++
		}
		for _, b := range local {
			held[b]++
		}
	}
	return nil
}

// checkFlights verifies that the requests of pipelined batches in flight
// are marked in flight, inFlight of them, each in one batch.
func (e *Engine) checkFlights(inFlight int) error {
	scheduled := 0
	for _, f := range e.flights {
		if e.pp() == 1 {
			break // only pipelined batches are marked in flight
		}
		for _, sc := range f.sched {
			if !e.slots[sc.slot].inFlight {
				return fmt.Errorf("request %d in batch %d is not marked in flight", e.slots[sc.slot].rec.ID, f.id)
			}
		}
		scheduled += len(f.sched)
	}
	if scheduled != inFlight {
		// Some request is in two batches in flight (or marked without one).
		return fmt.Errorf("%d requests marked in flight but the %d batches in flight schedule %d", inFlight, len(e.flights), scheduled)
	}
	return nil
}

// checkHandoffQueue walks the admission queue's links: each slot on it is
// in the handoff state and the links count as many as hqLen.
func (e *Engine) checkHandoffQueue() error {
	n := 0
	for slot := e.hqHead; slot >= 0 && n <= int(e.hqLen); slot = e.slots[slot].qNext {
		if e.slots[slot].state != stHandoff {
			return fmt.Errorf("admission queue links slot %d in state %s", slot, e.slots[slot].state)
		}
		n++
	}
	if n != int(e.hqLen) {
		return fmt.Errorf("admission queue links %d slots but counts %d", n, e.hqLen)
	}
	return nil
}

// checkHeld compares the references held per block with the pool's, then
// runs the pool's structural check.
func (e *Engine) checkHeld(held map[int32]int32) error {
	for b, n := range held {
		if got := e.pool.Refs(b); got != n {
			return fmt.Errorf("block %d has %d references but requests hold it %d times", b, got, n)
		}
	}
	if len(held)+e.pool.TailBlocks() != e.pool.Used() {
		return fmt.Errorf("requests hold %d distinct named blocks and %d in anonymous tails but the pool has %d in use", len(held), e.pool.TailBlocks(), e.pool.Used())
	}
	return e.pool.Check()
}

// checkTail verifies s's anonymous tail (tail.go) of tail blocks: they come after
// the named ones and are private (after the shared blocks, with no copy
// remembered from a preemption) when prefix caching is on, and the engine
// allows tails at all.
func (e *Engine) checkTail(s *seq, tail int) error {
	switch {
	case tail < 0:
		return fmt.Errorf("request %d holds %d blocks but names %d", s.rec.ID, len(s.blocks)+tail, len(s.blocks))
	case (tail > 0) != s.tailed:
		return fmt.Errorf("request %d holds an anonymous tail of %d blocks but is marked tailed %v", s.rec.ID, tail, s.tailed)
	case tail == 0:
		return nil
	case e.tailsRuledOut():
		return fmt.Errorf("request %d holds an anonymous tail of %d blocks on an engine that names every block", s.rec.ID, tail)
	case e.caching && (!s.sharedDone || len(s.blocks) < int(s.shared) || len(s.owned) != 0):
		return fmt.Errorf("request %d holds an anonymous tail of %d blocks after %d named, %d shared (known: %v), %d remembered",
			s.rec.ID, tail, len(s.blocks), s.shared, s.sharedDone, len(s.owned))
	}
	return nil
}

// checkLaneCounts recounts the counted lane members' next allocations
// (lanefill.go), which must be within the counts ring's span, and compares
// them with the per-batch counts; the entries past the span stay zero.
func (e *Engine) checkLaneCounts() error {
	var counts [laneWindow]laneCount
	span := e.laneCountSpan()
	for _, slot := range e.lane {
		s := &e.slots[slot]
		if s.laneAlloc <= 0 {
			continue
		}
		if !s.tailed {
			return fmt.Errorf("request %d is a counted lane member without an anonymous tail", s.rec.ID)
		}
		next := e.laneNextAlloc(s)
		if next < 0 {
			continue
		}
		if formed := e.tick + int64(len(e.flights)); next <= formed || next > formed+span {
			return fmt.Errorf("request %d: counted lane allocation at batch %d, not in the %d batches after the %d formed", s.rec.ID, next, span, formed)
		}
		c := &counts[next&(span-1)]
		c.allocs++
		if s.laneCommitsAtNext(e.laneAllocsDone(s)) {
			c.commits++
		} else if s.laneLateCommitter {
			c.firsts++
		}
	}
	for i := range counts {
		if have := e.laneCounts.c[i]; have != counts[i] {
			return fmt.Errorf("counted lane allocations, commits and late committers' firsts of batch %d (mod %d) %v but the members' are %v",
				i, span, have, counts[i])
		}
	}
	return nil
}
