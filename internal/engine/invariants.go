package engine

import "fmt"

// check verifies the engine's accounting. It is called after every batch
// formation and every step when Config.CheckInvariants is on:
//   - the running set respects max_num_seqs and the step the token budget;
//   - every running request holds exactly the blocks its computed tokens
//     need, and waiting ones hold none unless they are mid-admission;
//   - the blocks referenced by requests equal the pool's used blocks (each
//     block referenced once per holder), so blocks are conserved;
//   - periodically, the pool's full structural check.
func (e *Engine) check(budgetLeft int32) error {
	if len(e.running) > e.cfg.MaxNumSeqs {
		return fmt.Errorf("%d running requests exceed max_num_seqs %d", len(e.running), e.cfg.MaxNumSeqs)
	}
	if budgetLeft < 0 {
		return fmt.Errorf("batch exceeds the token budget by %d", -budgetLeft)
	}
	total := 0
	for _, t := range e.sched {
		total += int(t.tokens)
	}
	if total > e.cfg.MaxNumBatchedTokens {
		return fmt.Errorf("batch of %d tokens exceeds max_num_batched_tokens %d", total, e.cfg.MaxNumBatchedTokens)
	}
	held := make(map[int32]int32, 64)
	for _, slot := range e.running {
		s := &e.slots[slot]
		need := cdiv(int(s.computed), e.cfg.BlockSize)
		if len(s.blocks) != need {
			return fmt.Errorf("request %d holds %d blocks for %d computed tokens (needs %d)", s.rec.ID, len(s.blocks), s.computed, need)
		}
		for _, b := range s.blocks {
			held[b]++
		}
	}
	for i := 0; i < e.waiting.len(); i++ {
		s := &e.slots[e.waiting.at(i)]
		if len(s.blocks) != 0 {
			return fmt.Errorf("waiting request %d holds %d blocks", s.rec.ID, len(s.blocks))
		}
	}
	for b, n := range held {
		if got := e.pool.Refs(b); got != n {
			return fmt.Errorf("block %d has %d references but requests hold it %d times", b, got, n)
		}
	}
	if len(held) != e.pool.Used() {
		return fmt.Errorf("requests hold %d distinct blocks but the pool has %d in use", len(held), e.pool.Used())
	}
	if e.checks++; e.checks%256 == 0 {
		return e.pool.Check()
	}
	return nil
}
