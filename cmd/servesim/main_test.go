package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// run executes the CLI and returns exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := execute(args, &out, &errb)
	return code, out.String(), errb.String()
}

// oneLineError checks that stderr is one error line without a stack
// trace that mentions each string of want.
func oneLineError(t *testing.T, stderr string, want ...string) {
	t.Helper()
	line := strings.TrimSuffix(stderr, "\n")
	if strings.Contains(line, "\n") || strings.Contains(line, "goroutine") || strings.Contains(line, "panic") {
		t.Fatalf("error must be one line without a stack trace, got:\n%s", stderr)
	}
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("error %q does not mention %q", line, w)
		}
	}
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBadInput checks that each kind of bad input gives one line naming
// the file:line or the field and a fix, exit code 2, and no stack trace.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	badTrace := write(t, dir, "bad.jsonl", `{"input_toks": 10, "output_toks": 5, "arrival_time_ns": 0}`+"\n"+`{"input_toks": 10, "output_toks": 5, "arrival_time_ns": 1`+"\n")
	scenario := func(name, body string) string {
		return write(t, dir, name, body)
	}
	tests := []struct {
		name string
		args []string
		want []string // substrings of the error line
	}{
		{"malformed JSONL line", []string{"run", "-q", "--workload", badTrace}, []string{"bad.jsonl:2:"}},
		{"unknown YAML field", []string{"run", "-q", "-c", scenario("unknown.yaml", "seed: 1\nengine:\n  max_num_seqz: 4\n")}, []string{"unknown.yaml:3:", "max_num_seqz"}},
		{"zero size", []string{"run", "-q", "-c", scenario("zero.yaml", "engine:\n  block_size: 0\n")}, []string{"engine.block_size", "> 0"}},
		{"negative size", []string{"run", "-q", "-c", scenario("neg.yaml", "engine:\n  max_num_seqs: -3\n")}, []string{"engine.max_num_seqs", "> 0"}},
		{"negative flag", []string{"run", "-q", "--num-gpu-blocks", "-5"}, []string{"--num-gpu-blocks", "> 0"}},
		{"zero instance count", []string{"run", "-q", "-c", scenario("count.yaml", "instances:\n  - count: 0\n")}, []string{"instances[0].count", "> 0"}},
		{"unknown model", []string{"run", "-q", "--model", "meta-llama/Llama-3.1-9B"}, []string{"model", "Llama-3.1-8B"}},
		{"unknown hardware", []string{"run", "-q", "--hardware", "H1000"}, []string{"hardware", "H100"}},
		{"missing profile for tp", []string{"run", "-q", "-c", scenario("tp.yaml", "instances:\n  - tp: 4\n")}, []string{"tp=4", "available tp: 1, 2", "--profiles"}},
		{"weights do not fit", []string{"run", "-q", "-c", scenario("fit.yaml", "instances:\n  - memory_gb: 10\n")}, []string{"instances[0]", "exceed the usable memory"}},
		{"missing trace", []string{"run", "-q", "--workload", filepath.Join(dir, "nope.jsonl")}, []string{"workload.trace", "nope.jsonl"}},
		{"bad YAML syntax", []string{"run", "-q", "-c", scenario("syntax.yaml", "engine: [\n")}, []string{"syntax.yaml:"}},
		{"unknown flag", []string{"run", "--frobnicate"}, []string{"unknown flag"}},
		{"measured dir missing", []string{"validate", "--measured", filepath.Join(dir, "none")}, []string{"--measured", "not a directory"}},
		{"measured builtin unknown", []string{"validate", "--measured", "builtin:H100-none"}, []string{"--measured", "no embedded measured run", "RTXPRO6000-Llama-3.1-8B"}},
		{"check bundle missing", []string{"calibrate", "--check", filepath.Join(dir, "none", "tp1")}, []string{"--check: ", "not a directory"}},
		{"check bundle not embedded", []string{"calibrate", "--check", "builtin:H100/meta-llama/Llama-3.1-8B/bf16/tp1"}, []string{"--check: ", "no embedded bundle"}},
		{"profiles bundle missing", []string{"calibrate", "--profiles", filepath.Join(dir, "none")}, []string{"--profiles: ", "not a directory"}},
		{"empty trace", []string{"run", "-q", "--workload", write(t, dir, "empty.jsonl", "\n\n")}, []string{"workload.trace", "empty.jsonl", "no requests"}},
		{"timeline of no request", []string{"run", "-q", "--limit", "5", "--timeline", "7"}, []string{"--timeline 7", "ids run from 0 to 4"}},
		{"front end negative cost", []string{"run", "-q", "-c", scenario("fe.yaml", "frontend:\n  output_us: -1\n")}, []string{"frontend.output_us", "must be in [0,"}},
		// Output paths that cannot be written are refused before the run.
		{"report is a directory", []string{"run", "-q", "--limit", "5", "--report", dir}, []string{"--report", "is a directory"}},
		{"summary json is a directory", []string{"run", "-q", "--limit", "5", "--summary-json", dir}, []string{"--summary-json", "is a directory"}},
		{"csv in a missing directory", []string{"run", "-q", "--limit", "5", "--requests-csv", filepath.Join(dir, "none", "r.csv")}, []string{"--requests-csv", "create the directory"}},
		{"compare report is a directory", []string{"compare", "-q", "-c", "../../examples/pd-2p2d.yaml", "--limit", "5", "--report", dir}, []string{"--report", "is a directory"}},
		{"sweep output is a directory", []string{"sweep", "-q", "-c", "../../examples/pd-2p2d.yaml", "--grid", "../../examples/grid-pd.yaml", "--limit", "5", "-o", dir}, []string{"-o", "is a directory"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			if code != 2 {
				t.Fatalf("exit code %d, want 2; stderr: %s", code, stderr)
			}
			oneLineError(t, stderr, tc.want...)
		})
	}
}

// TestUnfitRequestIsCountedFailed: a request whose prompt+output can never
// fit the KV capacity ends failed with a reason; the rest of the run
// completes and the exit code is 0.
func TestUnfitRequestIsCountedFailed(t *testing.T) {
	dir := t.TempDir()
	trace := write(t, dir, "t.jsonl",
		`{"input_toks": 100, "output_toks": 20, "arrival_time_ns": 0}`+"\n"+
			`{"input_toks": 5000, "output_toks": 100, "arrival_time_ns": 1000}`+"\n"+
			`{"input_toks": 300, "output_toks": 10, "arrival_time_ns": 2000}`+"\n")
	csv := filepath.Join(dir, "r.csv")
	sum := filepath.Join(dir, "s.json")
	code, stdout, stderr := run(t, "run", "-q", "--workload", trace, "--num-gpu-blocks", "100", "--check-invariants",
		"--requests-csv", csv, "--summary-json", sum)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "failed:") {
		t.Fatalf("summary missing: %s", stdout)
	}
	data, _ := os.ReadFile(sum)
	for _, w := range []string{`"requests_total": 3`, `"finished": 2`, `"failed": 1`} {
		if !bytes.Contains(data, []byte(w)) {
			t.Errorf("summary JSON lacks %s:\n%s", w, data)
		}
	}
	rows, _ := os.ReadFile(csv)
	if !bytes.Contains(rows, []byte("failed,unfit: prompt+output 5100 tokens needs 319 KV blocks but instance 0 holds 100")) {
		t.Errorf("per-request CSV lacks the failure reason:\n%s", rows)
	}
}

// TestDeterministicOutputs: the same scenario and seed give byte-identical
// per-request outputs, time series and summary.
func TestDeterministicOutputs(t *testing.T) {
	var outs [2]map[string][]byte
	for i := range outs {
		dir := t.TempDir()
		code, stdout, stderr := run(t, "run", "-q", "--out", dir, "--check-invariants", "--limit", "120")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		outs[i] = map[string][]byte{"stdout": []byte(stdout)}
		for _, f := range []string{"requests.csv", "requests.jsonl", "timeseries.csv", "summary.json", "scenario.yaml"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			outs[i][f] = b
		}
	}
	for name, a := range outs[0] {
		if !bytes.Equal(a, outs[1][name]) {
			t.Errorf("%s differs between two identical runs", name)
		}
		if len(a) == 0 {
			t.Errorf("%s is empty", name)
		}
	}
}

func TestDefaultRunFinishesEveryRequest(t *testing.T) {
	code, stdout, stderr := run(t, "run", "-q", "--check-invariants")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{`(?m)^Requests total: +300$`, `(?m)^  finished: +300$`, `(?m)^  failed: +0$`} {
		if !regexp.MustCompile(w).MatchString(stdout) {
			t.Errorf("summary lacks %s:\n%s", w, stdout)
		}
	}
}
