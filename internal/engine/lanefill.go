package engine

import "fmt"

// Block commits inside the decode lane.
//
// With prefix caching a request's block is offered to the cache at the end
// of the batch that fills it. For most decoders that block holds private
// content (a request whose token ids are unknown: from its first such
// block on every block is private), and its commit only marks the block,
// which the request holds, in the pool (kv.Pool.CommitPrivateBlocks): it
// reads nothing another request's commit writes and changes no count in
// an order-dependent way. Such a commit does not need the request to leave
// the lane: join registers the batch whose end fills the member's last
// block (fillRing), and laneFills commits it when that batch finishes,
// exactly as commitBlocks would have at the end of the same batch for an
// explicit request. Shared blocks (known token ids), blocks with a copy
// remembered from before a preemption, and a filling block that is not the
// member's last keep the member explicit for that batch, as before.

// laneCommits reports whether the next block s fills commits as plain
// private content: after the shared blocks, with no copy remembered from a
// preemption (commitBlocks' CommitPrivateBlocks path).
func (e *Engine) laneCommits(s *seq) bool {
	return s.sharedDone && s.committed >= s.shared && int(s.committed) >= len(s.owned)
}

// laneFills commits the blocks that lane members filled in the batch that
// just finished (tick).
func (e *Engine) laneFills() {
	b := &e.fillRing[e.tick&(laneWindow-1)]
	bs := int32(e.cfg.BlockSize)
	for _, slot := range *b {
		s := &e.slots[slot]
		// Entries of members that left the lane (or rejoined and were
		// registered again) are skipped: only a member holding a filled,
		// uncommitted block commits, once.
		if !s.inLane() || e.laneComputed(s) < (s.committed+1)*bs || !e.laneCommits(s) {
			continue
		}
		i := s.committed
		e.pool.CommitPrivateBlocks(s.blocks[i : i+1])
		s.committed = i + 1
	}
	*b = (*b)[:0]
}

// Block allocations inside the decode lane.
//
// A decoder whose next token starts a new block needs that block allocated
// when the batch is formed. When every block the batch needs fits in the
// free blocks (laneFits counts these too), no request can be preempted,
// and the order in which requests take free blocks changes only which
// block number each gets, not which cached content is evicted (the free
// queue's order) nor anything the engine reports. Such a member then need
// not leave the lane: join registers the batch whose forming allocates for
// it (allocRing), and laneAllocate, called by form before the explicit
// requests are walked, brings it up to date, allocates its block and lets
// it join again for the following batches. When the blocks could run short
// form flushes the lane instead and every request is walked explicitly, in
// admission order, as before.

// laneNeedsBlock reports whether lane member s needs a new block for its
// token of the batch being formed.
func (e *Engine) laneNeedsBlock(s *seq) bool {
	return s.inLane() && e.laneComputed(s) >= int32(len(s.blocks))*int32(e.cfg.BlockSize)
}

// laneBlocksDue counts the blocks the lane members need for the batch
// being formed (an upper bound: a member registered twice counts twice).
func (e *Engine) laneBlocksDue() int {
	n := 0
	for _, slot := range e.allocRing[(e.tick+1)&(laneWindow-1)] {
		if e.laneNeedsBlock(&e.slots[slot]) {
			n++
		}
	}
	return n
}

// laneAllocate allocates the blocks of the lane members that need one for
// the batch being formed; form calls it when laneFits holds, so every
// allocation succeeds. A member keeps its place in the lane and its
// counters; only the batches its new block brings are registered: the one
// whose end fills it (committed by the lane, or, for content the lane
// cannot commit, the member leaves the lane for it) and the one that
// allocates the block after it.
func (e *Engine) laneAllocate() {
	t := e.tick
	b := &e.allocRing[(t+1)&(laneWindow-1)]
	bs := int64(e.cfg.BlockSize)
	for _, slot := range *b {
		s := &e.slots[slot]
		if !e.laneNeedsBlock(s) {
			continue
		}
		var ok bool
		if s.blocks, ok = e.pool.Allocate(s.blocks, 1); !ok {
			e.fail(fmt.Errorf("request %d: no free block for its next token although the batch's blocks fit", s.rec.ID))
			continue
		}
		// The new block holds tokens from t+1's on: its last slot is
		// filled by batch t+bs, and batch t+bs+1 allocates the next.
		fill, alloc := t+bs, t+bs+1
		if e.cfg.PrefixCaching {
			if int(s.committed)+1 == len(s.blocks) && e.laneCommits(s) {
				if fill < s.due {
					r := &e.fillRing[fill&(laneWindow-1)]
					*r = append(*r, slot)
				}
			} else if fill < s.due {
				s.due = fill // explicit for the batch that fills it
				r := &e.dueRing[fill&(laneWindow-1)]
				*r = append(*r, slot)
			}
		}
		if alloc < s.due {
			r := &e.allocRing[alloc&(laneWindow-1)]
			*r = append(*r, slot)
		}
	}
	*b = (*b)[:0]
}
