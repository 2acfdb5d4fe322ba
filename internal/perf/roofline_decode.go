package perf

import "math"

// rooflineRun is the Roofline one run uses (Roofline.ForRun). It predicts
// exactly what the Roofline does: it sums a step of a plain program in one
// pass (plainNs) with the op times of the latest counts, and remembers,
// for each of the two attention lookups of a pure-decode step (at the
// mean context and at the longest) and each decode count (modulo
// splitSlots), the terms of its latest inputs that depend on the decode
// count and the blocks per unit only (splitMemo): consecutive steps
// nearly always have the same mean and longest context in 128-token
// blocks, so the split comes without the shared memo's range checks and
// hashing. A copy is not safe for concurrent use.
//
// In a cluster an instance's predictor state has left the first-level
// cache by its next step, so a decode step of the fast step reads the
// struct's head (its first 64 bytes) and the first line of each of its
// two memos: so large a struct starts on a page, and every memo on a
// line (TestRooflineRunLayout).
type rooflineRun struct {
	r *Roofline
	// For a plain program: the counts key of the latest step plainNs or
	// fastStep took (key.padded -1 before the first), as consecutive
	// steps nearly always have the same counts, and for fastStep rest,
	// the sum of the prefix and the token and sequence runs' terms n·t
	// at key (the prefix and the token run's from opCache.tokSum, then
	// the sequence run's), restAbs |prefix| + Σ|n·t|, and restErr
	// (number of terms + 2)·2^-50.
	key                    stepCounts
	rest, restAbs, restErr float64
	// fastSteps and slowSteps count the steps fastStep decided and those
	// it left to plainNs.
	fastSteps, slowSteps int
	// splits holds, for each of the two lookups, the memo of the latest
	// step of every decode count modulo splitSlots: the decode count goes
	// up and down by one as requests join and leave, and returns to the
	// counts it had.
	splits [2][splitSlots]splitMemo
}

// splitSlots is the number of memos per lookup (a power of two).
const splitSlots = 256

// memo is lookup i's memo for n decodes.
func (x *rooflineRun) memo(i, n int) *splitMemo {
	return &x.splits[i][n&(splitSlots-1)]
}

// splitMemo holds, for the latest decode count n and KV blocks per unit
// nBlocks of one lookup (n NaN before the first), the terms of
// decodeTerms that depend on them only, each by decodeTerms's own
// expression: the split count, the extra launch time (the split-KV
// combine, the GQA transpose), the work units nd and, with a wave size,
// their whole waves; and n times the bytes moved per query row. With
// them, the context sums of the same blocks per unit and the lookup's
// compute and memory times as lines in the context sum (decodeLine). The
// fields the fast step reads (n, the decodeLine's but line, extra) come
// first, on a cache line of their own (the memo is 128 bytes).
type splitMemo struct {
	n float64
	decodeLine
	extra                              float64
	nBlocks, split, nd, waves, rowMiss float64
	line                               bool
	_                                  [23]byte
}

// set fills m for n decodes and nBlocks KV blocks per unit.
func (m *splitMemo) set(r *Roofline, n, nBlocks float64) {
	c := &r.dec
	u := n * r.kvHeads * c.tiles
	split := r.cachedSplits(u, nBlocks)
	var extra float64
	if split > 1 {
		extra = r.eff.LaunchNs
	}
	if c.swapCopy && n >= 2 {
		extra += r.eff.AttnDecodeCopyNs
	}
	nd := u * split
	var waves float64
	if units := r.decUnits; units != 0 {
		waves = math.Ceil(nd / units)
	}
	*m = splitMemo{n: n, nBlocks: nBlocks, split: split, extra: extra, nd: nd, waves: waves, rowMiss: n * c.rowBytes}
	m.setLine(r)
}

// ForRun implements RunScoped: the copy remembers per-run split counts.
func (r *Roofline) ForRun(*TableCounts) Predictor {
	x := &rooflineRun{r: r, key: stepCounts{padded: -1}}
	for i := range x.splits {
		for j := range x.splits[i] {
			x.splits[i][j].n = math.NaN()
		}
	}
	if r.plain {
		x.restErr = float64(len(r.cache.runs[1].counts)+len(r.cache.runs[2].counts)+2) * 0x1p-50
	}
	return x
}

// StepTime implements Predictor; it is r.StepTime(b), bit for bit. A
// step of a predictor with the plain program (plainProgram) whose counts
// are within the op cache takes fastStep, and plainNs when fastStep
// cannot decide it.
func (x *rooflineRun) StepTime(b *Batch) int64 {
	r := x.r
	if r.plain && b != nil && (b.Tokens() > 0 || b.Seqs() > 0 || b.PadTokens > 0) {
		if k := countsOf(b); k.padded <= opCacheLimit && k.rows >= 0 && k.rows <= opCacheLimit {
			if r.attnPow.fast {
				if ns, ok := x.fastStep(b, k); ok {
					x.fastSteps++
					return ns
				}
				x.slowSteps++
			}
			return clampNs(x.plainNs(b, k))
		}
	}
	return r.stepTime(b, x)
}

// plainProgram reports that the op cache's program after the token prefix
// is a dense model's with one kind of attention: full attention (not MLA),
// a run of token ops, a run of sequence ops.
func (r *Roofline) plainProgram() bool {
	c := r.cache
	return len(c.runs) == 3 && c.runs[0].key == keyBatch && r.ops[c.runs[0].idx].Op == OpAttention && !r.IsMLA() &&
		c.runs[1].key == keyTokens && c.runs[2].key == keySeqs
}

// plainNs is stepNs(b, x) for a step StepTime sends it (counts k): the
// plain program's three runs, attention as batchOpNs times it.
func (x *rooflineRun) plainNs(b *Batch, k stepCounts) float64 {
	r := x.r
	c := r.cache
	if k != x.key {
		x.load(b, k)
	}
	attn, tok, seq := &c.runs[0], &c.runs[1], &c.runs[2]
	var t float64
	if b.PrefillTokens <= 0 && b.NumDecode > 0 && b.SpecTokens <= 0 {
		t = r.decodeAttention(b, x)
	} else {
		t = r.attention(b)
	}
	s := math.Float64frombits(c.prefix[k.padded].Load())
	s += attn.counts[0] * t
	row := c.byTokens[k.padded*c.tokCols+tok.col:][:len(tok.counts)]
	for j, n := range tok.counts {
		s += n * math.Float64frombits(row[j].Load())
	}
	row = c.bySeqs[k.rows*c.seqCols+seq.col:][:len(seq.counts)]
	for j, n := range seq.counts {
		s += n * math.Float64frombits(row[j].Load())
	}
	return s
}

// load fills the op cache's rows at counts k (b's) when needed and sets
// x's key and sums for them.
func (x *rooflineRun) load(b *Batch, k stepCounts) {
	r := x.r
	c := r.cache
	if !c.tokDone[k.padded].Load() {
		c.fillTokens(r, b, k.padded)
	}
	if !c.seqDone[k.rows].Load() {
		c.fillSeqs(r, b, k.rows)
	}
	x.key = k
	rest, abs := math.Float64frombits(c.tokSum[k.padded].Load()), math.Float64frombits(c.tokAbs[k.padded].Load())
	seq := &c.runs[2]
	row := c.bySeqs[k.rows*c.seqCols+seq.col:][:len(seq.counts)]
	for j, n := range seq.counts {
		v := n * math.Float64frombits(row[j].Load())
		rest, abs = rest+v, abs+math.Abs(v)
	}
	x.rest, x.restAbs = rest, abs
}

// decodeConsts are the terms of a pure-decode attention lookup (no
// prefill, one query row per decode) that depend on the predictor only,
// each computed once by attentionWindowed's own expression.
type decodeConsts struct {
	tiles       float64 // query tiles of one KV head's GQA group: ceil(gqa·1/tileQ)
	kvHeadBytes float64 // one token of one KV head
	unitNs      float64 // a work unit's fixed cost (AttnDecodeUnitNs, else AttnUnitNs)
	rowBytes    float64 // bytes moved per query row: queries, outputs, new KV
	swapCopy    bool    // SwapGQADecode's transpose applies from two decodes on
}

func newDecodeConsts(r *Roofline) decodeConsts {
	q := 1.0
	c := decodeConsts{
		tiles:       math.Ceil(r.gqa * q / r.tileQ),
		kvHeadBytes: r.hd * 2 * r.kvb,
		unitNs:      r.eff.AttnUnitNs,
		rowBytes:    2*r.heads*r.hd*r.b + r.kvBytesPerTok,
		swapCopy:    r.hw.SwapGQADecode && r.kvHeads >= 2 && r.gqa > 1,
	}
	if r.eff.AttnDecodeUnitNs > 0 {
		c.unitNs = r.eff.AttnDecodeUnitNs
	}
	return c
}

// decodeAttention is attention(b) for a step of n > 0 decodes without
// prefill or speculation (x, when not nil, remembers its split counts).
func (r *Roofline) decodeAttention(b *Batch, x *rooflineRun) float64 {
	n := float64(b.NumDecode)
	kvSum := float64(max(b.DecodeKVSum, 0))
	var m0, m1 *splitMemo
	if x != nil {
		m0, m1 = x.memo(0, b.NumDecode), x.memo(1, b.NumDecode)
	}
	t := r.decodeUniform(n, kvSum, m0)
	if a := r.eff.AttnDecodeSkew; a > 0 && n > 1 {
		if kvMax := float64(b.DecodeKVMax); kvMax*n > kvSum {
			if tMax := r.decodeUniform(n, kvMax*n, m1); tMax > t {
				t += a * (tMax - t)
			}
		}
	}
	return t
}

// decodeUniform is attentionWindowed(0, kp, ps, n, 1, kvSum, win) for n > 0
// and any kp, ps and win (without prefill they do not enter): the same
// expressions in the same order, with the prefill terms, which are zero,
// left out where adding or multiplying them changes nothing (0 + v = v
// for the non-negative v here), and scheduleOn's steps for one class of
// units written out. m, when not nil, remembers the split count.
func (r *Roofline) decodeUniform(n, kvSum float64, m *splitMemo) float64 {
	launch, tc, tm := r.decodeTerms(n, kvSum, m)
	return launch + r.attnPow.softMax(tc, tm)
}

// decodeTerms are decodeUniform's launch time (its first two terms, summed)
// and the compute and memory times its soft maximum blends; m, when not
// nil, holds the terms that depend on n and the blocks per unit only.
func (r *Roofline) decodeTerms(n, kvSum float64, m *splitMemo) (launch, tc, tm float64) {
	c := &r.dec
	mean := kvSum / n
	nBlocks := math.Ceil(mean / 128)
	var local splitMemo
	if m == nil {
		m = &local
		m.set(r, n, nBlocks)
	} else if m.n != n || m.nBlocks != nBlocks {
		m.set(r, n, nBlocks)
	}
	ld := mean / m.split
	req := r.kvHeads * kvSum * c.kvHeadBytes
	uniq := kvSum * r.kvBytesPerTok
	o := c.unitNs
	// scheduleOn(decUnits, decNsPerKV, 0, 0, nd, ld, o): with no units
	// the spread formula; else nd units of ld positions (ld >= 0; at
	// ld = 0 both of its classes cost o) in whole waves.
	if r.decUnits == 0 {
		nd := m.nd
		tc = r.decNsPerKV*(nd*ld) + o*nd
	} else {
		tc = m.waves * (r.decNsPerKV*ld + o)
	}
	miss, hits := uniq, 0.0
	if req > uniq {
		miss, hits = r.decodeReread(req, uniq, m.nd)
	}
	miss += m.rowMiss
	return r.eff.AttnDecodeLaunchNs + m.extra, tc, (miss + hits/r.eff.AttnCacheSpeed) / r.attnDecMem * 1e9
}

// decodeReread is decodeTerms's KV reads when the units request more
// than the distinct bytes (req > uniq): the bytes that miss the cache
// (the distinct ones included) and those that hit it.
func (r *Roofline) decodeReread(req, uniq, nd float64) (miss, hits float64) {
	if r.units > 0 && nd > 0 {
		w := r.units * r.heads / nd
		reads := min(r.gqa, r.gqa/w+1)
		req = max(uniq, req*reads/r.gqa)
	}
	miss = uniq
	if req > uniq {
		hit := 1.0
		if ws := uniq / r.kvHeads; ws > r.eff.AttnCacheBytes {
			hit = r.eff.AttnCacheBytes / ws
		}
		miss += (req - uniq) * (1 - hit)
		hits = (req - uniq) * hit
	}
	return miss, hits
}
