package engine

import (
	"fmt"

	"github.com/servesim/servesim/internal/workload"
)

// Tiers is the KV storage below the GPU (package kvtier): it finds prefix
// blocks the GPU lacks, loads them, and takes newly computed full blocks.
// hashes are a request's chained block hashes; implementations must not
// retain them.
type Tiers interface {
	// Lookup returns the end block of the prefix a lower tier holds
	// beyond the first from blocks (from when none), within the first max
	// blocks, and the tier it is in.
	Lookup(inst int, hashes []uint64, from, max int) (end, tier int)
	// Load starts loading blocks [from, end) from tier for the request in
	// slot; the caller reports its end with LoadDone.
	Load(inst int, slot int32, hashes []uint64, from, end, tier int, now int64) error
	// Store offers blocks [from, to) just computed; promptBlocks is the
	// number of full blocks of the prompt.
	Store(inst int, hashes []uint64, from, to, promptBlocks int, now int64) error
	// Weight is what reusing a token held in tier saves relative to one
	// on the GPU, in [0, 1].
	Weight(inst, tier int) float64
	// Swap starts copying blocks of the request in slot out to host swap
	// space (out) or back in; the caller reports its end with SwapDone.
	Swap(inst int, slot int32, blocks int, out bool, now int64) error
}

// TieredPrefixTokens is how many of r's prompt tokens this instance could
// reuse now: those its GPU prefix cache holds (PrefixHitTokens) plus those
// a lower tier holds beyond them, weighted by what loading them saves
// over recomputing them (Tiers.Weight). It changes nothing.
func (e *Engine) TieredPrefixTokens(r *workload.Request) float64 {
	if !e.caching || len(r.InputIDs) < r.InputTokens {
		return 0
	}
	e.probe = PromptHashes(e.probe[:0], r.InputIDs, (r.InputTokens-1)/int(e.blockSize), int(e.blockSize))
	return e.TieredPrefixHit(r, e.probe)
}

// TieredPrefixHit is TieredPrefixTokens for a request whose prompt block
// hashes the caller computed (as for PrefixHit).
func (e *Engine) TieredPrefixHit(r *workload.Request, hashes []uint64) float64 {
	gpu := e.PrefixHit(r, hashes)
	if e.tiers == nil || !e.caching || len(r.InputIDs) < r.InputTokens {
		return float64(gpu)
	}
	bs := int(e.blockSize)
	n := (r.InputTokens - 1) / bs
	if n == 0 {
		return float64(gpu)
	}
	end, tier := e.tiers.Lookup(int(e.id), hashes[:n], gpu/bs, n)
	if end*bs <= gpu {
		return float64(gpu)
	}
	return float64(gpu) + float64(end*bs-gpu)*e.tiers.Weight(int(e.id), tier)
}

// loadStarted is admit's result for a request whose prefix is being loaded
// from a lower tier.
const loadStarted = -2

// SetTiers connects the engine to the KV tiers below its GPU (nil: none).
// Only prefix-caching engines use them.
func (e *Engine) SetTiers(t Tiers) { e.tiers = t }

// Loading is the number of requests whose prefix is being loaded from a
// lower tier.
func (e *Engine) Loading() int { return e.loading }

// startLoad takes a waiting request whose first hit blocks are on the GPU
// and blocks [hit, end) in a lower tier: it references the GPU hits and
// allocates blocks for the loaded ones plus its first chunk of compute (so
// that, once loaded, it can always be scheduled), and starts the load. It
// returns loadStarted, or -1 when the blocks are not free (state
// unchanged).
func (e *Engine) startLoad(slot int32, s *seq, hit, end, tier int, budget int32, now int64) int {
	bs := e.blockSize
	loaded := int32(end) * bs
	if !e.cfg.ChunkedPrefill && s.numTokens()-loaded > budget {
		return -1
	}
	n := e.chunk(s.numTokens()-loaded, budget)
	need := cdiv(int(loaded+n), int(e.blockSize)) - hit
	evictable := 0
	if hit > 0 {
		evictable = e.pool.EvictableBlocks(e.hits)
	}
	if need+evictable > e.pool.Free() {
		return -1
	}
	s.blocks = e.pool.AcquireBlocks(s.blocks, e.hits, int(s.numTokens()-1)/int(bs))
	s.nblocks = int32(len(s.blocks))
	if !e.allocBlocks(s, need) {
		e.fail(fmt.Errorf("request %d: %d blocks checked free but allocation failed", s.rec.ID, need))
		return -1
	}
	s.computed = int32(hit) * bs
	s.committed = int32(hit)
	s.state = stLoading
	s.loadStart = now
	s.rec.PrefixTier = int8(tier)
	s.loadEnd = int32(end)
	e.loading++
	if err := e.tiers.Load(int(e.id), slot, s.hashes, hit, end, tier, now); err != nil {
		e.fail(fmt.Errorf("request %d: %w", s.rec.ID, err))
	}
	return loadStarted
}

// LoadDone marks the lower-tier load of the request in slot as ended at
// now: its loaded blocks hold their content (and join the prefix cache),
// and it returns to the front of the waiting queue.
func (e *Engine) LoadDone(slot int32, now int64) error {
	s := &e.slots[slot]
	if s.state != stLoading {
		e.fail(fmt.Errorf("request %d: tier load done in state %s", s.rec.ID, s.state))
		return e.err
	}
	e.loading--
	s.computed = s.loadEnd * e.blockSize
	e.commitBlocks(s, now)
	s.rec.TierLoadNs += now - s.loadStart
	s.state = stLoaded
	s.enqueued = now
	e.waitPushFront(slot)
	e.waitingTokens += int64(s.numTokens())
	return e.err
}

// admitLoaded admits a request whose prefix was loaded. It holds blocks
// for the prefix and at least one more token, so it never waits for
// memory: when the blocks for a larger chunk are not free, its chunk is
// cut to the blocks it holds (see room).
func (e *Engine) admitLoaded(s *seq, budget int32) int {
	hitTokens := s.computed
	remaining := s.numTokens() - hitTokens
	if !e.cfg.ChunkedPrefill && remaining > budget {
		return -1
	}
	need := cdiv(int(hitTokens+e.chunk(remaining, budget)), int(e.blockSize)) - int(s.nblocks)
	if need > 0 && need <= e.pool.Free() {
		if !e.allocBlocks(s, need) {
			e.fail(fmt.Errorf("request %d: %d blocks checked free but allocation failed", s.rec.ID, need))
			return -1
		}
	}
	if s.rec.Scheduled < 0 {
		s.rec.CachedTokens = int(hitTokens)
	}
	return int(hitTokens)
}

// room is how many more tokens the blocks s holds can take.
func (e *Engine) room(s *seq) int32 {
	return s.nblocks*e.blockSize - s.computed
}
