package engine

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
