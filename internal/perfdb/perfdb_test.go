package perfdb

import (
	"bytes"
	"io/fs"
	"math"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/parquet-go/parquet-go"
)

// TestEmbeddedSystems opens every embedded system and checks that its
// tables are there, non-empty and physically plausible.
func TestEmbeddedSystems(t *testing.T) {
	want := []string{"a100_sxm", "b200_sxm", "b300_sxm", "gb200", "gb300", "h100_sxm", "h200_sxm", "l40s", "rtx_pro_6000_server"}
	got := EmbeddedSystems()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("embedded systems = %v, want %v", got, want)
	}
	for _, sys := range got {
		db, err := Open(Embedded(), sys, "vllm", "")
		if err != nil {
			t.Fatalf("%s: %v", sys, err)
		}
		if len(db.GEMM) == 0 || len(db.Context) == 0 || len(db.Generation) == 0 || len(db.CustomAR) == 0 || len(db.NCCL) == 0 {
			t.Errorf("%s: empty table: gemm %d context %d generation %d custom AR %d nccl %d",
				sys, len(db.GEMM), len(db.Context), len(db.Generation), len(db.CustomAR), len(db.NCCL))
		}
		// A large bf16 GEMM cannot beat the spec sheet's peak rate.
		for _, g := range db.GEMM {
			if g.Dtype != "bfloat16" || g.M < 4096 {
				continue
			}
			rate := 2 * float64(g.M) * float64(g.N) * float64(g.K) / (g.Ms / 1e3)
			if rate > 1.05*db.Spec.BF16FLOPS {
				t.Errorf("%s: gemm %dx%dx%d runs at %.3g FLOP/s, above the peak %.3g", sys, g.M, g.N, g.K, rate, db.Spec.BF16FLOPS)
				break
			}
		}
		ver := map[string]string{}
		for _, tb := range db.Tables {
			ver[tb.Name] = tb.Version
		}
		wantVer := "0.19.0"
		if sys == "a100_sxm" || sys == "l40s" {
			wantVer = "0.14.0"
		}
		if ver["gemm_perf"] != wantVer {
			t.Errorf("%s: gemm_perf read at version %q, want %s", sys, ver["gemm_perf"], wantVer)
		}
	}
}

// TestRTXSecondGEMMCollection: the embedded copy holds a second GEMM
// collection of rtx_pro_6000_server (vLLM 0.24.0), read only when asked
// for. At version 0.24.0 the GEMMs come from it and the other tables from
// the nearest older version; the two collections time the same shape of
// the same cuBLAS GEMM differently: Llama-3.1-8B's qkv_proj (n 6144, k
// 4096) takes 0.1510 ms at m 256 in the 0.19.0 rows and 0.0545 ms in the
// 0.24.0 rows, while at m 128 they agree within 3 % (docs/perfdb.md).
func TestRTXSecondGEMMCollection(t *testing.T) {
	at := func(db *DB, m int) float64 {
		for _, g := range db.GEMM {
			if g.Dtype == "bfloat16" && g.M == m && g.N == 6144 && g.K == 4096 {
				return g.Ms
			}
		}
		t.Fatalf("%s %s: no bf16 row m %d n 6144 k 4096", db.System, db.Version, m)
		return 0
	}
	ver := func(db *DB) map[string]string {
		v := map[string]string{}
		for _, tb := range db.Tables {
			v[tb.Name] = tb.Version
		}
		return v
	}
	def, err := Open(Embedded(), "rtx_pro_6000_server", "vllm", "")
	if err != nil {
		t.Fatal(err)
	}
	later, err := Open(Embedded(), "rtx_pro_6000_server", "vllm", "0.24.0")
	if err != nil {
		t.Fatal(err)
	}
	if v := ver(def); v["gemm_perf"] != "0.19.0" {
		t.Errorf("default run reads gemm_perf at %s, want 0.19.0", v["gemm_perf"])
	}
	if v := ver(later); v["gemm_perf"] != "0.24.0" || v["context_attention_perf"] != "0.19.0" {
		t.Errorf("at 0.24.0: gemm_perf %s, context_attention_perf %s; want 0.24.0 and 0.19.0", v["gemm_perf"], v["context_attention_perf"])
	}
	for _, c := range []struct {
		m            int
		early, later float64
	}{{256, 0.1510, 0.0545}, {128, 0.0427, 0.0414}} {
		if e, l := at(def, c.m), at(later, c.m); math.Abs(e-c.early) > 0.0002 || math.Abs(l-c.later) > 0.0002 {
			t.Errorf("m %d: %.4f and %.4f ms, want %.4f and %.4f", c.m, e, l, c.early, c.later)
		}
	}
}

// TestRTXFP8Waves pins the rtx_pro_6000_server fp8 rows that show vLLM
// 0.19's SM120 scaled-mm computing whole 128×128 tiles in waves of 188
// SMs (docs/calibration.md): a 4096×4096 fp8 GEMM takes 37.6 µs at M = 1
// (32 tiles), 42.2 µs at M = 512 (128 tiles, one wave) and 81.7 µs at
// M = 768 (192 tiles, two waves); the bf16 GEMM 27.7 µs at M = 1.
func TestRTXFP8Waves(t *testing.T) {
	db, err := Open(Embedded(), "rtx_pro_6000_server", "vllm", "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[[2]int]float64{{0, 1}: 37.6, {0, 512}: 42.2, {0, 768}: 81.7, {1, 1}: 27.7}
	got := map[[2]int]float64{}
	for _, g := range db.GEMM {
		if g.N != 4096 || g.K != 4096 {
			continue
		}
		switch g.Dtype {
		case "fp8":
			got[[2]int{0, g.M}] = g.Ms * 1e3
		case "bfloat16":
			got[[2]int{1, g.M}] = g.Ms * 1e3
		}
	}
	for k, us := range want {
		if math.Abs(got[k]-us) > 0.05 {
			t.Errorf("dtype %d m %d: %.2f µs, want %.1f", k[0], k[1], got[k], us)
		}
	}
}

// TestRTXBF16Steps pins the rtx_pro_6000_server bf16 rows whose time
// steps just past powers of two in M (docs/calibration.md): a 4096×4096
// GEMM takes 40.0 µs at M = 256, 63.1 and 63.3 µs at M = 257 and 512,
// 126.8 µs at M = 513 and 136.0 µs at M = 1,024. 256 and 257 rows are
// both one wave of 128×128 tiles over 188 SMs (64 and 96 tiles), so tile
// waves do not make the first step.
func TestRTXBF16Steps(t *testing.T) {
	db, err := Open(Embedded(), "rtx_pro_6000_server", "vllm", "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]float64{256: 40.0, 257: 63.1, 512: 63.3, 513: 126.8, 1024: 136.0}
	for _, g := range db.GEMM {
		if us, ok := want[g.M]; ok && g.Dtype == "bfloat16" && g.N == 4096 && g.K == 4096 {
			if math.Abs(g.Ms*1e3-us) > 0.05 {
				t.Errorf("m %d: %.2f µs, want %.1f", g.M, g.Ms*1e3, us)
			}
			delete(want, g.M)
		}
	}
	if len(want) > 0 {
		t.Errorf("rows missing: %v", want)
	}
}

// TestL40SFP8Rows pins the l40s fp8 rows whose excess time scales with
// the activation (M·K) rather than the work, the PyTorch-native
// activation quantisation their collection timed with each layer
// (docs/calibration.md): at
// M 8192, K 4096 they take 1518, 1674 and 1956 µs for N 1024, 2048 and
// 4096.
func TestL40SFP8Rows(t *testing.T) {
	db, err := Open(Embedded(), "l40s", "vllm", "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]float64{1024: 1518, 2048: 1674, 4096: 1956}
	for _, g := range db.GEMM {
		if us, ok := want[g.N]; ok && g.Dtype == "fp8" && g.M == 8192 && g.K == 4096 {
			if math.Abs(g.Ms*1e3-us) > 1 {
				t.Errorf("n %d: %.1f µs, want %.0f", g.N, g.Ms*1e3, us)
			}
			delete(want, g.N)
		}
	}
	if len(want) > 0 {
		t.Errorf("rows missing: %v", want)
	}
}

func TestNearestVersions(t *testing.T) {
	for _, c := range []struct {
		vers []string
		want string
		out  string
	}{
		{[]string{"0.14.0", "0.19.0", "0.22.0"}, "0.19.0", "0.19.0,0.14.0,0.22.0"},
		{[]string{"0.14.0", "0.22.0", "0.24.0"}, "0.19.0", "0.14.0,0.22.0,0.24.0"},
		{[]string{"0.22.0", "0.24.0"}, "0.19.0", "0.22.0,0.24.0"},
		{[]string{"0.9.2", "0.10.1", "0.1.dev19262"}, "0.10.0", "0.9.2,0.1.dev19262,0.10.1"},
	} {
		if got := strings.Join(nearest(c.vers, c.want), ","); got != c.out {
			t.Errorf("nearest(%v, %s) = %s, want %s", c.vers, c.want, got, c.out)
		}
	}
}

// gemmFile writes a small gemm_perf table; drop removes a column.
func gemmFile(t *testing.T, drop string, latency float64) []byte {
	t.Helper()
	type full struct {
		GemmDtype string  `parquet:"gemm_dtype"`
		M         int64   `parquet:"m"`
		N         int64   `parquet:"n"`
		K         int64   `parquet:"k"`
		Latency   float64 `parquet:"latency"`
	}
	type noK struct {
		GemmDtype string  `parquet:"gemm_dtype"`
		M         int64   `parquet:"m"`
		N         int64   `parquet:"n"`
		Latency   float64 `parquet:"latency"`
	}
	var buf bytes.Buffer
	var err error
	if drop == "k" {
		err = parquet.Write(&buf, []noK{{"bfloat16", 1, 2, latency}})
	} else {
		err = parquet.Write(&buf, []full{{"bfloat16", 1, 2, 3, latency}, {"fp8", 4, 5, 6, latency}})
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func tinyDB(t *testing.T, gemm []byte) fstest.MapFS {
	t.Helper()
	attn, err := fs.ReadFile(Embedded(), "data/h100_sxm/attention/vllm/0.19.0/context_attention_perf.parquet")
	if err != nil {
		t.Fatal(err)
	}
	gen, err := fs.ReadFile(Embedded(), "data/h100_sxm/attention/vllm/0.19.0/generation_attention_perf.parquet")
	if err != nil {
		t.Fatal(err)
	}
	return fstest.MapFS{
		"x.yaml":                             {Data: []byte("gpu:\n  mem_bw: 1e12\n  mem_capacity: 8e10\n  bfloat16_tc_flops: 1e15\nnode:\n  num_gpus_per_node: 8\n")},
		"data/x/gemm/vllm/0.22.0/reuse.yaml": {Data: []byte("reuse:\n- table: gemm_perf\n  from_version: 0.24.0\n")},
		"data/x/gemm/vllm/0.24.0/gemm_perf.parquet":                      {Data: gemm},
		"data/x/attention/vllm/0.19.0/context_attention_perf.parquet":    {Data: attn},
		"data/x/attention/vllm/0.19.0/generation_attention_perf.parquet": {Data: gen},
	}
}

func TestOpenSmallDatabase(t *testing.T) {
	db, err := Open(tinyDB(t, gemmFile(t, "", 0.5)), "x", "vllm", "0.22.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(db.GEMM) != 2 || db.GEMM[1] != (GEMMRow{Dtype: "fp8", M: 4, N: 5, K: 6, Ms: 0.5}) {
		t.Fatalf("gemm rows = %+v", db.GEMM)
	}
	if db.Tables[0].Version != "0.24.0" || db.Tables[0].Path != "data/x/gemm/vllm/0.24.0/gemm_perf.parquet" {
		t.Errorf("gemm table from %+v, want version 0.24.0 through reuse.yaml", db.Tables[0])
	}
	if db.Spec.GPUsPerNode != 8 || db.Spec.MemBW != 1e12 {
		t.Errorf("spec = %+v", db.Spec)
	}
	if len(db.MoE) != 0 || len(db.CustomAR) != 0 || len(db.NCCL) != 0 {
		t.Errorf("optional tables should be absent")
	}
}

func TestOpenErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		fsys fstest.MapFS
		sys  string
		want string
	}{
		{"missing column", tinyDB(t, gemmFile(t, "k", 1)), "x", `data/x/gemm/vllm/0.24.0/gemm_perf.parquet: missing column "k"`},
		{"bad latency", tinyDB(t, gemmFile(t, "", -1)), "x", `gemm_perf.parquet: row 1: column "latency" is -1, want > 0`},
		{"not parquet", tinyDB(t, []byte("m,n,k\n")), "x", "gemm_perf.parquet: not a readable parquet file"},
		{"unknown system", tinyDB(t, gemmFile(t, "", 1)), "y", "perfdb: system y"},
		{"bad name", tinyDB(t, gemmFile(t, "", 1)), "../x", "not a folder name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(c.fsys, c.sys, "vllm", "0.22.0")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want it to contain %q", err, c.want)
			}
		})
	}
	bad := tinyDB(t, gemmFile(t, "", 1))
	bad["x.yaml"] = &fstest.MapFile{Data: []byte("gpu:\n  mem_bw: 0\n")}
	if _, err := Open(bad, "x", "vllm", ""); err == nil || !strings.Contains(err.Error(), "x.yaml: gpu.mem_bw is 0") {
		t.Fatalf("error = %v, want the yaml field named", err)
	}
}

// TestNativeQuantFP8Rows: the l40s (vLLM 0.14.0) per-tensor fp8 rows,
// timed with vLLM's PyTorch-native activation quantisation, are left out
// of the fp8 GEMM lookups (the calibrated roofline times them), its bf16
// rows kept; h100_sxm's 0.19.0 fp8 rows are used.
func TestNativeQuantFP8Rows(t *testing.T) {
	for sys, native := range map[string]bool{"l40s": true, "h100_sxm": false} {
		db, err := Open(Embedded(), sys, "vllm", "")
		if err != nil {
			t.Fatal(err)
		}
		if db.NativeQuantFP8() != native {
			t.Errorf("%s: NativeQuantFP8 %v, want %v", sys, !native, native)
		}
		k, err := db.Kernels(Shape{Heads: 32, KVHeads: 8, HeadDim: 128, GEMMDtype: "fp8"})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := k.GEMM(true, 512, 4096, 4096); ok == native {
			t.Errorf("%s: fp8 GEMM found %v, want %v", sys, ok, !native)
		}
		if _, ok := k.GEMM(false, 512, 4096, 4096); !ok {
			t.Errorf("%s: bf16 GEMM not found", sys)
		}
	}
}
