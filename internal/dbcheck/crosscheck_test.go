package dbcheck

import (
	"io/fs"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/calibrate"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/perfdb"
)

// tinyModel has per-rank GEMM shapes at tp 1: qkv_proj (n 128, k 64),
// o_proj (64, 64), gate_up_proj (256, 64), down_proj (64, 128), lm_head
// (256, 64); attention 4 heads, 2 KV heads, head size 16.
var tinyModel = perf.RooflineModel{Layers: 2, Hidden: 64, Intermediate: 128, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 256}

var tinyHW = perf.RooflineHW{PeakFLOPS: 1e14, MemBandwidth: 1e12}

// tinyDB measures every GEMM shape of tinyModel at m = 1 and 16 (µs: 10
// and 40 for qkv_proj, 20 and 20 for the others), context attention of
// one sequence at 16 and 32 tokens (5 and 9 µs) and generation attention
// of one sequence at 16 and 48 tokens of context (3 and 7 µs).
func tinyDB() *perfdb.DB {
	db := &perfdb.DB{System: "tiny", Framework: "vllm", Version: "0.19.0"}
	for _, nk := range [][2]int{{128, 64}, {64, 64}, {256, 64}, {64, 128}} {
		lo, hi := 0.020, 0.020
		if nk == [2]int{128, 64} {
			lo, hi = 0.010, 0.040
		}
		db.GEMM = append(db.GEMM, perfdb.GEMMRow{Dtype: "bfloat16", M: 1, N: nk[0], K: nk[1], Ms: lo},
			perfdb.GEMMRow{Dtype: "bfloat16", M: 16, N: nk[0], K: nk[1], Ms: hi})
	}
	attn := func(batch, seq int, ms float64) perfdb.AttnRow {
		return perfdb.AttnRow{Batch: batch, Seq: seq, Heads: 4, KVHeads: 2, HeadDim: 16, KVDtype: "bfloat16", Ms: ms}
	}
	db.Context = []perfdb.AttnRow{attn(1, 16, 0.005), attn(1, 32, 0.009)}
	db.Generation = []perfdb.AttnRow{attn(1, 16, 0.003), attn(1, 48, 0.007)}
	return db
}

func dense(op string, x int, us float64) perf.Point {
	return perf.Point{Category: perf.CategoryDense, Op: op, X: x, Ns: us * 1e3}
}

func attnPoint(pc, kp, n, kvd int, us float64) perf.Point {
	return perf.Point{Category: perf.CategoryAttention, Op: perf.OpAttention, PC: pc, KP: kp, N: n, KVD: kvd, Ns: us * 1e3}
}

func opStats(t *testing.T, r *Report, op string) OpStats {
	t.Helper()
	for _, s := range r.Ops {
		if s.Op == op {
			return s
		}
	}
	t.Fatalf("no %s in the report (ops %v)", op, r.Ops)
	return OpStats{}
}

// TestCrosscheckSynthetic checks every comparison against a hand
// computation on a synthetic bundle and database.
func TestCrosscheckSynthetic(t *testing.T) {
	pts := []perf.Point{
		// qkv_proj at m = 6: the table interpolates 10 + (6-1)/15·30 = 20 µs.
		dense(perf.OpQKVProj, 6, 25),  // 20/25 - 1 = -20 %
		dense(perf.OpQKVProj, 16, 40), // 0 %
		dense(perf.OpQKVProj, 1, 8),   // 10/8 - 1 = +25 %
		dense(perf.OpQKVProj, 32, 1),  // above the m grid: outside
		dense(perf.OpOProj, 4, 10),    // 20/10 - 1 = +100 %
		dense(perf.OpLayernorm, 4, 1), // no table: skipped
		{Category: perf.CategoryPerSequence, Op: perf.OpLMHead, X: 2, Ns: 40e3}, // 20/40 - 1 = -50 %
		{Category: perf.CategoryPerSequence, Op: perf.OpSampler, X: 2, Ns: 1e3}, // skipped
		// Prefill of 16 tokens: context row (1, 16) = 5 µs.
		attnPoint(16, 0, 0, 0, 4), // +25 %
		// 16 tokens after 16 cached: no table measures it.
		attnPoint(16, 16, 0, 0, 6.75), // outside
		// One decode at 32 tokens of context: 3 + (32-16)/32·4 = 5 µs.
		attnPoint(0, 0, 1, 32, 10), // -50 %
		// Mixed: no table measures it; its parts, 5 + 5 = 10 µs, go to the
		// attention parts line.
		attnPoint(16, 0, 1, 32, 8), // outside
		// Two decodes: no batch-2 rows: outside.
		attnPoint(0, 0, 2, 32, 1),
	}
	rep, err := Crosscheck(tinyDB(), Bundle{Source: "tiny/tp1", TP: 1, Model: tinyModel, HW: tinyHW, Points: pts}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Heads != 4 || rep.KVHeads != 2 || rep.HeadDim != 16 {
		t.Errorf("attention shape %d/%d/%d, want 4/2/16", rep.Heads, rep.KVHeads, rep.HeadDim)
	}
	if rep.Skipped != 2 {
		t.Errorf("skipped %d rows, want 2 (layernorm, sampler)", rep.Skipped)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	for _, c := range []struct {
		op                string
		compared, outside int
		median, p90       float64 // signed, %
		absMedian         float64
	}{
		// qkv_proj diffs -20, 0, +25: median 0, p90 = 0 + 0.8·25 = 20.
		{perf.OpQKVProj, 3, 1, 0, 20, 20},
		{perf.OpOProj, 1, 0, 100, 100, 100},
		{perf.OpLMHead, 1, 0, -50, -50, 50},
		// attention diffs +25, -50 (the mixed row and the chunk after
		// cached tokens are outside: no table times them): sorted -50, 25:
		// median -12.5, p90 = -50 + 0.9·75 = 17.5; |d| 25, 50: median 37.5.
		{OpAttention, 2, 3, -12.5, 17.5, 37.5},
		// The mixed row's own parts: 4 + 10 = 14 µs against 8: +75 %.
		{OpAttentionParts, 1, 0, 75, 75, 75},
	} {
		s := opStats(t, rep, c.op)
		if s.Compared != c.compared || s.Outside != c.outside {
			t.Errorf("%s: compared %d outside %d, want %d and %d", c.op, s.Compared, s.Outside, c.compared, c.outside)
			continue
		}
		if !near(s.Signed.Median, c.median) || !near(s.Signed.P90, c.p90) || !near(s.Abs.Median, c.absMedian) {
			t.Errorf("%s: signed median %g p90 %g, |d| median %g; want %g, %g, %g", c.op, s.Signed.Median, s.Signed.P90, s.Abs.Median, c.median, c.p90, c.absMedian)
		}
	}
	// Buckets: the prefill without history is exact +25 %.
	for _, b := range opStats(t, rep, OpAttention).Buckets {
		if b.Op == BucketPrefill && (b.Compared != 1 || !near(b.Signed.Median, 25)) {
			t.Errorf("prefill bucket %+v, want one row at +25 %%", b)
		}
	}
	var text strings.Builder
	if err := WriteText(&text, []*Report{rep}, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "qkv_proj                      3        1     -16.0      +0.0     +20.0       20.0      24.0") {
		t.Errorf("text report lacks the qkv_proj line:\n%s", text.String())
	}
}

// TestCrosscheckMoE: moe.csv rows whose activated experts match the
// balanced routing are compared with moe_perf at the model's shape; the
// others are skipped.
func TestCrosscheckMoE(t *testing.T) {
	m := tinyModel
	m.Experts, m.ExpertsPerTok, m.MoEIntermediate = 8, 2, 32
	db := tinyDB()
	for _, r := range []struct {
		tokens int
		ms     float64
	}{{1, 0.010}, {4, 0.030}} {
		db.MoE = append(db.MoE, perfdb.MoERow{Dtype: "bfloat16", Distribution: "balanced", Tokens: r.tokens, Hidden: 64, Inter: 32,
			TopK: 2, Experts: 8, TP: 1, EP: 1, Ms: r.ms})
	}
	moe := func(tokens, experts int, us float64) perf.Point {
		return perf.Point{Category: perf.CategoryMoE, Op: perf.OpMoE, X: tokens, N: experts, Ns: us * 1e3}
	}
	pts := []perf.Point{
		moe(2, 4, 40),  // balanced: min(8, 2·2) = 4 experts; table 10 + 1/3·20 µs
		moe(2, 2, 5),   // other routing: skipped
		moe(4, 8, 30),  // 0 %
		moe(8, 8, 100), // above the measured tokens: outside
	}
	rep, err := Crosscheck(db, Bundle{Source: "moe/tp1", TP: 1, Model: m, HW: tinyHW, Points: pts}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := opStats(t, rep, perf.OpMoE)
	want := ((10+20.0/3)/40 - 1 + 0) / 2 * 100 // median of two rows
	if s.Compared != 2 || s.Outside != 1 || math.Abs(s.Signed.Median-want) > 1e-9 || rep.Skipped != 1 {
		t.Errorf("moe: compared %d outside %d median %v skipped %d; want 2, 1, %g, 1", s.Compared, s.Outside, s.Signed, rep.Skipped, want)
	}
}

func TestCrosscheckErrors(t *testing.T) {
	fp8 := tinyModel
	fp8.BytesPerElem = 1
	for _, c := range []struct {
		name string
		db   *perfdb.DB
		b    Bundle
		want string
	}{
		{"no database", nil, Bundle{Source: "x/tp1", TP: 1, Model: tinyModel, HW: tinyHW}, "x/tp1: no database"},
		{"not bf16", tinyDB(), Bundle{Source: "x/tp1", TP: 1, Model: fp8, HW: tinyHW}, "not bf16"},
		{"bad tp", tinyDB(), Bundle{Source: "x/tp3", TP: 3, Model: tinyModel, HW: tinyHW}, "x/tp3: roofline: heads 4 not divisible by tp 3"},
		{"no gemm", &perfdb.DB{System: "empty"}, Bundle{Source: "x/tp1", TP: 1, Model: tinyModel, HW: tinyHW}, "empty has no bfloat16 GEMM rows"},
	} {
		_, err := Crosscheck(c.db, c.b, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestCrosscheckEmbedded runs the cross-check on the embedded Llama-3.1-8B
// bundle and checks two rows by hand against the raw tables.
func TestCrosscheckEmbedded(t *testing.T) {
	bundle, err := fs.Sub(assets.FS(), "profiles/RTXPRO6000/meta-llama/Llama-3.1-8B/bf16")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := calibrate.LoadTables(bundle, "RTXPRO6000/meta-llama/Llama-3.1-8B/bf16", 1)
	if err != nil {
		t.Fatal(err)
	}
	db, err := perfdb.Open(perfdb.Embedded(), "rtx_pro_6000_server", "vllm", "")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Crosscheck(db, Bundle{Source: tb.Source, TP: tb.TP, Model: tb.Model, HW: tb.HW, Points: tb.Points}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	find := func(pred func(r Row) bool) Row {
		t.Helper()
		for _, r := range rep.Rows {
			if pred(r) {
				return r
			}
		}
		t.Fatal("row not found")
		return Row{}
	}
	// dense.csv "qkv_proj,16,37.2263"; gemm_perf bfloat16 m 16, n 6144
	// ((32 + 2·8)·128), k 4096: 0.037159111764695905 ms.
	q := find(func(r Row) bool { return r.Op == perf.OpQKVProj && r.M == 16 })
	if q.N != 6144 || q.K != 4096 || math.Abs(q.DBNs-37159.111764695905) > 1e-6 || math.Abs(q.Diff()-(37.159111764695905/37.2263-1)) > 1e-12 {
		t.Errorf("qkv_proj m 16: %+v, diff %g; want n 6144 k 4096, 37159.1 ns, %g", q, q.Diff(), 37.159111764695905/37.2263-1)
	}
	// attention.csv "16,0,0,0,7.76533": the context row batch 1, isl 16
	// (0.0067519998798767729 ms); "0,0,1,16,8.35233": one decode at 16
	// tokens of context, linear between the generation rows at 15
	// (0.0086346666018168126 ms) and 31 (0.0084586665034294128 ms) after
	// the rows are made non-decreasing (the row at 15 is lowered to the
	// one at 31), so 8.4586665034294128 µs.
	pre := find(func(r Row) bool { return r.Op == OpAttention && r.PC == 16 && r.KP == 0 && r.ND == 0 })
	if math.Abs(pre.DBNs/1e3-6.7519998798767729) > 1e-9 || math.Abs(pre.ProfileNs-7765.33) > 1e-6 {
		t.Errorf("attention (16, 0, 0, 0): db %g µs profile %g ns; want 6.752 µs and 7765.33 ns", pre.DBNs/1e3, pre.ProfileNs)
	}
	dec := find(func(r Row) bool { return r.Op == OpAttention && r.PC == 0 && r.ND == 1 && r.KVD == 16 })
	if math.Abs(dec.DBNs/1e3-8.4586665034294128) > 1e-9 || math.Abs(dec.ProfileNs-8352.33) > 1e-6 {
		t.Errorf("attention (0, 0, 1, 16): db %g µs profile %g ns; want 8.4587 µs and 8352.33 ns", dec.DBNs/1e3, dec.ProfileNs)
	}
	if mixed := find(func(r Row) bool { return r.Op == OpAttention && r.PC == 16 && r.ND == 1 && r.KVD == 16 }); !mixed.Outside {
		t.Errorf("attention (16, 0, 1, 16) is mixed: want it outside the tables, got %+v", mixed)
	}
	// Every op of the dense model is there; lm_head (vocab 128256 above the
	// table's largest n, 65536) is entirely outside.
	for _, op := range []string{perf.OpQKVProj, perf.OpOProj, perf.OpGateUpProj, perf.OpDownProj, OpAttention} {
		if s := opStats(t, rep, op); s.Compared == 0 {
			t.Errorf("%s: no row compared", op)
		}
	}
	if s := opStats(t, rep, perf.OpLMHead); s.Compared != 0 || s.Outside != 40 {
		t.Errorf("lm_head: compared %d outside %d, want 0 and 40", s.Compared, s.Outside)
	}
}

// TestOnly keeps the rows of the named ops and token counts and
// summarises them again.
func TestOnly(t *testing.T) {
	pts := []perf.Point{dense(perf.OpQKVProj, 6, 25), dense(perf.OpQKVProj, 16, 40), dense(perf.OpOProj, 4, 10), attnPoint(16, 0, 0, 0, 4)}
	for _, c := range []struct {
		ops  []string
		ms   []int
		want string // op:compared, in order
	}{
		{nil, nil, "qkv_proj:2 o_proj:1 attention:1"},
		{[]string{perf.OpQKVProj}, nil, "qkv_proj:2"},
		{nil, []int{6, 4}, "qkv_proj:1 o_proj:1"},
		{[]string{OpAttention}, []int{16}, ""},
	} {
		rep, err := Crosscheck(tinyDB(), Bundle{Source: "tiny/tp1", TP: 1, Model: tinyModel, HW: tinyHW, Points: pts}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		rep.Only(c.ops, c.ms)
		var got []string
		for _, s := range rep.Ops {
			got = append(got, s.Op+":"+strconv.Itoa(s.Compared))
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("Only(%v, %v) = %q, want %q", c.ops, c.ms, strings.Join(got, " "), c.want)
		}
	}
}

// TestCrosscheckGridBuckets: GEMM rows above 256 tokens are split by
// whether the table measured their m; smaller ones are not. qkv_proj
// measured at m 512 (50 µs) and 768 (70 µs) is read at m 600 by tile-64
// rounding: 600 rounds to 640, half way from 512 to 768, so 60 µs.
func TestCrosscheckGridBuckets(t *testing.T) {
	db := tinyDB()
	db.GEMM = append(db.GEMM, perfdb.GEMMRow{Dtype: "bfloat16", M: 512, N: 128, K: 64, Ms: 0.050},
		perfdb.GEMMRow{Dtype: "bfloat16", M: 768, N: 128, K: 64, Ms: 0.070})
	pts := []perf.Point{dense(perf.OpQKVProj, 16, 40), dense(perf.OpQKVProj, 512, 50), dense(perf.OpQKVProj, 600, 50)}
	rep, err := Crosscheck(db, Bundle{Source: "tiny/tp1", TP: 1, Model: tinyModel, HW: tinyHW, Points: pts}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]struct {
		grid string
		dbUs float64
	}{16: {"", 40}, 512: {BucketOnGrid, 50}, 600: {BucketOffGrid, 60}}
	seen := 0
	for _, r := range rep.Rows {
		w, ok := want[r.M]
		if r.Op != perf.OpQKVProj || !ok {
			continue
		}
		seen++
		if r.Grid != w.grid || math.Abs(r.DBNs/1e3-w.dbUs) > 1e-9 {
			t.Errorf("m %d: grid %q, database %v µs; want %q and %v µs", r.M, r.Grid, r.DBNs/1e3, w.grid, w.dbUs)
		}
	}
	if seen != 3 {
		t.Errorf("%d qkv_proj rows, want 3", seen)
	}
}
