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
	for _, g := range regexp.MustCompile(`(?m)^Instances .*$`).FindAllString(out, -1) {
		if !strings.Contains(g, " tp 2,") {
			t.Errorf("--tp 2 left a group at another degree: %s", g)
		}
	}
	if !strings.Contains(out, "Note: --tp 2 replaced the different tp the scenario gives its instance groups: a (tp 4), b (tp 1);") {
		t.Errorf("--tp 2 does not name the groups it moved:\n%s", out)
	}
	for _, bad := range []string{"0", "-1"} {
		code, _, errOut := run(t, "run", "-q", "-c", sc, "--tp", bad)
		if code != 2 || errOut != "servesim: --tp: must be > 0 (got "+bad+")\n" {
			t.Errorf("--tp %s: exit %d, %q", bad, code, errOut)
		}
	}
}

// TestGroupOverridesAreNamed: --hardware and --tp set every instance
// group, --set hardware=NAME (and a --variant's hardware=NAME) only the
// groups that inherit the scenario's accelerator, and wherever the two
// differ for a group the command names it: a note on stderr and, for run,
// the same line in the summary. Uniform scenarios and one-group --set
// paths get no note.
func TestGroupOverridesAreNamed(t *testing.T) {
	const het = `name: het
hardware: H100
predictor: {kind: roofline}
instances:
  - {name: pre, role: prefill}
  - {name: dec, role: decode, hardware: A100, tp: 2}
workload: {limit: 5}
`
	const uniform = `name: uniform
hardware: H100
predictor: {kind: roofline}
instances:
  - {name: pre, role: prefill, tp: 2}
  - {name: dec, role: decode, tp: 2}
workload: {limit: 5}
`
	dir := t.TempDir()
	hetFile, uniFile := write(t, dir, "het.yaml", het), write(t, dir, "uniform.yaml", uniform)
	for _, tt := range []struct {
		name   string
		args   []string
		groups []string // expected summary lines of the groups
		note   string   // expected note ("" none)
	}{
		{"--hardware moves every group", []string{"-c", hetFile, "--hardware", "H200"},
			[]string{"Instances pre: 1 x prefill on H200 tp 1", "Instances dec: 1 x decode on H200 tp 2"},
			"--hardware H200 also moved the instance groups on an accelerator of their own: dec (A100); --set hardware=H200 would keep them"},
		{"--set hardware moves the inheriting groups", []string{"-c", hetFile, "--set", "hardware=H200"},
			[]string{"Instances pre: 1 x prefill on H200 tp 1", "Instances dec: 1 x decode on A100 tp 2"},
			"--set hardware=H200 moved only the instance groups that inherit the scenario's accelerator; these keep their own: dec (A100); --hardware H200 would move them too"},
		{"--tp flattens different degrees", []string{"-c", hetFile, "--tp", "4"},
			[]string{"Instances pre: 1 x prefill on H100 tp 4", "Instances dec: 1 x decode on A100 tp 4"},
			"--tp 4 replaced the different tp the scenario gives its instance groups: pre (tp 1), dec (tp 2); --set instances[I].tp=N sets one group's"},
		{"--set one group", []string{"-c", hetFile, "--set", "instances[1].hardware=H200", "--set", "instances[0].tp=2"},
			[]string{"Instances pre: 1 x prefill on H100 tp 2", "Instances dec: 1 x decode on H200 tp 2"}, ""},
		{"uniform --hardware and --tp", []string{"-c", uniFile, "--hardware", "H200", "--tp", "4"},
			[]string{"Instances pre: 1 x prefill on H200 tp 4", "Instances dec: 1 x decode on H200 tp 4"}, ""},
		{"uniform --set hardware", []string{"-c", uniFile, "--set", "hardware=H200"},
			[]string{"Instances pre: 1 x prefill on H200 tp 2", "Instances dec: 1 x decode on H200 tp 2"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, append([]string{"run", "-q"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			for _, g := range tt.groups {
				if !strings.Contains(out, g+",") {
					t.Errorf("summary lacks %q:\n%s", g, out)
				}
			}
			notes := regexp.MustCompile(`(?m)^Note: .*$`).FindAllString(out, -1)
			errNotes := regexp.MustCompile(`(?m)^servesim: note: .*$`).FindAllString(errOut, -1)
			switch {
			case tt.note == "" && (len(notes) > 0 || len(errNotes) > 0):
				t.Errorf("want no note, got %q and %q", notes, errNotes)
			case tt.note != "" && (len(notes) != 1 || notes[0] != "Note: "+tt.note):
				t.Errorf("summary notes %q, want %q", notes, "Note: "+tt.note)
			case tt.note != "" && (len(errNotes) != 1 || errNotes[0] != "servesim: note: "+tt.note):
				t.Errorf("stderr notes %q, want %q", errNotes, "servesim: note: "+tt.note)
			}
		})
	}
	// The commands that run several scenarios say it on stderr, naming
	// the variant.
	code, out, errOut := run(t, "compare", "-q", "-c", hetFile, "--variant", "h200: hardware=H200")
	want := "servesim: note: --variant h200: hardware=H200 moved only the instance groups that inherit the scenario's accelerator; these keep their own: dec (A100); --hardware H200 would move them too\n"
	if code != 0 || !strings.Contains(errOut, want) {
		t.Errorf("compare --variant: exit %d, stderr\n%s\nwant the line\n%s%s", code, errOut, want, out)
	}
}
