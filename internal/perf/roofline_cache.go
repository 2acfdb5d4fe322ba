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
// but attention depends only on the step's total tokens, except lm_head
// and the sampler, which depend only on its sequences. A step's time is
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
}

// opKey says what an op's time depends on.
type opKey uint8

const (
	keyBatch  opKey = iota // the whole batch (attention): not cached
	keyTokens              // the step's total tokens
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
		default:
			c.key[i], c.col[i] = keyTokens, c.tokCols
			c.tokCols++
		}
	}
	c.byTokens = make([]atomic.Uint64, (opCacheLimit+1)*c.tokCols)
	c.bySeqs = make([]atomic.Uint64, (opCacheLimit+1)*c.seqCols)
	return c
}

// opNs is r.OpNs(r.ops[i].Op, b), from the cache when it holds it.
func (r *Roofline) opNs(i int, b *Batch) float64 {
	c := r.cache
	var n, cols int
	var tab []atomic.Uint64
	switch c.key[i] {
	case keyTokens:
		n, cols, tab = b.Tokens(), c.tokCols, c.byTokens
	case keySeqs:
		n, cols, tab = b.Rows(), c.seqCols, c.bySeqs
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
