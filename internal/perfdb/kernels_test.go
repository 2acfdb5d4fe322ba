package perfdb

import (
	"math"
	"testing"
)

// gemmMs is the synthetic GEMM time: affine in each of m, n and k.
func gemmMs(m, n, k float64) float64 { return 1e-12*m*n*k + 1e-9*n*k + 0.01 }

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// synthetic builds a database whose times follow closed forms, so that
// every lookup can be checked against a hand computation.
func synthetic() *DB {
	db := &DB{System: "syn", Spec: SystemSpec{MemBW: 1e12}}
	// GEMM: gemmMs, affine in each of m, n and k, measured at m in {1, 16, 64}, n and k in {1024, 4096}.
	for _, m := range []int{1, 16, 64} {
		for _, n := range []int{1024, 4096} {
			for _, k := range []int{1024, 4096} {
				ms := gemmMs(float64(m), float64(n), float64(k))
				db.GEMM = append(db.GEMM, GEMMRow{Dtype: "bfloat16", M: m, N: n, K: k, Ms: ms})
			}
		}
	}
	// Context: t(ms) = 1e-6·b·s², batch 1 and 2 up to s = 4096, batch 4
	// only up to s = 1024 (a ragged row).
	for _, b := range []int{1, 2, 4} {
		for _, s := range []int{256, 1024, 4096} {
			if b == 4 && s > 1024 {
				continue
			}
			db.Context = append(db.Context, AttnRow{Batch: b, Seq: s, Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: "bfloat16", Ms: 1e-6 * float64(b*s*s)})
		}
	}
	// Generation: t(ms) = 0.005 + 1e-7·b·c (above the bandwidth floor).
	for _, b := range []int{1, 8} {
		for _, c := range []int{127, 1023} {
			db.Generation = append(db.Generation, AttnRow{Batch: b, Seq: c, Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: "bfloat16", Ms: 0.005 + 1e-7*float64(b*c)})
		}
	}
	for _, s := range []int64{1024, 4096} {
		db.CustomAR = append(db.CustomAR, CommRow{Op: "all_reduce", Backend: "vllm_graph", Dtype: "bfloat16", GPUs: 2, Size: s, Ms: 0.001 * float64(s) / 1024})
	}
	return db
}

func TestKernelsAgainstHandComputation(t *testing.T) {
	k, err := synthetic().Kernels(Shape{Heads: 8, KVHeads: 2, HeadDim: 64})
	if err != nil {
		t.Fatal(err)
	}
	gemm := func(m, n, kk float64) float64 { return gemmMs(m, n, kk) * 1e3 } // us; ×1e3 below for ns
	tests := []struct {
		name string
		got  func() (float64, bool)
		want float64
		ok   bool
	}{
		{"gemm on the grid", func() (float64, bool) { return k.GEMM(false, 16, 4096, 1024) }, gemm(16, 4096, 1024) * 1e3, true},
		{"gemm between m", func() (float64, bool) { return k.GEMM(false, 40, 1024, 1024) }, gemm(40, 1024, 1024) * 1e3, true},
		// bilinear in n and k reproduces a function affine in each, and
		// the m·n·k term is bilinear too: exact.
		{"gemm between n and k", func() (float64, bool) { return k.GEMM(false, 16, 2048, 3000) }, gemm(16, 2048, 3000) * 1e3, true},
		{"gemm m beyond the table", func() (float64, bool) { return k.GEMM(false, 65, 1024, 1024) }, 0, false},
		{"gemm n beyond the table", func() (float64, bool) { return k.GEMM(false, 16, 8192, 1024) }, 0, false},
		{"gemm in a missing dtype", func() (float64, bool) { return k.GEMM(true, 16, 1024, 1024) }, gemm(16, 1024, 1024) * 1e3, true},
		// log-log in s reproduces the power law s² exactly.
		{"context between lengths", func() (float64, bool) { return k.ContextAttention(1, 2000) }, 1e-6 * 2000 * 2000 * 1e6, true},
		{"context between batches", func() (float64, bool) { return k.ContextAttention(3, 512) }, 1e-6 * 3 * 512 * 512 * 1e6, true},
		// batch 4 measured up to 1024: its row extends as the power law
		// of its top two points, to 2048.
		{"context on a ragged row", func() (float64, bool) { return k.ContextAttention(4, 2048) }, 1e-6 * 4 * 2048 * 2048 * 1e6, true},
		{"context beyond every row", func() (float64, bool) { return k.ContextAttention(1, 5000) }, 0, false},
		{"generation bilinear", func() (float64, bool) { return k.GenerationAttention(4, 500) }, (0.005 + 1e-7*4*500) * 1e6, true},
		{"generation beyond the batches", func() (float64, bool) { return k.GenerationAttention(9, 500) }, 0, false},
	}
	for _, tt := range tests {
		got, ok := tt.got()
		if ok != tt.ok || (ok && !near(got, tt.want)) {
			t.Errorf("%s: got %.6g, %v; want %.6g, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// The generation table times one layer's kernel in a loop (its KV warm
// in L2); a step cannot read the KV faster than the peak bandwidth.
func TestGenerationBandwidthFloor(t *testing.T) {
	db := synthetic()
	db.Spec.MemBW = 1e9 // 1 GB/s: the floor dominates
	k, err := db.Kernels(Shape{Heads: 8, KVHeads: 2, HeadDim: 64})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := k.GenerationAttention(8, 1000)
	// 8 × 1000 tokens × 2 (K, V) × 2 heads × 64 × 2 bytes at 1 GB/s.
	want := 8 * 1000 * 2 * 2 * 64 * 2.0
	if !ok || !near(got, want) {
		t.Fatalf("floor: got %g ns, want %g", got, want)
	}
}

// The GEMM table times a few copies of one layer in a loop (weights warm
// in L2 when they fit); a step cannot stream them faster than the peak
// bandwidth.
func TestGEMMBandwidthFloor(t *testing.T) {
	db := synthetic()
	db.Spec.MemBW = 1e9 // 1 GB/s: the floor dominates
	k, err := db.Kernels(Shape{Heads: 8, KVHeads: 2, HeadDim: 64})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := k.GEMM(false, 16, 4096, 1024)
	// weights 4096×1024, input 16×1024, output 16×4096, 2 bytes each, at 1 GB/s.
	want := (4096*1024 + 16*1024 + 16*4096) * 2.0
	if !ok || !near(got, want) {
		t.Fatalf("floor: got %g ns, want %g", got, want)
	}
	// Above the floor the table's time stands.
	db.Spec.MemBW = 1e12
	k, err = db.Kernels(Shape{Heads: 8, KVHeads: 2, HeadDim: 64})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := k.GEMM(false, 16, 4096, 1024); !near(got, gemmMs(16, 4096, 1024)*1e6) {
		t.Fatalf("above the floor: got %g ns, want the table's %g", got, gemmMs(16, 4096, 1024)*1e6)
	}
}

func TestCollectivesLookup(t *testing.T) {
	c := synthetic().Collectives(2)
	for _, tt := range []struct {
		bytes int64
		want  float64
		ok    bool
	}{
		{2048, 1000, true},       // 1024 elements: 0.001 ms
		{5120, 1000 * 2.5, true}, // between 1024 and 4096 elements
		{100, 1000, true},        // below the smallest size: its latency
		{16384, 0, false},        // beyond the table
	} {
		got, ok := c.AllReduce(true, tt.bytes)
		if ok != tt.ok || (ok && !near(got, tt.want)) {
			t.Errorf("all-reduce of %d B: got %g, %v; want %g, %v", tt.bytes, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := c.AllReduce(false, 2048); ok {
		t.Error("no NCCL rows: the NCCL all-reduce must report false")
	}
	if c := synthetic().Collectives(4); c.custom != nil {
		t.Error("no rows at 4 GPUs")
	}
}

// A point above a later one (a kernel-selection outlier) is lowered to
// the smallest later time: a smaller problem never takes longer.
func TestCurvesAreMonotone(t *testing.T) {
	c := buildCurve([]float64{1, 2, 3, 4, 4}, []float64{5, 9, 7, 8, 10})
	want := []float64{5, 7, 7, 9}
	for i, y := range c.y {
		if y != want[i] {
			t.Fatalf("curve %v, want %v (repeated x averaged, then the suffix minimum)", c.y, want)
		}
	}
}

// A shape measured with two kernels is read from the one vLLM 0.19 runs:
// FlashAttention on SM 9.0, FlashInfer on SM 10.0.
func TestAttentionKernelChoice(t *testing.T) {
	for _, c := range []struct {
		sm   int
		want float64 // ns at batch 1, 256 tokens
	}{{90, 2000}, {100, 3000}, {120, 2000}} {
		db := &DB{Spec: SystemSpec{SMVersion: c.sm}}
		db.GEMM = []GEMMRow{{Dtype: "bfloat16", M: 1, N: 1, K: 1, Ms: 1}}
		for _, kr := range []struct {
			kernel string
			ms     float64
		}{{"vllm_flash_attn", 0.002}, {"vllm_flashinfer", 0.003}} {
			db.Context = append(db.Context, AttnRow{Batch: 1, Seq: 256, Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: "bfloat16", Ms: kr.ms, Kernel: kr.kernel})
		}
		k, err := db.Kernels(Shape{Heads: 8, KVHeads: 2, HeadDim: 64})
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := k.ContextAttention(1, 256); !ok || !near(got, c.want) {
			t.Errorf("SM %d: %g ns (%v), want %g", c.sm, got, ok, c.want)
		}
	}
}

// A context row faster than the causal FLOPs at the peak rate is raised
// to them.
func TestContextComputeFloor(t *testing.T) {
	db := synthetic()
	db.Spec.BF16FLOPS = 1e12 // 1 TFLOP/s: the floor dominates
	k, err := db.Kernels(Shape{Heads: 8, KVHeads: 2, HeadDim: 64})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := k.ContextAttention(2, 1000)
	// 2·s²·heads·head_dim per sequence: 2 × 2 × 1000² × 8 × 64 FLOPs.
	if want := 2 * 2 * 1000.0 * 1000 * 8 * 64 / 1e12 * 1e9; !ok || !near(got, want) {
		t.Fatalf("floor: %g ns, want %g", got, want)
	}
}

// The generation floor streams the KV at the table's own cold-read
// bandwidth: the median over the rows whose KV is at least half the
// largest. Here rows of 64 MB and more run at 500 GB/s (KV per token
// and layer: 2 × 2 heads × 64 × 2 B = 512 B), a row of 2 MB ran from a
// warm cache at 2 TB/s; with a 1 TB/s peak, the floor is 500 GB/s.
func TestGenerationColdStreamFloor(t *testing.T) {
	db := &DB{System: "syn", Spec: SystemSpec{MemBW: 1e12}}
	row := func(b, c int, gbps float64) AttnRow {
		bytes := float64(b*c) * 512
		return AttnRow{Batch: b, Seq: c, Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: "bfloat16", Ms: bytes / (gbps * 1e9) * 1e3}
	}
	db.Generation = []AttnRow{row(8, 512, 2000), row(64, 2048, 450), row(64, 4096, 500), row(128, 4096, 550), row(16, 512, 2000)}
	db.GEMM = []GEMMRow{{Dtype: "bfloat16", M: 1, N: 1024, K: 1024, Ms: 0.01}}
	k, err := db.Kernels(Shape{Heads: 8, KVHeads: 2, HeadDim: 64})
	if err != nil {
		t.Fatal(err)
	}
	// Rows of at least half of 128·4096·512 B: 64×4096 (500 GB/s) and
	// 128×4096 (550); 64×2048 is a quarter. Median 525 GB/s.
	if !near(k.kvStreamBW, 525e9) {
		t.Fatalf("cold bandwidth %g, want 5.25e11", k.kvStreamBW)
	}
	got, ok := k.GenerationAttention(8, 512)
	want := 8 * 512 * 512 / 525e9 * 1e9 // ns
	if !ok || !near(got, want) {
		t.Fatalf("warm row floored: got %g ns, want %g", got, want)
	}
	// Above the peak the table's largest rows cannot raise the floor.
	db.Spec.MemBW = 1e11
	if k, err = db.Kernels(Shape{Heads: 8, KVHeads: 2, HeadDim: 64}); err != nil {
		t.Fatal(err)
	}
	if k.kvStreamBW != 0 || !near(k.kvNsPerToken, 512/1e11*1e9) {
		t.Fatalf("peak below the table: stream %g, ns per token %g", k.kvStreamBW, k.kvNsPerToken)
	}
}
