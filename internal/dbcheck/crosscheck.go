package dbcheck

import (
	"fmt"
	"io/fs"
	"math"
	"slices"

	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/perfdb"
)

// Bundle is one tensor-parallel degree of a profile bundle: its measured
// rows (perf.ReadPoints, plus moe.csv rows of category perf.CategoryMoE
// with X the tokens and N the activated experts) and the model and GPU
// they were measured on.
type Bundle struct {
	// Source names the tables in reports (the tp<N> folder).
	Source string
	TP     int
	Model  perf.RooflineModel
	HW     perf.RooflineHW
	Points []perf.Point
}

// Options tune a cross-check.
type Options struct {
	// MoEDistribution is the moe_perf routing distribution compared
	// (default "balanced", the predictor's default): only moe.csv rows
	// whose activated experts equal what that routing activates,
	// min(experts, tokens × top-k), are compared.
	MoEDistribution string
}

// OpAttention names the attention comparison: context attention for a
// row's prefill chunk plus generation attention for its decodes.
const OpAttention = "attention"

// OpAttentionParts names a check within the profile alone: each mixed
// attention row (a prefill chunk and decodes in one step) against the
// sum of the profile's own prefill-only row and decode-only row at the
// same coordinates, i.e. what timing the two parts as separate kernels,
// as the database (and the measured-kernel predictor) does, gives on the
// profile's own measurements. Its difference is parts / mixed − 1.
const OpAttentionParts = "attention parts"

// OpStats is the comparison of one op (or one bucket of its rows).
type OpStats struct {
	Op string `json:"op"`
	// Compared counts rows timed by the database; Outside rows whose
	// shape lies outside its tables (the predictor falls back to the
	// roofline there).
	Compared int `json:"compared"`
	Outside  int `json:"outside"`
	// Signed and Abs summarise database / profile − 1 and its absolute
	// value over the compared rows, in percent (nil when none).
	Signed *Dist `json:"signed_pct,omitempty"`
	Abs    *Dist `json:"abs_pct,omitempty"`
	// Buckets split the rows by regime: token count for GEMMs and MoE
	// (and, for GEMMs, m on or between the table's measured m values),
	// prefill / decode / mixed for attention.
	Buckets []OpStats `json:"buckets,omitempty"`
}

// Row is one compared (or outside) profile row. Coordinates unused by
// the op are 0.
type Row struct {
	Op, Bucket string
	// Grid says, for a GEMM row at m > 256, whether m is one of the
	// table's measured m values (BucketOnGrid) or between two
	// (BucketOffGrid); "" otherwise. Smaller m are not split: the table
	// measures every m to 17 and every 16th to 256, so nearly all of them
	// are on the grid, and a split over all m would set small GEMMs on
	// the grid against large ones between it.
	Grid string
	// M, N, K: the GEMM (M the tokens or, for lm_head, sequences); for
	// MoE M is the tokens and Experts the activated experts.
	M, N, K, Experts int
	// PC, KP, ND, KVD: an attention row's prefill chunk, prefill KV,
	// decodes and decode context.
	PC, KP, ND, KVD int
	// ProfileNs and DBNs are the two times of one layer's op (DBNs 0 when
	// Outside).
	ProfileNs, DBNs float64
	Outside         bool
}

// Diff is database / profile − 1 (NaN when outside the tables).
func (r Row) Diff() float64 {
	if r.Outside || !(r.ProfileNs > 0) {
		return math.NaN()
	}
	return r.DBNs/r.ProfileNs - 1
}

// Report is the cross-check of one bundle at one tensor-parallel degree.
type Report struct {
	Bundle string `json:"bundle"`
	TP     int    `json:"tp"`
	// System and Version name the database tables compared with.
	System  string `json:"system"`
	Version string `json:"version"`
	// Heads, KVHeads and HeadDim are the per-rank attention shape read.
	// GEMMRange is the span of the bf16 GEMM rows.
	GEMMRange GEMMSpan  `json:"gemm_range"`
	Heads     int       `json:"heads"`
	KVHeads   int       `json:"kv_heads"`
	HeadDim   int       `json:"head_dim"`
	Ops       []OpStats `json:"ops"`
	// Skipped counts profile rows with no database counterpart: ops the
	// tables do not hold (norms, activation, ...), MoE rows at another
	// routing, rows with a zero time.
	Skipped int `json:"skipped_rows"`
	// AttentionKernels are the kernels the database's bf16-KV attention
	// rows were measured with (set by the caller: AttentionKernels).
	AttentionKernels []string `json:"attention_kernels,omitempty"`
	Rows             []Row    `json:"-"`
}

// GEMMSpan is the [min, max] of a GEMM table's m, n and k.
type GEMMSpan struct {
	M [2]int `json:"m"`
	N [2]int `json:"n"`
	K [2]int `json:"k"`
}

// linearOps are the GEMM ops compared, in report order.
var linearOps = []string{perf.OpQKVProj, perf.OpOProj, perf.OpGateUpProj, perf.OpDownProj, perf.OpLMHead}

// Crosscheck compares every row of b that the database times with the
// database's time for it, composed as the measured-kernel predictor does:
//
//   - qkv_proj, o_proj, gate_up_proj, down_proj: a bf16 GEMM at m = the
//     row's tokens with the roofline's per-rank (n, k);
//   - lm_head: a bf16 GEMM at m = the row's sequences;
//   - attention: a row's step (one prefill chunk of prefill_chunk tokens
//     after kv_prefill cached ones, as the bundles were profiled, or
//     n_decode decodes of kv_decode context each) timed by
//     ContextAttention or GenerationAttention (the rows' decodes share one
//     context, so the predictor's skew term is zero); a mixed row (both)
//     and a chunk after cached tokens are outside the tables, which
//     measure neither, as the predictor leaves those steps' attention to
//     the roofline;
//   - moe: the fused MoE block at the row's tokens, for rows whose
//     activated experts match the routing distribution compared.
func Crosscheck(db *perfdb.DB, b Bundle, opt Options) (*Report, error) {
	if db == nil {
		return nil, fmt.Errorf("crosscheck %s: no database", b.Source)
	}
	r, err := perf.NewRoofline(b.Model, b.HW, perf.Efficiency{}, b.TP)
	if err != nil {
		return nil, fmt.Errorf("crosscheck %s: %w", b.Source, err)
	}
	m := r.Model()
	if m.BytesPerElem != 2 || m.WeightBytes != 2 || m.KVBytesPerElem != 2 {
		return nil, fmt.Errorf("crosscheck %s: the tables are not bf16 (bytes per weight %g, per KV element %d); the cross-check compares bf16 bundles with the bfloat16 tables", b.Source, m.WeightBytes, m.KVBytesPerElem)
	}
	heads, kvHeads, hd := r.AttentionShape()
	shape := perfdb.Shape{GEMMDtype: "bfloat16", Heads: heads, KVHeads: kvHeads, HeadDim: hd, KVDtype: "bfloat16"}
	dist := opt.MoEDistribution
	if dist == "" {
		dist = "balanced"
	}
	if m.Experts > 0 {
		shape.MoE = &perfdb.MoEShape{Dtype: "bfloat16", Distribution: dist, Hidden: m.Hidden, Inter: m.MoEIntermediate,
			TopK: m.ExpertsPerTok, Experts: m.Experts, TP: b.TP, EP: 1}
	}
	k, err := db.Kernels(shape)
	if err != nil {
		return nil, fmt.Errorf("crosscheck %s: %w", b.Source, err)
	}
	inModel := map[string]bool{}
	for _, u := range r.Ops() {
		inModel[u.Op] = true
	}
	rep := &Report{Bundle: b.Source, TP: b.TP, System: db.System, Version: db.Version, Heads: heads, KVHeads: kvHeads, HeadDim: hd}
	gridM := map[int]bool{}
	for _, g := range db.GEMM {
		if g.Dtype != "bfloat16" {
			continue
		}
		gridM[g.M] = true
		for _, d := range []struct {
			span *[2]int
			v    int
		}{{&rep.GEMMRange.M, g.M}, {&rep.GEMMRange.N, g.N}, {&rep.GEMMRange.K, g.K}} {
			if d.span[0] == 0 || d.v < d.span[0] {
				d.span[0] = d.v
			}
			d.span[1] = max(d.span[1], d.v)
		}
	}
	for _, p := range b.Points {
		row, ok := compareRow(r, k, m, p, inModel)
		if !ok || !(p.Ns > 0) {
			rep.Skipped++
			continue
		}
		if isLinear(row.Op) && row.M > 256 {
			row.Grid = BucketOffGrid
			if gridM[row.M] {
				row.Grid = BucketOnGrid
			}
		}
		rep.Rows = append(rep.Rows, row)
	}
	rep.Rows = append(rep.Rows, profileParts(b.Points)...)
	rep.Ops = summarise(rep.Rows, m.Experts > 0)
	return rep, nil
}

// profileParts pairs every mixed attention row of pts with the
// prefill-only and decode-only rows at its coordinates (OpAttentionParts).
func profileParts(pts []perf.Point) []Row {
	type key struct{ pc, kp, n, kvd int }
	at := map[key]float64{}
	for _, p := range pts {
		if p.Category == perf.CategoryAttention {
			at[key{p.PC, p.KP, p.N, p.KVD}] = p.Ns
		}
	}
	var out []Row
	for _, p := range pts {
		if p.Category != perf.CategoryAttention || p.PC == 0 || p.N == 0 || !(p.Ns > 0) {
			continue
		}
		pre, ok1 := at[key{p.PC, p.KP, 0, 0}]
		dec, ok2 := at[key{0, 0, p.N, p.KVD}]
		if !ok1 || !ok2 {
			continue
		}
		out = append(out, Row{Op: OpAttentionParts, Bucket: attentionBucket(p), PC: p.PC, KP: p.KP, ND: p.N, KVD: p.KVD, ProfileNs: p.Ns, DBNs: pre + dec})
	}
	return out
}

// compareRow times one profile row from the tables; ok is false for a
// row the database has no counterpart for.
func compareRow(r *perf.Roofline, k *perfdb.Kernels, m perf.RooflineModel, p perf.Point, inModel map[string]bool) (Row, bool) {
	row := Row{ProfileNs: p.Ns}
	var ns float64
	var in bool
	switch p.Category {
	case perf.CategoryDense, perf.CategoryPerSequence:
		isLMHead := p.Op == perf.OpLMHead
		if !inModel[p.Op] || (p.Category == perf.CategoryPerSequence) != isLMHead || !isLinear(p.Op) {
			return row, false
		}
		n, kk := r.LinearShape(p.Op)
		row.Op, row.M, row.N, row.K, row.Bucket = p.Op, p.X, n, kk, countBucket("m", p.X)
		ns, in = k.GEMM(false, p.X, n, kk)
	case perf.CategoryAttention:
		b := p.Batch()
		row.Op, row.PC, row.KP, row.ND, row.KVD = OpAttention, p.PC, p.KP, p.N, p.KVD
		row.Bucket = attentionBucket(p)
		ns, in = attention(k, &b)
	case perf.CategoryMoE:
		if m.Experts == 0 || p.N != min(m.Experts, p.X*m.ExpertsPerTok) {
			return row, false
		}
		row.Op, row.M, row.Experts, row.Bucket = perf.OpMoE, p.X, p.N, countBucket("tokens", p.X)
		ns, in = k.MoE(p.X)
	default:
		return row, false
	}
	if in {
		row.DBNs = ns
	} else {
		row.Outside = true
	}
	return row, true
}

func isLinear(op string) bool {
	for _, o := range linearOps {
		if o == op {
			return true
		}
	}
	return false
}

// attention times one layer's attention of b as perf.Measured does: a
// prefill from an empty cache from the context table (per prefilling
// sequence: the mean chunk), a decode batch from the generation table at
// the mean context; false when it lies outside its table, and for a
// mixed batch or a chunk after cached tokens, which no table measures.
func attention(k *perfdb.Kernels, b *perf.Batch) (float64, bool) {
	if b.PrefillTokens > 0 && (b.NumDecode > 0 || b.PrefillKV > 0) {
		return 0, false
	}
	var t float64
	if pc := b.PrefillTokens; pc > 0 {
		ps := max(b.PrefillSeqs, 1)
		c, ok := k.ContextAttention(ps, float64(pc)/float64(ps))
		if !ok {
			return 0, false
		}
		t += c
	}
	if n := b.NumDecode; n > 0 {
		g, ok := k.GenerationAttention(n, float64(max(b.DecodeKVSum, 0))/float64(n))
		if !ok {
			return 0, false
		}
		t += g
	}
	return t, true
}

// Buckets of rows by regime.
const (
	bucketSmall  = "1-16"
	bucketMedium = "17-256"
	bucketLarge  = "257+"

	BucketPrefill        = "prefill"
	BucketPrefillHistory = "prefill after history"
	BucketDecode         = "decode"
	BucketMixed          = "mixed"
	BucketMixedHistory   = "mixed after history"
	BucketOnGrid         = "m 257+ on grid"
	BucketOffGrid        = "m 257+ between grid"
)

// countBucket buckets a GEMM or MoE row by its row count: launch- and
// weight-bound small batches, the middle, compute-bound large ones.
func countBucket(axis string, x int) string {
	switch {
	case x <= 16:
		return axis + " " + bucketSmall
	case x <= 256:
		return axis + " " + bucketMedium
	}
	return axis + " " + bucketLarge
}

func attentionBucket(p perf.Point) string {
	switch {
	case p.PC > 0 && p.N > 0 && p.KP > 0:
		return BucketMixedHistory
	case p.PC > 0 && p.N > 0:
		return BucketMixed
	case p.N > 0:
		return BucketDecode
	case p.KP > 0:
		return BucketPrefillHistory
	}
	return BucketPrefill
}

// summarise groups rows by op (report order) and, inside an op, by bucket
// (first-seen order sorted by the bucket list).
func summarise(rows []Row, moe bool) []OpStats {
	ops := append([]string{}, linearOps...)
	ops = append(ops, OpAttention, OpAttentionParts)
	if moe {
		ops = append(ops, perf.OpMoE)
	}
	bucketOrder := []string{"m " + bucketSmall, "m " + bucketMedium, "m " + bucketLarge,
		"tokens " + bucketSmall, "tokens " + bucketMedium, "tokens " + bucketLarge,
		BucketOnGrid, BucketOffGrid, BucketPrefill, BucketPrefillHistory, BucketDecode, BucketMixed, BucketMixedHistory}
	var out []OpStats
	for _, op := range ops {
		var sel []Row
		for _, r := range rows {
			if r.Op == op {
				sel = append(sel, r)
			}
		}
		if len(sel) == 0 {
			continue
		}
		s := statsOf(op, sel)
		for _, bk := range bucketOrder {
			var in []Row
			for _, r := range sel {
				if r.Bucket == bk || r.Grid == bk {
					in = append(in, r)
				}
			}
			if len(in) > 0 {
				s.Buckets = append(s.Buckets, statsOf(bk, in))
			}
		}
		out = append(out, s)
	}
	return out
}

func statsOf(name string, rows []Row) OpStats {
	s := OpStats{Op: name}
	var signed, abs []float64
	for _, r := range rows {
		if r.Outside {
			s.Outside++
			continue
		}
		d := r.Diff()
		signed = append(signed, d)
		abs = append(abs, math.Abs(d))
		s.Compared++
	}
	s.Signed, s.Abs = distOf(signed), distOf(abs)
	return s
}

// AttentionKernels lists the kernels of db's attention rows with KV cache
// dtype kvDtype (the kernel_source column of its context and generation
// tables, read from fsys, the database db was opened from).
func AttentionKernels(fsys fs.FS, db *perfdb.DB, kvDtype string) ([]string, error) {
	var out []string
	for _, t := range db.Tables {
		if t.Name != "context_attention_perf" && t.Name != "generation_attention_perf" {
			continue
		}
		ks, err := perfdb.KernelSources(fsys, t.Path, "kv_cache_dtype", kvDtype)
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// Only keeps the rows of the named ops (all when ops is empty) whose row
// count (GEMM m, MoE tokens) is one of ms (any when ms is empty;
// attention rows have none and are dropped by a non-empty ms), and
// summarises them again.
func (r *Report) Only(ops []string, ms []int) {
	var rows []Row
	for _, row := range r.Rows {
		if len(ops) > 0 && !slices.Contains(ops, row.Op) {
			continue
		}
		if len(ms) > 0 && (!slices.Contains(ms, row.M) || row.Op == OpAttention || row.Op == OpAttentionParts) {
			continue
		}
		rows = append(rows, row)
	}
	r.Rows = rows
	moe := false
	for _, s := range r.Ops {
		moe = moe || s.Op == perf.OpMoE
	}
	r.Ops = summarise(rows, moe)
}
