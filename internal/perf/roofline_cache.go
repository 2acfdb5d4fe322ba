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
// but attention depends only on the step's padded tokens (the MoE block
// too, unless a data-parallel step gives its time in MoENs), except
// lm_head and the sampler, which depend only on its sequences. A step's
// time is then one table row plus the attention model, instead of a dozen
// math.Pow calls. Rows are filled lazily (whole rows for StepTime, single
// entries for opNs); entries are atomic (0 = not yet computed by opNs;
// StepTime reads a row's done flag) so the predictor stays safe for
// concurrent use, and every
// writer stores the same deterministic value. The cached value is the one
// OpNs returns, bit for bit, so step times are unchanged.
type opCache struct {
	byTokens []atomic.Uint64 // [tokens*tokCols + col[op index]]
	bySeqs   []atomic.Uint64 // [seqs*seqCols + col[op index]]
	key      []opKey         // per op index
	col      []int           // per op index: its column in its table
	tokCols  int
	seqCols  int
	lead     int // the leading ops keyed by tokens (summed in prefix)
	// Whole rows, for StepTime: a row is filled at its first use (every
	// column at once, then its done flag), so that a step reads its op
	// times without a per-op check. prefix[n] is the running sum of the
	// leading token ops at n tokens (count × time, added in op order from
	// 0, exactly as StepTime's loop adds them).
	tokDone []atomic.Bool   // per token row
	seqDone []atomic.Bool   // per sequence row
	prefix  []atomic.Uint64 // per token row
	// For a plain program (plainRuns: a batch op, a token run, a
	// sequence run), tokSum[n] is the prefix at n tokens plus the token
	// run's terms count × time, added in op order, and tokAbs[n] the sum
	// of their absolute values: the fast step's sum of the terms but
	// attention's and the sequence run's (rooflineRun.load).
	plainRuns      bool
	tokSum, tokAbs []atomic.Uint64 // per token row, when plainRuns
	// runs is the program for the ops after them, in runs of
	// consecutive ops of one key (a token or sequence run reads
	// consecutive columns; a batch or MoE op is a run of its own), so
	// that stepNs reads a run's times in one loop.
	runs []stepRun
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
	keyMoE                 // the step's padded tokens, unless the step carries MoENs (the MoE block)
	keySeqs                // the step's sequences
)

func newOpCache(ops []OpUse) *opCache {
	c := &opCache{key: make([]opKey, len(ops)), col: make([]int, len(ops))}
	for i, u := range ops {
		switch u.Op {
		case OpAttention, OpAttentionLocal:
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
	c.tokDone = make([]atomic.Bool, opCacheLimit+1)
	c.seqDone = make([]atomic.Bool, opCacheLimit+1)
	c.prefix = make([]atomic.Uint64, opCacheLimit+1)
	lead := 0
	for lead < len(ops) && c.key[lead] == keyTokens {
		lead++
	}
	c.lead = lead
	for i := lead; i < len(ops); i++ {
		key := c.key[i]
		if n := len(c.runs); n > 0 && key == c.runs[n-1].key && (key == keyTokens || key == keySeqs) {
			c.runs[n-1].counts = append(c.runs[n-1].counts, ops[i].Count)
			continue
		}
		c.runs = append(c.runs, stepRun{key: key, col: c.col[i], idx: i, counts: []float64{ops[i].Count}})
	}
	if c.plainRuns = len(c.runs) == 3 && c.runs[0].key == keyBatch && c.runs[1].key == keyTokens && c.runs[2].key == keySeqs; c.plainRuns {
		c.tokSum, c.tokAbs = make([]atomic.Uint64, opCacheLimit+1), make([]atomic.Uint64, opCacheLimit+1)
	}
	return c
}

// stepRun is a run of ops of rest: its key, the column and op index of
// its first op, and every op's count (consecutive ops of a token or a
// sequence run have consecutive columns: newOpCache numbers each table's
// columns in op order).
type stepRun struct {
	key    opKey
	col    int
	idx    int
	counts []float64
}

// fillTokens fills token row n (n = paddedTokens(b)) and its prefix sum.
func (c *opCache) fillTokens(r *Roofline, b *Batch, n int) {
	row := c.byTokens[n*c.tokCols : (n+1)*c.tokCols]
	s := 0.0
	for i, u := range r.ops {
		if c.key[i] != keyTokens {
			continue
		}
		t := r.OpNs(u.Op, b)
		row[c.col[i]].Store(math.Float64bits(t))
		if i < c.lead {
			s += u.Count * t
		}
	}
	c.prefix[n].Store(math.Float64bits(s))
	if c.plainRuns {
		abs := math.Abs(s)
		p := &c.runs[1]
		for j, k := range p.counts {
			v := k * math.Float64frombits(row[p.col+j].Load())
			s, abs = s+v, abs+math.Abs(v)
		}
		c.tokSum[n].Store(math.Float64bits(s))
		c.tokAbs[n].Store(math.Float64bits(abs))
	}
	c.tokDone[n].Store(true)
}

// fillSeqs fills sequence row n (n = b.Rows()).
func (c *opCache) fillSeqs(r *Roofline, b *Batch, n int) {
	row := c.bySeqs[n*c.seqCols : (n+1)*c.seqCols]
	for i, u := range r.ops {
		if c.key[i] == keySeqs {
			row[c.col[i]].Store(math.Float64bits(r.OpNs(u.Op, b)))
		}
	}
	c.seqDone[n].Store(true)
}

// stepNs is StepTime's unrounded sum from whole cached rows; ok is false
// when a count is outside the cache (the caller then sums op by op).
func (r *Roofline) stepNs(b *Batch, x *rooflineRun) (s float64, ok bool) {
	c := r.cache
	k := countsOf(b)
	if k.padded < 0 || k.padded > opCacheLimit || k.rows < 0 || k.rows > opCacheLimit {
		return 0, false
	}
	if !c.tokDone[k.padded].Load() {
		c.fillTokens(r, b, k.padded)
	}
	if !c.seqDone[k.rows].Load() {
		c.fillSeqs(r, b, k.rows)
	}
	tok := k.padded * c.tokCols
	seq := k.rows * c.seqCols
	s = math.Float64frombits(c.prefix[k.padded].Load())
	// The ops after the prefix, in op order: s += count × time for each.
	for i := range c.runs {
		p := &c.runs[i]
		switch p.key {
		case keyTokens:
			row := c.byTokens[tok+p.col:][:len(p.counts)]
			for j, n := range p.counts {
				s += n * math.Float64frombits(row[j].Load())
			}
		case keySeqs:
			row := c.bySeqs[seq+p.col:][:len(p.counts)]
			for j, n := range p.counts {
				s += n * math.Float64frombits(row[j].Load())
			}
		case keyBatch:
			s += p.counts[0] * r.batchOpNs(p.idx, b, x)
		default: // keyMoE
			if b.MoENs > 0 {
				s += float64(b.MoENs)
				continue
			}
			s += p.counts[0] * r.opNs(p.idx, b, k)
		}
	}
	return s, true
}

// batchOpNs is OpNs of the batch-keyed op i (an attention op), with the
// per-run memo of x when x is not nil.
func (r *Roofline) batchOpNs(i int, b *Batch, x *rooflineRun) float64 {
	switch {
	case r.ops[i].Op == OpAttentionLocal:
		return r.localAttention(b)
	case r.IsMLA():
		return r.mlaAttention(b)
	case b.PrefillTokens <= 0 && b.NumDecode > 0 && b.SpecTokens <= 0:
		return r.decodeAttention(b, x)
	}
	return r.attention(b)
}

// stepCounts are the counts a step's cached op times are keyed by,
// computed once per step.
type stepCounts struct {
	padded, rows int
}

func countsOf(b *Batch) stepCounts {
	return stepCounts{padded: paddedTokens(b), rows: b.Rows()}
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
		n, cols, tab = k.padded, c.tokCols, c.byTokens
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
	// In range, a conversion to int64 truncates as math.Trunc does.
	if !(u >= 0 && u < 1<<splitUnitBits && nBlocks >= 0 && nBlocks < 1<<splitBlockBits) || float64(int64(u)) != u || float64(int64(nBlocks)) != nBlocks {
		return r.splits(u, nBlocks)
	}
	key := uint64(int64(u))<<splitBlockBits | uint64(int64(nBlocks))
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
