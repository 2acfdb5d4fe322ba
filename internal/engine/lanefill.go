package engine

import (
	"fmt"
	"math/bits"
)

// Block commits inside the decode lane.
//
// With prefix caching a request's block is offered to the cache at the end
// of the batch that fills it. For most decoders that block holds private
// content (a request whose token ids are unknown: from its first such
// block on every block is private), and its commit only marks the block,
// which the request holds, in the pool (kv.Pool.CommitPrivateBlocks): it
// reads nothing another request's commit writes and changes no count in
// an order-dependent way, and nothing reads the mark of a held block
// until the block is released or tagged (a preemption). Such a commit does
// not need the request to leave the lane, nor to be made at the end of the
// batch that fills the block: the member's last block is committed
// (laneCommit) when the member next needs a block (laneAllocate, when the
// following batch is formed) or leaves the lane (leave: before it is
// released, preempted or handled explicitly), whichever comes first, so
// the lane registers nothing for it. Shared blocks (known token ids),
// blocks with a copy remembered from before a preemption, and a filling
// block that is not the member's last keep the member explicit for that
// batch, as before.

// laneCommits reports whether the next block s fills commits as plain
// private content: after the shared blocks, with no copy remembered from a
// preemption (commitBlocks' CommitPrivateBlocks path).
func (e *Engine) laneCommits(s *seq) bool {
	return s.sharedDone && s.committed >= s.shared && int(s.committed) >= len(s.owned)
}

// laneCommitsNext reports whether the lane commits the next block joining
// member s fills: plain private content (laneCommits) that is its last
// block, either now (the block being filled) or once the batch after the
// join has allocated it (every block s holds is full and committed: its
// next token starts a block, allocated before that block fills).
func (e *Engine) laneCommitsNext(s *seq) bool {
	return (s.committed+1 == s.nblocks || s.committed == s.nblocks) && e.laneCommits(s)
}

// laneCommit commits the last block of lane member s, computed tokens
// into its tokens, if a batch in the lane filled it (see above).
func (e *Engine) laneCommit(s *seq, computed int32) {
	i := s.committed
	if !e.caching || computed < (i+1)*e.blockSize ||
		i+1 != s.nblocks || !e.laneCommits(s) {
		return
	}
	if int(i) < len(s.blocks) {
		e.pool.CommitPrivateBlocks(s.blocks[i : i+1])
	} else {
		e.pool.CommitTail(1)
	}
	s.committed = i + 1
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
// it (laneTick.named), and laneAllocate, called by form before the explicit
// requests are walked, brings it up to date, allocates its block and lets
// it join again for the following batches. When the blocks could run short
// form flushes the lane instead and every request is walked explicitly, in
// admission order, as before.

// laneNeedsBlock reports whether lane member s needs a new block for its
// token of the batch being formed.
func (e *Engine) laneNeedsBlock(s *seq) bool {
	return s.inLane() && s.laneAlloc <= 0 && e.laneComputed(s) >= s.nblocks*e.blockSize
}

// laneBlocksDue counts the blocks the lane members need for the batch
// being formed (an upper bound: a member registered twice counts twice).
func (e *Engine) laneBlocksDue() int {
	next := e.tick + 1
	tk := e.laneTick(next)
	n := int(e.laneCount(next).allocs)
	if tk.named != 0 {
		e.tickNodes.each(tk.named, func(slot int32) {
			if e.laneNeedsBlock(&e.slots[slot]) {
				n++
			}
		})
	}
	return n
}

// laneAllocate allocates the blocks of the lane members that need one for
// the batch being formed; form calls it when laneFits holds, so every
// allocation succeeds. A member keeps its place in the lane and its
// counters. The block it filled is committed first (laneCommit); of the
// batches its new block brings only the one that allocates the block after
// it is registered (counted when the member's blocks are a tail), and, for
// content the lane cannot commit, the one whose end fills it (the member
// leaves the lane for it).
func (e *Engine) laneAllocate() {
	t := e.tick
	bs := int64(e.blockSize)
	// The members' tail blocks are taken together at the end: a tail's
	// blocks have no ids, so which member takes which free block changes
	// nothing (the pool evicts the same content whatever the split, and
	// the members' order does not matter either).
	tail := e.countedAllocate(t+1, e.laneCount(t+1))
	named := e.tickNodes.take(&e.laneTick(t+1).named, e.laneBuf[:0])
	for _, slot := range named {
		s := &e.slots[slot]
		if !s.inLane() || s.laneAlloc > 0 {
			continue // left, or a counted member now (a registration of an earlier stay)
		}
		computed := e.laneComputed(s)
		if computed < s.nblocks*int32(bs) {
			continue
		}
		e.laneCommit(s, computed)
		if s.tailed || e.tailOK(s) {
			s.tailed = true
			s.nblocks++
			tail++
		} else if !e.allocBlocks(s, 1) {
			e.fail(fmt.Errorf("request %d: no free block for its next token although the batch's blocks fit", s.rec.ID))
			continue
		}
		// The new block holds tokens from t+1's on: its last slot is
		// filled by batch t+bs, and batch t+bs+1 allocates the next.
		fill, alloc := t+bs, t+bs+1
		if e.caching && fill < s.due && (s.committed+1 != s.nblocks || !e.laneCommits(s)) {
			s.due = fill // explicit for the batch that fills it
			e.tickNodes.push(&e.laneTick(fill).due, slot)
		}
		if alloc < s.due {
			if s.tailed {
				e.countAllocs(s, s.joinTick, alloc) // a counted member from now on
			} else {
				e.tickNodes.push(&e.laneTick(alloc).named, slot)
			}
		}
	}
	if tail > 0 && !e.pool.AllocateTail(tail) {
		e.fail(fmt.Errorf("no %d free blocks for the decode lane's next tokens although the batch's blocks fit", tail))
	}
	e.laneBuf = named
}

// Counted members.
//
// A member whose blocks are an anonymous tail (tail.go) needs no visit at
// its allocations: its block goes to the tail, which has no ids, and the
// block it filled, committed then, is private content, which the pool
// only counts. With prefix caching such a member commits at every
// allocation in the lane (laneCommitter) or, when every block it held was
// full and committed as it joined, at every allocation but the first
// (laneLateCommitter: the first only brings the block it fills next). Its
// allocations, at batches joinTick+laneAlloc and every BlockSize batches
// after, are counted per batch in laneCounts (allocs; those that commit
// also in commits, and a late committer's first in firsts): forming a
// batch takes that many tail blocks and moves the counts BlockSize batches
// on, a late committer's among the commits from then on, and leave brings
// the member's block and commit counts up to date from the number of its
// allocation batches formed while it was in the lane, and takes its next
// allocation out of the counts.
//
// The counts of a batch are registered at most BlockSize batches before
// it is formed, so a ring of laneCountSpan entries (a power of two, the
// block size's or above) holds them: a few cache lines an engine, which
// every batch touches. A member that joins with its first allocation
// further ahead (a decode instance's reserved headroom) has its block
// named for it (laneTick.named) and becomes a counted member at that
// allocation (laneAllocate), like a member whose blocks turn into a tail
// in the lane.

// laneCountRing is the counted members' block events of the batches to
// come, batch n's at c[n&mask], whose first mask+1 entries are used
// (laneCountSpan).
type laneCountRing struct {
	mask uint8 // laneCountSpan()-1, set with the configuration's copies (initHot)
	c    [laneWindow]laneCount
}

// laneCountSpan is the number of batches the counts ring (laneCounts)
// covers: the smallest power of two at least BlockSize, at most
// laneWindow (no member stays in the lane longer; its one allocation
// there is not moved on).
func (e *Engine) laneCountSpan() int64 {
	return min(int64(1)<<bits.Len32(uint32(e.blockSize-1)), laneWindow)
}

// laneCount is the counted members' block events of batch n.
func (e *Engine) laneCount(n int64) *laneCount {
	return &e.laneCounts.c[n&int64(e.laneCounts.mask)]
}

// countAllocs makes lane member s, which joined after batch t, with its
// next allocation at batch alloc (in the span of the counts ring, as are
// those at most BlockSize batches ahead) a counted member.
func (e *Engine) countAllocs(s *seq, t, alloc int64) {
	s.laneAlloc = int32(alloc - t)
	s.laneCommitter = e.caching && s.committed+1 == s.nblocks
	s.laneLateCommitter = e.caching && s.committed == s.nblocks && e.laneCommits(s)
	c := e.laneCount(alloc)
	c.allocs++
	if s.laneCommitter {
		c.commits++
	} else if s.laneLateCommitter {
		c.firsts++
	}
}

// countedAllocate makes the counted members' allocations (and commits)
// of batch n, being formed, whose counts are at (laneCount(n)), and
// returns how many tail blocks they need.
func (e *Engine) countedAllocate(n int64, at *laneCount) int {
	k, c, f := at.allocs, at.commits, at.firsts
	if k == 0 {
		return 0
	}
	*at = laneCount{}
	if bs := int64(e.blockSize); bs < laneWindow {
		to := e.laneCount(n + bs) // at itself when BlockSize is a power of two
		to.allocs += k
		to.commits += c + f // late committers commit from their second on
	}
	e.pool.CommitTail(int(c))
	return int(k)
}

// laneCommitsAtNext reports whether counted member s, m of whose
// allocations are made, commits at its next one.
func (s *seq) laneCommitsAtNext(m int64) bool {
	return s.laneCommitter || s.laneLateCommitter && m > 0
}

// laneAllocsDone is how many counted allocations member s has had in the
// lane: its allocation batches formed since the first (every batch
// finished, and the one in flight if any; a member leaves the lane only
// between batches, before the next one is formed).
func (e *Engine) laneAllocsDone(s *seq) int64 {
	first := s.joinTick + int64(s.laneAlloc)
	formed := e.tick + int64(len(e.flights))
	if s.laneAlloc <= 0 || formed < first {
		return 0
	}
	return (formed-first)/int64(e.blockSize) + 1
}

// laneSettled is lane member s's block and commit counts as leave would
// set them.
func (e *Engine) laneSettled(s *seq) (nblocks, committed int32) {
	m := int32(e.laneAllocsDone(s))
	nblocks, committed = s.nblocks+m, s.committed
	if s.laneCommitter {
		committed += m
	} else if s.laneLateCommitter && m > 0 {
		committed += m - 1
	}
	return nblocks, committed
}

// laneNextAlloc is the batch of counted member s's next allocation, as
// registered in laneCounts, or -1 when none is registered (BlockSize is
// not below laneWindow and its one allocation is made).
func (e *Engine) laneNextAlloc(s *seq) int64 {
	m := e.laneAllocsDone(s)
	if m > 0 && int64(e.blockSize) >= laneWindow {
		return -1
	}
	return s.joinTick + int64(s.laneAlloc) + m*int64(e.blockSize)
}

// settleAllocs brings counted member s, leaving the lane, up to date: its
// block and commit counts, and its next allocation out of the counts.
func (e *Engine) settleAllocs(s *seq) {
	if s.laneAlloc <= 0 {
		return
	}
	if next := e.laneNextAlloc(s); next >= 0 {
		c := e.laneCount(next)
		c.allocs--
		if s.laneCommitsAtNext(e.laneAllocsDone(s)) {
			c.commits--
		} else if s.laneLateCommitter {
			c.firsts--
		}
	}
	s.nblocks, s.committed = e.laneSettled(s)
	s.laneAlloc, s.laneCommitter, s.laneLateCommitter = 0, false, false
}
