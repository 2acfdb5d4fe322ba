package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/calibrate"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/validate"
)

// calibrate --check reads both table formats: a profile bundle and a v0
// folder (labelled PyTorch-derived, with no band: no other embedded RTX
// 3090 tables exist).
func TestCalibrateCheckBothFormats(t *testing.T) {
	for _, c := range []struct {
		ref  string
		want []string
	}{
		{"builtin:RTXPRO6000/meta-llama/Llama-3.1-8B/bf16", []string{
			"calibration RTXPRO6000 of embedded calibration\n",
			"checked on RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/tp1 (RTXPRO6000, bundle format)",
			"  dense                  1368 ", "  attention             19364 ", "  per_sequence             80 ",
			"90% band on the embedded RTXPRO6000 tables (RTXPRO6000/Qwen/Qwen3-30B-A3B-Instruct-2507/bf16, RTXPRO6000/Qwen/Qwen3-32B/bf16)"}},
		{"../../internal/calibrate/testdata/v0/RTX3090/meta-llama/Llama-3.1-8B/tp2", []string{
			"calibration RTX3090 of embedded calibration [PyTorch-derived",
			"(RTX3090, v0 format)", "  dense                    30 ", "  attention                 3 ",
			"  90% band: no other embedded RTX3090 tables to take it from"}},
	} {
		code, stdout, stderr := run(t, "calibrate", "--check", c.ref)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.ref, code, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%s: output lacks %q:\n%s", c.ref, w, stdout)
			}
		}
	}
}

// The band line of calibrate --check is the library's BandCoverage of the
// calibration on the other embedded bundles of its accelerator; held out
// on the RTX PRO 6000's own Llama-3.1-8B tables the band is near its
// nominal 90 % (measured 88.1 %).
func TestCalibrateCheckBandCoverage(t *testing.T) {
	load := func(rel string) *calibrate.Tables {
		sub, err := fs.Sub(assets.FS(), "profiles/"+rel)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := calibrate.LoadTables(sub, rel, 1)
		if err != nil {
			t.Fatal(err)
		}
		return tb
	}
	en, _ := embeddedCalibration(t, "RTXPRO6000")
	held := load("RTXPRO6000/meta-llama/Llama-3.1-8B/bf16")
	train := []*calibrate.Tables{load("RTXPRO6000/Qwen/Qwen3-30B-A3B-Instruct-2507/bf16"), load("RTXPRO6000/Qwen/Qwen3-32B/bf16")}
	b, covered, steps, err := calibrate.BandCoverage(en.Efficiency(), train, held)
	if err != nil {
		t.Fatal(err)
	}
	if covered < 0.8 || covered > 0.97 {
		t.Errorf("held-out coverage %.3f, want near the nominal 0.9", covered)
	}
	_, stdout, _ := run(t, "calibrate", "--check", "builtin:RTXPRO6000/meta-llama/Llama-3.1-8B/bf16")
	want := fmt.Sprintf("%s; this bundle's steps inside: %.1f%% of %d\n", b, 100*covered, steps)
	if !strings.HasSuffix(stdout, want) {
		t.Errorf("output does not end with %q:\n%s", want, stdout)
	}
}

// calibrate --measured on a bench result takes the server's settings from
// -c and the client offset from --client-offset-ms: the fit is the one the
// library makes validating the file against that scenario with that offset
// (here a server with max_num_seqs 64, not the run's 128: the fit differs
// from the default scenario's).
func TestCalibrateMeasuredBenchSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("about 25 validations")
	}
	const fixture = "../../internal/validate/testdata/bench-serve-llama-3.1-8b.json.gz"
	scen := write(t, t.TempDir(), "server.yaml", "engine: {max_num_seqs: 64, max_num_batched_tokens: 2048}\n")
	code, stdout, stderr := run(t, "calibrate", "--measured", fixture, "-c", scen, "--client-offset-ms", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := os.Open(fixture)
	if err != nil {
		t.Fatal(err)
	}
	b, err := validate.ReadBench(f, fixture)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(fixture)
	if err != nil {
		t.Fatal(err)
	}
	res, err := validate.FitOverhead([]validate.MeasuredRun{{Name: fixture, TP: 1, Validate: func(tm validate.Terms) (*validate.Report, error) {
		s, src, err := config.Load(scen)
		if err != nil {
			return nil, err
		}
		s.Predictor.StepOverheadUs, s.Predictor.CollectiveScale = tm.OverheadUs, tm.CollectiveScale
		return validate.RunBench(b, validate.BenchOptions{Scenario: s, Source: src, Name: fixture, File: abs, ClientOffsetMs: 3})
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if stdout != res.String() {
		t.Fatalf("calibrate printed\n%s\nthe library fit is\n%s", stdout, res)
	}
	if _, def, _ := run(t, "calibrate", "--measured", fixture); def == stdout {
		t.Fatalf("the fit with -c equals the default scenario's:\n%s", def)
	}
	if code, _, stderr := run(t, "calibrate", "--measured", fixture, "-c", "no-such.yaml"); code != 2 || !strings.Contains(stderr, "no-such.yaml") {
		t.Fatalf("missing scenario: exit %d: %s", code, stderr)
	}
}

// The band of calibrate --check comes only from the embedded bundles of
// the accelerator named, literally: a calibration entry whose name holds
// glob metacharacters, a slash or is "." has no embedded tables, so the
// band line says so (a name "RTX*" once took its band from the RTX 4090
// and RTX PRO 6000 bundles, and "RTX[" failed with a pattern error).
func TestCalibrateCheckOddAcceleratorName(t *testing.T) {
	builtin, err := os.ReadFile("../../internal/calibrate/builtin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(builtin, []byte("\n  RTXPRO6000:\n")) {
		t.Fatal("builtin.yaml has no RTXPRO6000 entry to rename")
	}
	for _, name := range []string{"RTX*", "RTX[", "RTXPRO600?", "a/b", "."} {
		t.Run(name, func(t *testing.T) {
			cal := filepath.Join(t.TempDir(), "cal.yaml")
			renamed := bytes.Replace(builtin, []byte("\n  RTXPRO6000:\n"), []byte("\n  \""+name+"\":\n"), 1)
			if err := os.WriteFile(cal, renamed, 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := run(t, "calibrate", "--check", "builtin:RTXPRO6000/meta-llama/Llama-3.1-8B/bf16", "--calibration", cal, "--use", name)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if want := "  90% band: no other embedded " + name + " tables to take it from\n"; !strings.Contains(stdout, want) {
				t.Errorf("output lacks %q:\n%s", want, stdout)
			}
		})
	}
}

// embeddedCalibration returns the embedded calibration of accelerator acc
// and the root of the embedded profile bundles.
func embeddedCalibration(t *testing.T, acc string) (*calibrate.Entry, fs.FS) {
	t.Helper()
	file, err := calibrate.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	en, _ := file.Entry(acc)
	root, err := fs.Sub(assets.FS(), "profiles")
	if err != nil {
		t.Fatal(err)
	}
	return en, root
}

// withProfiles appends to ts the tables of each bundle or v0 folder in
// refs, read as --profiles reads them.
func withProfiles(t *testing.T, ts []*calibrate.Tables, refs []string) []*calibrate.Tables {
	t.Helper()
	for _, r := range refs {
		tb, err := loadTables("--profiles", r, 1, false)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tb)
	}
	return ts
}

// calibrate --check perfdb:NAME checks a calibration on a performance
// database system's tables (the embedded copy by default) and says which
// calibration it checked; bad database arguments exit 2 naming the flag.
func TestCalibrateCheckPerfDB(t *testing.T) {
	code, stdout, stderr := run(t, "calibrate", "--check", "perfdb:h100_sxm", "--ops")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{
		"calibration H100 of embedded calibration [fitted on per-op kernel tables perfdb:h100_sxm/vllm/0.19.0; kept from RTXPRO6000: op_scale",
		"checked on perfdb:h100_sxm/vllm/0.19.0 (H100; bf16 KV, at most 8192 tokens per step)",
		"  gemm                   5040 ", "  context_attention       552 ", "  generation_attention    1212 ", "  gemm_fp8               5040 ",
		"op    gemm/m<=128 ", "op    generation_attention/h32kv8d128 ",
	} {
		if !strings.Contains(stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, stdout)
		}
	}
	// The l40s fp8 rows are checked with the activation quantisation
	// their collection ran (vLLM's PyTorch-native one), fitted and named.
	if code, stdout, _ := run(t, "calibrate", "--check", "perfdb:l40s"); code != 0 ||
		!strings.Contains(stdout, "\nmodelled as costs of the collection, not of a served step: fp8 rows timed with vLLM's PyTorch-native activation quantisation (4.1 µs a row") ||
		!strings.Contains(stdout, "  gemm_fp8               1386     9.4%") {
		t.Errorf("perfdb:l40s: exit %d:\n%s", code, stdout)
	}
	// --use lends another accelerator's calibration to the tables.
	if code, stdout, _ := run(t, "calibrate", "--check", "perfdb:h100_sxm", "--use", "RTXPRO6000"); code != 0 ||
		!strings.Contains(stdout, "calibration RTXPRO6000 of embedded calibration [quantised GEMM and all-reduce terms fitted on per-op kernel tables perfdb:rtx_pro_6000_server/vllm/0.19.0]\n") {
		t.Errorf("--use RTXPRO6000: exit %d:\n%s", code, stdout)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--check", "perfdb:nope"}, `--check perfdb:nope: no catalog accelerator has perfdb_system "nope" (known: a100_sxm, b200_sxm, b300_sxm, gb200, gb300, h100_sxm, h200_sxm, l40s, rtx_pro_6000_server)`},
		{[]string{"--check", "perfdb:"}, "--check perfdb:NAME needs a system name"},
		{[]string{"--perfdb", "builtin"}, "give both --perfdb DIR (or builtin) and --system NAME"},
		{[]string{"--perfdb", "/no/such/dir", "--system", "h100_sxm"}, `--perfdb: "/no/such/dir" is not a directory`},
		{[]string{"--perfdb", "builtin", "--system", "h100_sxm", "--profiles", "x"}, "fits on the database alone"},
		{[]string{"--check", "perfdb:h100_sxm", "--system", "h100_sxm"}, "--check perfdb:NAME names the system"},
		{[]string{"--check", "perfdb:h100_sxm", "--perfdb-version", "9.9.9", "--perfdb", t.TempDir()}, "h100_sxm"},
	} {
		code, _, stderr := run(t, append([]string{"calibrate"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestCalibrateFP8Only: the documented command re-fits exactly the
// embedded RTXPRO6000 entry's quantised GEMM terms (fp8, block fp8 and
// NVFP4; a new file, so the base is the embedded entry), keeping every
// other field; --fp8-only, the older name, does the same; a system without
// quantised rows is refused with exit code 2.
func TestCalibrateFP8Only(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cal.yaml")
	code, _, stderr := run(t, "calibrate", "--perfdb", "builtin", "--system", "rtx_pro_6000_server", "--quant-only", "--quant-formats", "fp8,nvfp4", "--fp8-waves", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	old := filepath.Join(t.TempDir(), "old.yaml")
	if code, _, stderr := run(t, "calibrate", "--perfdb", "builtin", "--system", "rtx_pro_6000_server", "--fp8-only", "--quant-formats", "fp8,nvfp4", "--fp8-waves", "-o", old); code != 0 {
		t.Fatalf("--fp8-only: exit %d: %s", code, stderr)
	}
	if a, b := readFile(t, out), readFile(t, old); !bytes.Equal(a, b) {
		t.Errorf("--fp8-only and --quant-only wrote different files")
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := calibrate.Load(bytes.NewReader(data), out)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := f.Entry("RTXPRO6000")
	b, err := calibrate.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := b.Entry("RTXPRO6000")
	if !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("refitted entry differs from the embedded one:\n got %+v\nwant %+v", got, want)
	}
	// Block fp8 is left out: the bf16 terms at the FP8 rate stand for it,
	// its rows checked with the host issue time of their collection
	// outside CUDA graphs (docs/calibration.md).
	for _, line := range []string{"gemm_fp8               5040     3.3%", "gemm_fp8_block         2240     5.4%", "gemm_nvfp4             5040     8.8%"} {
		if !strings.Contains(stderr, line) {
			t.Errorf("fit report lacks %q:\n%s", line, stderr)
		}
	}
	if want.FP8Block != nil || want.NVFP4 == nil || want.Fit["gemm_nvfp4"].Rows == 0 {
		t.Errorf("embedded RTXPRO6000 entry: want fitted NVFP4 terms and no block fp8 ones: %+v", want)
	}
	// Every format: the block fp8 terms fitted too.
	all := filepath.Join(t.TempDir(), "all.yaml")
	if code, _, stderr := run(t, "calibrate", "--perfdb", "builtin", "--system", "rtx_pro_6000_server", "--quant-only", "--fp8-waves", "-o", all); code != 0 ||
		!strings.Contains(stderr, "gemm_fp8_block         2240     3.5%") {
		t.Errorf("all formats: exit %d: %s", code, stderr)
	}
	if code, _, stderr := run(t, "calibrate", "--perfdb", "builtin", "--system", "rtx_pro_6000_server", "--quant-only", "--quant-formats", "fp4", "-o", all); code != 2 ||
		!strings.Contains(stderr, `unknown format "fp4"`) {
		t.Errorf("--quant-formats fp4: exit %d: %s", code, stderr)
	}
	code, _, stderr = run(t, "calibrate", "--perfdb", "builtin", "--system", "a100_sxm", "--quant-only", "-o", filepath.Join(t.TempDir(), "a.yaml"))
	if code != 2 || !strings.Contains(stderr, "no fp8, block fp8 or nvfp4 GEMM rows") {
		t.Errorf("a100_sxm: exit %d: %s", code, stderr)
	}
}

// TestCalibrateAllReduceOnly: the documented command re-fits exactly the
// embedded RTXPRO6000 entry's all-reduce constants (tp 2 over PCIe without
// peer-to-peer: NCCL through host memory), keeping every other field;
// --quant-only with it is refused with exit code 2.
func TestCalibrateAllReduceOnly(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cal.yaml")
	code, _, stderr := run(t, "calibrate", "--perfdb", "builtin", "--system", "rtx_pro_6000_server", "--allreduce-only", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := calibrate.Load(bytes.NewReader(readFile(t, out)), out)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := f.Entry("RTXPRO6000")
	b, err := calibrate.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := b.Entry("RTXPRO6000")
	if !ok || !reflect.DeepEqual(got, want) || want.AllReduce == nil {
		t.Errorf("refitted entry differs from the embedded one, or has no all-reduce constants:\n got %+v\nwant %+v", got, want)
	}
	if !strings.Contains(stderr, "allreduce                20     4.1%") {
		t.Errorf("fit report lacks the all-reduce table:\n%s", stderr)
	}
	code, _, stderr = run(t, "calibrate", "--perfdb", "builtin", "--system", "rtx_pro_6000_server", "--allreduce-only", "--quant-only", "-o", out)
	if code != 2 || !strings.Contains(stderr, "give one") {
		t.Errorf("--allreduce-only --quant-only: exit %d: %s", code, stderr)
	}
}
