package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/dbcheck"
	"github.com/servesim/servesim/internal/perfdb"
)

// writeBundle writes a small profile bundle of Llama-3.1-8B on the RTX PRO
// 6000 (meta.yaml and tp1/) with the given dense.csv and returns its
// folder.
func writeBundle(t *testing.T, denseCSV string) string {
	t.Helper()
	meta, err := os.ReadFile("../../internal/assets/data/profiles/RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/meta.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bf16")
	files := map[string]string{
		"meta.yaml":            string(meta),
		"tp1/dense.csv":        denseCSV,
		"tp1/per_sequence.csv": "layer,sequences,time_us\nlm_head,1,714.0\nsampler,1,30\n",
		"tp1/attention.csv":    "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n16,0,0,0,7.76533\n0,0,1,16,8.35233\n16,0,1,16,7.936\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestPerfDBCrosscheckSmallBundle: a synthetic bundle's rows are compared
// with the embedded tables; the attention rows are checked by hand (the
// mixed row is outside the tables).
func TestPerfDBCrosscheckSmallBundle(t *testing.T) {
	dir := writeBundle(t, "layer,tokens,time_us\nqkv_proj,16,37.2263\nqkv_proj,8,35.851\nlayernorm,16,3\n")
	code, out, stderr := run(t, "perfdb", "crosscheck", "--profile", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var reps []struct {
		TP  int `json:"tp"`
		Ops []struct {
			Op       string `json:"op"`
			Compared int    `json:"compared"`
			Outside  int    `json:"outside"`
			Signed   struct {
				Median float64 `json:"median"`
			} `json:"signed_pct"`
		} `json:"ops"`
		Skipped int `json:"skipped_rows"`
	}
	if err := json.Unmarshal([]byte(out), &reps); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(reps) != 1 || reps[0].TP != 1 || reps[0].Skipped != 2 {
		t.Fatalf("reports %+v, want one at tp 1 with 2 rows skipped (layernorm, sampler)", reps)
	}
	got := map[string]int{}
	for _, o := range reps[0].Ops {
		got[o.Op] = o.Compared*100 + o.Outside
	}
	// qkv_proj 2 compared; lm_head 1 outside; attention 2 compared and
	// the mixed row outside; the mixed row's profile parts 1.
	want := map[string]int{"qkv_proj": 200, "lm_head": 1, "attention": 201, "attention parts": 100}
	for op, w := range want {
		if got[op] != w {
			t.Errorf("%s: compared*100+outside = %d, want %d (all %v)", op, got[op], w, got)
		}
	}
	// The prefill (6.752/7.76533 - 1 = -13.05 %) and decode (8.4587/
	// 8.35233 - 1 = +1.27 %: the generation rows at 15 and 31 tokens, the
	// first lowered to the second) rows: median -5.89 %.
	for _, o := range reps[0].Ops {
		if o.Op == "attention" && (o.Signed.Median < -5.95 || o.Signed.Median > -5.85) {
			t.Errorf("attention median %g %%, want -5.89 %%", o.Signed.Median)
		}
	}
}

func TestPerfDBErrors(t *testing.T) {
	badHeader := writeBundle(t, "layer,tokens,time\nqkv_proj,16,37\n")
	badValue := writeBundle(t, "layer,tokens,time_us\nqkv_proj,16,37\nqkv_proj,x,37\n")
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	brokenDB := t.TempDir()
	for name, body := range map[string]string{
		"sys.yaml": "gpu: {mem_bw: 1.0e12, mem_capacity: 1.0e10, bfloat16_tc_flops: 1.0e14}\n",
		"data/sys/gemm/vllm/0.19.0/gemm_perf.parquet": "not parquet",
	} {
		p := filepath.Join(brokenDB, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	llama := "builtin:RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/tp1"
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"perfdb", "crosscheck"}, []string{"--profile BUNDLE is required"}},
		{[]string{"perfdb", "crosscheck", "--profile", "/no/such/bundle"}, []string{"--profile", "/no/such/bundle", "not a directory"}},
		{[]string{"perfdb", "crosscheck", "--profile", badHeader}, []string{"tp1/dense.csv:1", "lacks column(s) time_us"}},
		{[]string{"perfdb", "crosscheck", "--profile", badValue}, []string{"tp1/dense.csv:3", "tokens"}},
		{[]string{"perfdb", "crosscheck", "--profile", llama, "--system", "h999"}, []string{"--system h999", "no such system", "rtx_pro_6000_server"}},
		{[]string{"perfdb", "crosscheck", "--profile", "builtin:RTX4090/meta-llama/Llama-3.1-8B/bf16"}, []string{"RTX4090 has no perfdb_system", "--system"}},
		{[]string{"perfdb", "crosscheck", "--profile", llama, "--path", notDir}, []string{"--path", "not a directory"}},
		{[]string{"perfdb", "crosscheck", "--profile", llama, "--path", brokenDB, "--system", "sys"}, []string{"gemm_perf.parquet", "not a readable parquet file"}},
		{[]string{"perfdb", "systems", "--path", brokenDB}, []string{"gemm_perf.parquet"}},
		{[]string{"perfdb", "systems", "--system", "h999"}, []string{"no system h999"}},
		{[]string{"perfdb", "collectives"}, []string{"--system NAME or --hardware NAME"}},
		{[]string{"perfdb", "collectives", "--system", "h999"}, []string{"--system h999", "no catalog accelerator"}},
		{[]string{"perfdb", "collectives", "--hardware", "RTX4090"}, []string{"RTX4090 has no perfdb_system"}},
		{[]string{"perfdb", "collectives", "--system", "rtx_pro_6000_server", "--gpus", "3"}, []string{"no all-reduce rows for 3 GPUs"}},
		{[]string{"perfdb", "alltoall", "--ep", "12"}, []string{"--ep", `"12"`, "256 experts"}},
		{[]string{"perfdb", "alltoall", "--model", "meta-llama/Llama-3.1-8B"}, []string{"--model", "dense"}},
		{[]string{"perfdb", "alltoall", "--tokens", "0"}, []string{"--tokens"}},
		{[]string{"perfdb", "alltoall", "--dispatch-dtype", "int4"}, []string{"--dispatch-dtype", "fp8 or bf16"}},
		{[]string{"perfdb", "alltoall", "--hardware", "H999"}, []string{"--hardware"}},
		{[]string{"perfdb", "steps", "--decode", "32"}, []string{"--decode", `"32"`, "32x2048"}},
		{[]string{"perfdb", "steps", "--prefill", "0"}, []string{"--prefill", `"0"`}},
		{[]string{"perfdb", "steps", "--format", "int3"}, []string{"--format", `"int3"`, "nvfp4"}},
		{[]string{"perfdb", "steps", "--hardware", "H999", "--model", "meta-llama/Llama-3.1-8B", "--tp", "1"}, []string{"no case builds", "H999"}},
		{[]string{"perfdb", "gemm-holdout", "--by", "m"}, []string{"--by", `"m"`, "range, dtype or system"}},
		{[]string{"perfdb", "gemm-holdout", "--axis", "x"}, []string{"--axis", `"x"`, "m, n or k"}},
		{[]string{"perfdb", "gemm-holdout", "--system", "h999"}, []string{"--system h999", "no such system", "rtx_pro_6000_server"}},
		{[]string{"perfdb", "gemm-holdout", "--path", brokenDB}, []string{"gemm_perf.parquet", "not a readable parquet file"}},
		{[]string{"perfdb", "frobnicate"}, []string{"frobnicate"}},
	} {
		code, _, stderr := run(t, c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", c.args, code, stderr)
			continue
		}
		oneLineError(t, stderr, c.want...)
	}
}

// TestPerfDBCollectivesCommand: the 1 MiB row of the tp 2 table on the RTX
// PRO 6000's catalog link (PCIe without peer-to-peer: NCCL through host
// memory) with its calibration's fitted constants (NCCL latency 17.53 µs,
// bus efficiency 0.4735 of 63 GB/s, halved through the host: 14.915 GB/s)
// is 17.53 + 1 MiB / 14.915 GB/s = 87.8 µs.
func TestPerfDBCollectivesCommand(t *testing.T) {
	code, out, stderr := run(t, "perfdb", "collectives", "--system", "rtx_pro_6000_server")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "1 MiB") {
			if f := strings.Fields(line); len(f) < 7 || f[5] != "87.8" || f[6] != "87.8" {
				t.Errorf("1 MiB row %q: want the model at 87.8 µs", line)
			}
			return
		}
	}
	t.Errorf("no 1 MiB row in\n%s", out)
}

// TestPerfDBAlltoallCommand: DeepSeek-V3 on H200 at 128 tokens a rank:
// EP 16 low-latency 117.7 + 194.8 = 312.5 µs a layer by the model
// (moe.TestDeepEPDecodeStepByHand), 18.12 ms over 58 MoE layers; EP 8
// low-latency from the measured H200 table, 35.1 + 67.7 µs.
func TestPerfDBAlltoallCommand(t *testing.T) {
	code, out, stderr := run(t, "perfdb", "alltoall", "--ep", "8,16")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := map[string][]string{
		"16 2 deepep_low_latency": {"117.7", "194.8", "312.5", "18.12", "model"},
		"8 1 deepep_low_latency":  {"35.1", "67.7", "102.9", "5.97", "perfdb", "h200_sxm"},
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		if w, ok := want[strings.Join(f[:3], " ")]; ok {
			if got := strings.Join(f[3:], " "); got != strings.Join(w, " ") {
				t.Errorf("row %q: got %q, want %q", strings.Join(f[:3], " "), got, strings.Join(w, " "))
			}
			delete(want, strings.Join(f[:3], " "))
		}
	}
	if len(want) > 0 {
		t.Errorf("rows missing: %v in\n%s", want, out)
	}
}

// copyTree copies the folder src of the embedded assets' source tree into
// dst, skipping the folders named in skip.
func copyTree(t *testing.T, src, dst string, skip ...string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		for _, s := range skip {
			if rel == s {
				return filepath.SkipDir
			}
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPerfDBUserCopy: --path reads a user's copy of the database: a
// system without MoE tables, whose GEMM table sits in an older version
// folder, is read at that version and gives the embedded copy's times.
func TestPerfDBUserCopy(t *testing.T) {
	const root = "../../internal/assets/data/aiconfigurator/systems"
	dir := t.TempDir()
	copyTree(t, filepath.Join(root, "data", "rtx_pro_6000_server"), filepath.Join(dir, "data", "rtx_pro_6000_server"), "moe")
	yaml, err := os.ReadFile(filepath.Join(root, "rtx_pro_6000_server.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rtx_pro_6000_server.yaml"), yaml, 0o644); err != nil {
		t.Fatal(err)
	}
	gemm := filepath.Join(dir, "data", "rtx_pro_6000_server", "gemm", "vllm")
	if err := os.Rename(filepath.Join(gemm, "0.19.0"), filepath.Join(gemm, "0.18.1")); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, "perfdb", "systems", "--path", dir)
	if code != 0 {
		t.Fatalf("systems: exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "1 systems") || !strings.Contains(out, "gemm_perf                  0.18.1     114576  0.18.1") || strings.Contains(out, "moe_perf") {
		t.Errorf("systems --path: want one system, gemm_perf read at 0.18.1 and no moe_perf:\n%s", out)
	}
	llama := "builtin:RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/tp1"
	_, embedded, _ := run(t, "perfdb", "crosscheck", "--profile", llama, "--op", "qkv_proj,attention")
	code, copied, stderr := run(t, "perfdb", "crosscheck", "--profile", llama, "--op", "qkv_proj,attention", "--path", dir)
	if code != 0 || copied != embedded || !strings.Contains(copied, "qkv_proj                    152") {
		t.Errorf("crosscheck --path: exit %d (%s); output differs from the embedded copy's:\n%s\nvs\n%s", code, stderr, copied, embedded)
	}
}

// TestPerfDBStepsCollectivesFromTables checks the communication part of
// the perfdb predictor's steps against the database's rows by hand:
// Llama-3.1-8B (32 layers, hidden 4096, vocabulary 128,256) at tp 2 on
// B200, one decode (one token, the CUDA graph of size 1): 2·32 + 1 = 65
// all-reduces of 1 × 4096 × 2 = 8 KiB, vLLM's dispatch captured in a
// graph, and one all-gather of the logits, 128,256 × 2 bytes; at tp 1
// nothing.
func TestPerfDBStepsCollectivesFromTables(t *testing.T) {
	db, err := perfdb.Open(perfdb.Embedded(), "b200_sxm", "vllm", "")
	if err != nil {
		t.Fatal(err)
	}
	c := db.Collectives(2)
	ar, ok1 := c.AllReduce(true, 8192)
	ag, ok2 := c.AllGather(128256 * 2)
	if !ok1 || !ok2 {
		t.Fatalf("tables lack the sizes: all-reduce %v, all-gather %v", ok1, ok2)
	}
	want := (65*ar + ag) / 1e3
	rows, skipped, err := dbcheck.Steps([]dbcheck.StepCase{
		{Hardware: "B200", Model: "meta-llama/Llama-3.1-8B", TP: 2},
		{Hardware: "B200", Model: "meta-llama/Llama-3.1-8B", TP: 1},
	}, []dbcheck.StepShape{{Decodes: 1, Context: 1024}}, stepPredictor)
	if err != nil || len(skipped) > 0 || len(rows) != 2 {
		t.Fatalf("rows %v, skipped %v, err %v", rows, skipped, err)
	}
	if got := rows[0].PerfDBCommUs; math.Abs(got-want) > 0.01 {
		t.Errorf("tp 2 perfdb communication %.3f µs, want 65 × %.3f + %.3f = %.3f µs", got, ar/1e3, ag/1e3, want)
	}
	if r := rows[0]; !(r.RooflineCommUs > 0) {
		t.Errorf("tp 2 roofline has no communication: %+v", r)
	}
	if r := rows[1]; r.RooflineCommUs != 0 || r.PerfDBCommUs != 0 {
		t.Errorf("tp 1 row has communication: %+v", r)
	}
	// A case that cannot run is skipped with its reason.
	_, skipped, err = dbcheck.Steps([]dbcheck.StepCase{{Hardware: "H100", Model: "meta-llama/Llama-3.1-8B", Quantization: "modelopt_fp4", TP: 1}},
		[]dbcheck.StepShape{{Prefill: 128}}, stepPredictor)
	if err == nil || len(skipped) != 1 || !strings.Contains(skipped[0], "needs FP4 tensor cores") {
		t.Errorf("skipped %q, err %v", skipped, err)
	}
}

// TestPerfDBGEMMHoldoutCommand: on the RTX PRO 6000's rows, the rule the
// predictor reads GEMMs with (tile-64) is closer to the held-out rows than
// linear in m where the two differ (m 17-4353), the claim docs/perfdb.md
// rests the choice on.
func TestPerfDBGEMMHoldoutCommand(t *testing.T) {
	code, out, stderr := run(t, "perfdb", "gemm-holdout", "--system", "rtx_pro_6000_server", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var groups []dbcheck.HoldoutGroup
	if err := json.Unmarshal([]byte(out), &groups); err != nil {
		t.Fatal(err)
	}
	if len(groups) != 4 {
		t.Fatalf("%d groups, want 4 m ranges: %s", len(groups), out)
	}
	for _, g := range groups[1:3] {
		rule := map[string]dbcheck.HoldoutRule{}
		for _, r := range g.Rules {
			rule[r.Rule] = r
		}
		lin, tile := rule[perfdb.GEMMLinear.String()], rule[perfdb.GEMMTile64.String()]
		if g.Rows == 0 || !(tile.AbsMedian < lin.AbsMedian) || !(tile.Closer > tile.Farther) {
			t.Errorf("%s: tile-64 %+v against linear %+v", g.Group, tile, lin)
		}
	}
}
