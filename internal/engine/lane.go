package engine

import "fmt"

// The decode lane: implicit progress for steady decoders.
//
// Most of a step's requests are steady decoders: they compute one token,
// have room for it in their last KV block, do not fill a block and do not
// finish. For them a step only adds one to their computed and generated
// counts, sets their last-token time to the step's end and perhaps raises
// their largest inter-token gap. The lane keeps that progress implicit, so
// that a steady step costs O(1) per lane member in a compact array (for the
// batch's context sum, minimum and maximum) instead of a visit to every
// request's slot in form and again in FinishBatch.
//
// A lane member's stored counters are those of the moment it joined: with
// tick the number of batches finished, its true computed and generated
// counts are the stored ones plus tick-joinTick (computed one more while a
// batch is in flight), its last token came at the end of the latest batch
// (prevEnd), and its largest gap is the larger of the stored one and the
// gaps between consecutive batch ends since it joined (gapMax).
//
// A request joins when a batch it emitted a token in finishes and it is a
// steady decoder for at least the next batch. At joining, the engine
// computes the first batch that needs it explicitly (due): the one whose
// forming must allocate a block, whose end fills a block (prefix-cache
// commit) or whose end is its last token; due is capped to laneWindow-1
// batches ahead so that gapMax covers a member's whole stay. Before that
// batch is formed the member leaves the lane (its counters are brought up to
// date) and is handled by the ordinary code; it joins again after.
//
// The running list holds only explicit requests, in admission order;
// order stamps keep that order when a member leaves the lane. Lane members
// are scheduled after the explicit requests in a batch, which changes
// nothing the engine reports: a member needs no block, fills none and
// does not finish, so only the step's token budget could tell the order
// apart, and form flushes the lane (makes every member explicit again,
// restoring the exact admission-order walk) whenever the explicit
// requests' demand could exhaust the budget or the free blocks. The lane
// is off with pipeline parallelism and on prefill instances.

// laneWindow bounds a member's stay in the lane between explicit visits
// (batches); a power of two.
const laneWindow = 256

// laneOn reports whether the lane is used on this engine.
func (e *Engine) laneOn() bool { return !e.noLane }

// laneRuledOut reports whether the engine's configuration rules the lane out
// (New records it in noLane).
func (e *Engine) laneRuledOut() bool {
	return e.pp() != 1 || e.prefill || e.cfg.NoDecodeLane || e.specOn() || e.hybrid()
}

// numRunning is the number of requests in the running set, explicit and in
// the lane.
func (e *Engine) numRunning() int { return len(e.running) + len(e.lane) }

// inLane reports whether s progresses implicitly.
func (s *seq) inLane() bool { return s.laneAt >= 0 }

// laneComputed is the computed count of lane member s now.
func (e *Engine) laneComputed(s *seq) int32 {
	c := s.computed + int32(e.tick-s.joinTick)
	if len(e.flights) > 0 {
		c++ // the batch in flight holds every member
	}
	return c
}

// laneRecord writes the lane member's last-token time and largest gap into
// its record without changing its state.
func (e *Engine) laneRecord(s *seq) {
	s.rec.LastToken, s.rec.MaxITL = s.lastToken, s.maxITL
	if e.tick > s.joinTick {
		s.rec.LastToken = e.prevEnd
		s.rec.MaxITL = max(s.maxITL, e.gapsSince(s.joinTick))
	}
}

// gapsSince is the largest gap between consecutive batch ends among the
// batches finished after batch number t (at most laneWindow-1 of them).
func (e *Engine) gapsSince(t int64) int64 { return e.gaps.since(t, e.tick) }

// join puts the running request in slot, which emitted a token in the batch
// that just finished, into the lane if it is a steady decoder for at least
// the next batch. It reports whether it did.
func (e *Engine) join(slot int32) bool {
	s := &e.slots[slot]
	if s.state != stRunning || s.computed+1 != s.numTokens() {
		return false
	}
	bs := e.blockSize
	t := e.tick
	alloc := t + int64(s.nblocks)*int64(bs) - int64(s.computed) + 1 // forming it allocates
	due := t + int64(s.output-s.generated)                          // its end is the last token
	if e.caching && !e.laneCommitsNext(s) {
		// Its end fills a block the lane cannot commit (lanefill.go).
		due = min(due, t+int64((s.committed+1)*bs-s.computed))
	}
	due = min(due, t+laneWindow-1)
	if alloc >= due {
		alloc = -1 // the member leaves the lane first
	}
	if due < t+2 {
		return false
	}
	if alloc > t {
		if s.tailed && alloc-t <= int64(bs) {
			e.countAllocs(s, t, alloc) // counted by the lane (lanefill.go)
		} else {
			e.tickNodes.push(&e.laneTick(alloc).named, slot) // allocated by the lane (lanefill.go)
		}
	}
	s.laneAt = int32(len(e.lane))
	s.joinTick, s.due = t, due
	off := int64(s.computed) - t
	if len(e.lane) == 0 {
		e.laneLo, e.laneHi, e.laneStale = off, off, false
		e.laneOrd, e.laneOrdStale = s.order, false
	} else {
		e.laneLo, e.laneHi = min(e.laneLo, off), max(e.laneHi, off)
		e.laneOrd = max(e.laneOrd, s.order) // an upper bound while stale
	}
	e.lane = append(e.lane, slot)
	e.laneOff = append(e.laneOff, off)
	e.laneSum += off
	e.tickNodes.push(&e.laneTick(due).due, slot)
	return true
}

// leave brings lane member s up to date and takes it out of the lane (it
// is not put back in the running list).
func (e *Engine) leave(s *seq) {
	e.settleAllocs(s)
	k := e.tick - s.joinTick
	if k > 0 {
		s.computed += int32(k)
		s.generated += int32(k)
		s.lastToken = e.prevEnd
		s.maxITL = max(s.maxITL, e.gapsSince(s.joinTick))
		e.laneCommit(s, s.computed)
	}
	i, last := s.laneAt, int32(len(e.lane)-1)
	off := e.laneOff[i]
	e.laneSum -= off
	if off == e.laneLo || off == e.laneHi {
		e.laneStale = true // recomputed when the next batch needs them
	}
	if s.order == e.laneOrd {
		e.laneOrdStale = true
	}
	if i != last {
		moved := e.lane[last]
		e.lane[i], e.laneOff[i] = moved, e.laneOff[last]
		e.slots[moved].laneAt = i
	}
	e.lane, e.laneOff = e.lane[:last], e.laneOff[:last]
	s.laneAt = -1
}

// leaveDue takes out of the lane the members the batch about to be formed
// must handle explicitly and puts them back in the running list in
// admission order.
func (e *Engine) leaveDue() {
	next := e.tick + 1
	sorted := len(e.running)
	if e.laneTick(next).due == 0 {
		return
	}
	due := e.tickNodes.take(&e.laneTick(next).due, e.laneBuf[:0])
	for _, slot := range due {
		s := &e.slots[slot]
		if !s.inLane() || s.due != next {
			continue // left earlier (the lane was flushed, or due changed)
		}
		e.leave(s)
		e.running = append(e.running, slot)
	}
	e.laneBuf = due
	e.mergeRunning(sorted)
}

// flush makes every lane member explicit again, the running list in
// admission order.
func (e *Engine) flush() {
	sorted := len(e.running)
	for len(e.lane) > 0 {
		slot := e.lane[len(e.lane)-1]
		e.leave(&e.slots[slot])
		e.running = append(e.running, slot)
	}
	e.mergeRunning(sorted)
}

// mergeRunning restores the admission order of the running list whose
// first n entries are in order and the rest (requests back from the lane)
// are not: it sorts the rest and merges the two runs.
func (e *Engine) mergeRunning(n int) {
	run := e.running
	if len(run) == n {
		return
	}
	order := func(slot int32) int64 { return e.slots[slot].order }
	tail := run[n:]
	for i := 1; i < len(tail); i++ { // insertion sort: few, often in order
		for j := i; j > 0 && order(tail[j]) < order(tail[j-1]); j-- {
			tail[j], tail[j-1] = tail[j-1], tail[j]
		}
	}
	if n == 0 || order(run[n-1]) < order(tail[0]) {
		return
	}
	merged := e.mergeBuf[:0]
	i, j := 0, n
	for i < n && j < len(run) {
		if order(run[i]) < order(run[j]) {
			merged = append(merged, run[i])
			i++
		} else {
			merged = append(merged, run[j])
			j++
		}
	}
	merged = append(merged, run[i:n]...)
	merged = append(merged, run[j:]...)
	copy(run, merged)
	e.mergeBuf = merged
}

// laneFits reports whether walking the explicit running requests after
// the lane's members changes nothing: every block they could need fits
// in the free blocks (no request can be preempted), and the requests
// admitted before the last member can take their whole chunks with the
// lane's one token per member within the budget (the members then get
// their tokens in admission order too, and the requests admitted after
// every member get what is left either way).
func (e *Engine) laneFits(budget int32) bool {
	tokens, blocks := int64(len(e.lane)), e.laneBlocksDue()
	bs := e.blockSize
	for _, slot := range e.running {
		s := &e.slots[slot]
		if s.state != stRunning {
			continue
		}
		n := e.laneDemand(s)
		tokens += int64(n)
		if room := s.nblocks * bs; s.computed+n > room {
			blocks += cdiv(int(s.computed+n-room), int(bs))
		}
	}
	if blocks > e.pool.Free() {
		return false
	}
	if tokens <= int64(budget) || len(e.lane) == 0 {
		return tokens <= int64(budget)
	}
	last := e.laneLastOrder()
	tokens = int64(len(e.lane))
	for _, slot := range e.running {
		if s := &e.slots[slot]; s.state == stRunning && s.order < last {
			tokens += int64(e.laneDemand(s))
		}
	}
	return tokens <= int64(budget)
}

// laneDemand is the chunk explicit running request s asks for.
func (e *Engine) laneDemand(s *seq) int32 {
	n := s.numTokens() - s.computed
	if t := e.longPrefill; t > 0 && n > t {
		n = t
	}
	return n
}

// laneLastOrder is the largest admission order of a lane member (the
// lane must not be empty), kept as members join and recomputed only after
// the member holding it left.
func (e *Engine) laneLastOrder() int64 {
	if e.laneOrdStale {
		e.laneOrd = 0
		for _, slot := range e.lane {
			e.laneOrd = max(e.laneOrd, e.slots[slot].order)
		}
		e.laneOrdStale = false
	}
	return e.laneOrd
}

// laneBatch adds the lane members, one decode token each, to the batch.
// The offsets' sum is kept as members join and leave; their minimum and
// maximum too, recomputed only after an extreme one left.
func (e *Engine) laneBatch() {
	n := len(e.lane)
	if n == 0 {
		return
	}
	if e.laneStale {
		e.laneLo, e.laneHi = e.laneOff[0], e.laneOff[0]
		for _, o := range e.laneOff {
			e.laneLo, e.laneHi = min(e.laneLo, o), max(e.laneHi, o)
		}
		e.laneStale = false
	}
	lo, hi, sum, t := e.laneLo, e.laneHi, e.laneSum, e.tick
	b := &e.batch
	if b.NumDecode == 0 || int(lo+t) < b.DecodeKVMin {
		b.DecodeKVMin = int(lo + t)
	}
	b.DecodeKVMax = max(b.DecodeKVMax, int(hi+t))
	b.NumDecode += n
	b.DecodeKVSum += sum + int64(n)*t
}

// formLane brings the lane up to date for the batch being formed (its
// members due leave it; its block events are made, or it is flushed when
// the order of the walk could matter) and returns the budget its members
// leave to the explicit requests, which come after them.
func (e *Engine) formLane(budget int32) int32 {
	e.leaveDue()
	if e.laneFits(budget) {
		e.laneAllocate()
	} else {
		e.flush()
		e.laneBuf = e.tickNodes.take(&e.laneTick(e.tick+1).named, e.laneBuf[:0]) // every member has left
	}
	return budget - int32(len(e.lane))
}

// laneOnly forms the batch of the lane's members alone when that is all
// there is: no explicit running request, no member due to leave or
// allocating a named block, the blocks the counted members need free, and
// nothing waiting. It is what form's general path does then (leaveDue,
// laneFits, laneAllocate and laneBatch with nothing else to walk),
// without the walks; it returns the budget left and whether it applied.
func (e *Engine) laneOnly(budget int32) (int32, bool) {
	c := e.laneCount(e.tick + 1)
	if !e.laneOnlyFits(budget, c) {
		return 0, false
	}
	return e.laneOnlyForm(budget, c), true
}

// laneOnlyFits reports whether laneOnly applies, given that no explicit
// request runs: the lane's members alone fill the next batch, whose
// counts are c.
func (e *Engine) laneOnlyFits(budget int32, c *laneCount) bool {
	tk := e.laneTick(e.tick + 1)
	n := int32(len(e.lane))
	return n > 0 && n <= budget && tk.due == 0 && tk.named == 0 && int(c.allocs) <= e.pool.Free() &&
		e.queued == 0
}

// laneOnlyForm forms the batch laneOnlyFits allowed, whose counts are c,
// and returns the budget left.
func (e *Engine) laneOnlyForm(budget int32, c *laneCount) int32 {
	if tail := e.countedAllocate(e.tick+1, c); tail > 0 && !e.pool.AllocateTail(tail) {
		e.fail(fmt.Errorf("no %d free blocks for the decode lane's next tokens although they were counted free", tail))
	}
	e.laneBatch()
	return budget - int32(len(e.lane))
}
