package perf

import (
	"math"
	"sync/atomic"
)

// opCacheLimit bounds the token and sequence counts whose op times are
// cached: above it (rare; larger than any usual max_num_batched_tokens)
// times are computed each time.
const opCacheLimit = 4096

// opCache memoises the op times that depend on a single count: every op
// but attention depends only on the step's tokens (padded ones, or real
// ones for the MoE block), except lm_head and the sampler, which depend
// only on its sequences. A step's time is
// then one table row plus the attention model, instead of a dozen
// math.Pow calls. Rows are filled lazily; entries are atomic (0 = not yet
// computed) so the predictor stays safe for concurrent use, and every
// writer stores the same deterministic value. The cached value is the one
// OpNs returns, bit for bit, so step times are unchanged.
type opCache struct {
	byTokens []atomic.Uint64 // [tokens*tokCols + col[op index]]
	bySeqs   []atomic.Uint64 // [seqs*seqCols + col[op index]]
	key      []opKey         // per op index
	col      []int           // per op index: its column in its table
	tokCols  int
	seqCols  int
	// splits memoises the split-KV heuristic (Roofline.splits) of
	// pure-decode attention by its exact inputs; see cachedSplits.
	splits [splitCacheSize]atomic.Uint64
}

// splitCacheSize is the number of entries of the split-KV memo: a
// direct-mapped table, so a collision only costs a recomputation.
const (
	splitCacheBits = 12
	splitCacheSize = 1 << splitCacheBits
)

// Split-KV memo entries pack the key (work units u < 2^20, KV blocks per
// unit < 2^35, both whole numbers) and the split count (1..128) into one
// word, so that an entry is read and written atomically: a reader sees
// either a whole entry or none (0), never a torn one.
const (
	splitUnitBits  = 20
	splitBlockBits = 35
)

// opKey says what an op's time depends on.
type opKey uint8

const (
	keyBatch  opKey = iota // the whole batch (attention): not cached
	keyTokens              // the step's tokens with CUDA-graph padding
	keyMoE                 // the step's real tokens (the MoE block)
	keySeqs                // the step's sequences
)

func newOpCache(ops []OpUse) *opCache {
	c := &opCache{key: make([]opKey, len(ops)), col: make([]int, len(ops))}
	for i, u := range ops {
		switch u.Op {
		case OpAttention:
			c.key[i] = keyBatch
		case OpLMHead, OpSampler:
			c.key[i], c.col[i] = keySeqs, c.seqCols
			c.seqCols++
		case OpMoE:
			c.key[i], c.col[i] = keyMoE, c.tokCols
			c.tokCols++
		default:
			c.key[i], c.col[i] = keyTokens, c.tokCols
			c.tokCols++
		}
	}
	c.byTokens = make([]atomic.Uint64, (opCacheLimit+1)*c.tokCols)
	c.bySeqs = make([]atomic.Uint64, (opCacheLimit+1)*c.seqCols)
	return c
}

// stepCounts are the counts a step's cached op times are keyed by,
// computed once per step.
type stepCounts struct {
	padded, tokens, rows int
}

func countsOf(b *Batch) stepCounts {
	return stepCounts{padded: paddedTokens(b), tokens: b.Tokens(), rows: b.Rows()}
}

// opNs is r.OpNs(r.ops[i].Op, b), from the cache when it holds it; k
// holds b's counts.
func (r *Roofline) opNs(i int, b *Batch, k stepCounts) float64 {
	c := r.cache
	var n, cols int
	var tab []atomic.Uint64
	switch c.key[i] {
	case keyTokens:
		n, cols, tab = k.padded, c.tokCols, c.byTokens
	case keyMoE:
		n, cols, tab = k.tokens, c.tokCols, c.byTokens
	case keySeqs:
		n, cols, tab = k.rows, c.seqCols, c.bySeqs
	default:
		return r.OpNs(r.ops[i].Op, b)
	}
	if n < 0 || n > opCacheLimit {
		return r.OpNs(r.ops[i].Op, b)
	}
	e := &tab[n*cols+c.col[i]]
	if v := e.Load(); v != 0 {
		return math.Float64frombits(v)
	}
	t := r.OpNs(r.ops[i].Op, b)
	e.Store(math.Float64bits(t))
	return t
}

// cachedSplits is r.splits(u, nBlocks), memoised by its exact inputs (the
// rest of what it depends on, AttnUnits, is fixed per predictor). The
// heuristic scans up to 128 split counts and ran once or twice per
// pure-decode attention call; its inputs, the decode count times the KV
// heads and the mean context in blocks, repeat from step to step. The
// value returned is the one splits computes, so step times are unchanged;
// inputs that are not whole numbers or are out of the packed range are
// computed each time.
func (r *Roofline) cachedSplits(u, nBlocks float64) float64 {
	if !(u >= 0 && u < 1<<splitUnitBits && nBlocks >= 0 && nBlocks < 1<<splitBlockBits) || u != math.Trunc(u) || nBlocks != math.Trunc(nBlocks) {
		return r.splits(u, nBlocks)
	}
	key := uint64(u)<<splitBlockBits | uint64(nBlocks)
	e := &r.cache.splits[(key*0x9E3779B97F4A7C15)>>(64-splitCacheBits)]
	if v := e.Load(); v != 0 && v>>8 == key {
		return float64(v & 0xff)
	}
	s := r.splits(u, nBlocks)
	if s >= 1 && s <= 128 {
		e.Store(key<<8 | uint64(s))
	}
	return s
}
