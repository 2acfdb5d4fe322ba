package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestScenarioFlags: --set overrides any field with the sweep's paths,
// --prefix-caching and --predictor toggle their fields, --handoff on a
// colocated scenario is refused, and --version answers.
func TestScenarioFlags(t *testing.T) {
	code, out, errOut := run(t, "run", "-q", "--limit", "40", "--set", "engine.max_num_seqs=16", "--set", "instances[0].count=2")
	if code != 0 || !strings.Contains(out, "2 x mixed") || !strings.Contains(out, "max_num_seqs 16") {
		t.Fatalf("--set: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = run(t, "run", "-q", "--limit", "40", "--prefix-caching=false")
	if code != 0 || !regexp.MustCompile(`(?m)^  from prefix cache: +0$`).MatchString(out) {
		t.Fatalf("--prefix-caching=false: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "run", "-q", "--limit", "10", "--predictor", "roofline")
	if code != 0 || !strings.Contains(out, "step latency: roofline") {
		t.Fatalf("--predictor roofline: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{
		{"run", "-q", "--handoff", "reserve"},
		{"run", "-q", "--set", "engine.max_num_seqs"},
		{"run", "-q", "--set", "engine.nope=3"},
		{"run", "-q", "--set", "engine.max_num_seqs=lots"},
	} {
		if code, _, errOut := run(t, args...); code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line", args, code, errOut)
		}
	}
	if code, out, _ := run(t, "--version"); code != 0 || !strings.Contains(out, "servesim version") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}

// TestPathsFromTheWorkingDirectory: --workload is read relative to the
// working directory, not the scenario file, and the scenario.yaml that
// --out writes runs from any directory.
func TestPathsFromTheWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	scen := write(t, filepath.Join(dir), "s.yaml", "name: paths\n")
	work := t.TempDir()
	data, err := os.ReadFile("../../internal/assets/data/workloads/example_trace.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	write(t, work, "trace.jsonl", string(data))
	t.Chdir(work)
	out := filepath.Join(work, "out")
	if code, stdout, errOut := run(t, "run", "-q", "-c", scen, "--workload", "trace.jsonl", "--out", out); code != 0 || !regexp.MustCompile(`(?m)^Requests total: +10$`).MatchString(stdout) {
		t.Fatalf("exit %d\n%s%s", code, stdout, errOut)
	}
	t.Chdir(t.TempDir())
	if code, stdout, errOut := run(t, "run", "-q", "-c", filepath.Join(out, "scenario.yaml")); code != 0 || !regexp.MustCompile(`(?m)^Requests total: +10$`).MatchString(stdout) {
		t.Fatalf("re-run of the written scenario: exit %d\n%s%s", code, stdout, errOut)
	}
}

// TestTPFlag: --tp sets every group's tp, over the file's, as --hardware
// sets every group's accelerator; a degree below 1 is refused in one line.
func TestTPFlag(t *testing.T) {
	dir := t.TempDir()
	sc := write(t, dir, "two.yaml", "workload: {limit: 10}\ninstances:\n  - {name: a, tp: 4}\n  - {name: b}\n")
	code, out, errOut := run(t, "run", "-q", "-c", sc, "--tp", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Instances a: 1 x mixed on RTXPRO6000 tp 2", "b: 1 x mixed on RTXPRO6000 tp 2", "step latency: profile RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/tp2"} {
		if !strings.Contains(out, want) {
			t.Errorf("--tp 2: output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "tp 4") || strings.Contains(out, "tp 1") {
		t.Errorf("--tp 2 left a group at another degree:\n%s", out)
	}
	for _, bad := range []string{"0", "-1"} {
		code, _, errOut := run(t, "run", "-q", "-c", sc, "--tp", bad)
		if code != 2 || errOut != "servesim: --tp: must be > 0 (got "+bad+")\n" {
			t.Errorf("--tp %s: exit %d, %q", bad, code, errOut)
		}
	}
}
