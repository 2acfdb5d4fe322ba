package engine

import "fmt"

// check verifies the engine's accounting. It is called after every batch
// formation and every step when Config.CheckInvariants is on:
//   - the running set respects max_num_seqs and the step the token budget;
//   - every running request has been scheduled (its record says when),
//     is in the running list or the decode lane, not both, and lane
//     entries are consistent;
//   - every request holds at least the blocks its computed tokens need, and
//     queued ones (waiting, in the handoff queue) hold none;
//   - pinned blocks and decode reservations match their counters;
//   - the blocks referenced by requests equal the pool's used blocks (each
//     block referenced once per holder), so blocks are conserved;
//   - periodically, the pool's full structural check.
func (e *Engine) check(budgetLeft int32) error {
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
		total += e.flights[n-1].lane // one token per lane member
	}
	if total > e.cfg.MaxNumBatchedTokens {
		return fmt.Errorf("batch of %d tokens exceeds max_num_batched_tokens %d", total, e.cfg.MaxNumBatchedTokens)
	}
	e.checks++
	full := e.checks%256 == 0
	var held map[int32]int32
	if full {
		held = make(map[int32]int32, 64)
	}
	pinned, reserved, inFlight, queued, running := 0, 0, 0, 0, 0
	var refs int64
	for slot := range e.slots {
		s := &e.slots[slot]
		switch s.state {
		case stFree, stWaiting, stHandoff, stSwapped:
			if len(s.blocks) != 0 {
				return fmt.Errorf("request %d in state %s holds %d blocks", s.rec.ID, s.state, len(s.blocks))
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
			if need := cdiv(int(computed), e.cfg.BlockSize); len(s.blocks) < need {
				return fmt.Errorf("request %d holds %d blocks for %d computed tokens (needs %d)", s.rec.ID, len(s.blocks), computed, need)
			}
		case stPinned:
			pinned += len(s.blocks)
		}
		if s.state == stPrefilled {
			pinned += len(s.blocks)
		}
		if s.state == stRunning {
			running++
		}
		if s.inLane() {
			if s.state != stRunning || int(s.laneAt) >= len(e.lane) || e.lane[s.laneAt] != int32(slot) ||
				e.laneOff[s.laneAt] != int64(s.computed)-s.joinTick || s.due <= e.tick || s.due-s.joinTick >= laneWindow {
				return fmt.Errorf("request %d: inconsistent decode-lane entry (state %s, index %d of %d)", s.rec.ID, s.state, s.laneAt, len(e.lane))
			}
		}
		if s.inFlight {
			inFlight++
			if s.state != stRunning {
				return fmt.Errorf("request %d in a batch in flight is in state %s", s.rec.ID, s.state)
			}
		}
		if s.state == stReserved || s.state == stReady {
			reserved++
		}
		if s.state == stHandoff {
			queued++
		}
		refs += int64(len(s.blocks))
		if full {
			for _, b := range s.blocks {
				held[b]++
			}
		}
	}
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
	if len(e.flights) > e.pp() {
		return fmt.Errorf("%d batches in flight exceed %d pipeline stages", len(e.flights), e.pp())
	}
	if running != e.numRunning() {
		return fmt.Errorf("%d requests are running but the running list and the decode lane hold %d", running, e.numRunning())
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
	for _, slot := range e.running {
		if e.slots[slot].inLane() {
			return fmt.Errorf("request %d is both in the running list and in the decode lane", e.slots[slot].rec.ID)
		}
	}
	if refs != e.pool.TotalRefs() {
		return fmt.Errorf("requests hold %d block references but the pool counts %d", refs, e.pool.TotalRefs())
	}
	if pinned != e.pinned {
		return fmt.Errorf("pinned requests hold %d blocks but the pinned count is %d", pinned, e.pinned)
	}
	if queued != e.hqLen {
		return fmt.Errorf("%d requests are in state %s but the admission queue holds %d", queued, stHandoff, e.hqLen)
	}
	if full {
		n := 0
		for slot := e.hqHead; slot >= 0 && n <= e.hqLen; slot = e.slots[slot].qNext {
			if e.slots[slot].state != stHandoff {
				return fmt.Errorf("admission queue links slot %d in state %s", slot, e.slots[slot].state)
			}
			n++
		}
		if n != e.hqLen {
			return fmt.Errorf("admission queue links %d slots but counts %d", n, e.hqLen)
		}
	}
	if e.cfg.SwapBlocks > 0 {
		if err := e.checkSwap(); err != nil {
			return err
		}
	}
	if reserved != e.reservedSeqs {
		return fmt.Errorf("%d requests hold decode reservations but the count is %d", reserved, e.reservedSeqs)
	}
	if e.numRunning()+e.reservedSeqs > e.cfg.MaxNumSeqs {
		return fmt.Errorf("%d running and %d reserved exceed max_num_seqs %d", e.numRunning(), e.reservedSeqs, e.cfg.MaxNumSeqs)
	}
	if !full {
		return nil
	}
	for b, n := range held {
		if got := e.pool.Refs(b); got != n {
			return fmt.Errorf("block %d has %d references but requests hold it %d times", b, got, n)
		}
	}
	if len(held) != e.pool.Used() {
		return fmt.Errorf("requests hold %d distinct blocks but the pool has %d in use", len(held), e.pool.Used())
	}
	return e.pool.Check()
}
