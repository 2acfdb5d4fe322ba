package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/servesim/servesim/internal/compare"
)

// TestRaceCompare runs compare (one simulation per policy, in parallel) on
// a small P/D scenario; short enough for CI to run under the race
// detector (go test -race -run TestRace).
func TestRaceCompare(t *testing.T) {
	p := write(t, t.TempDir(), "small-pd.yaml", "workload: {limit: 30}\ninstances: [{role: prefill}, {role: decode, engine: {num_gpu_blocks: 3000}}]\n")
	code, stdout, stderr := run(t, "compare", "-c", p, "--json", "--check-invariants")
	if code != 0 && code != 3 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rs []compare.Result
	if err := json.Unmarshal([]byte(stdout), &rs); err != nil {
		t.Fatalf("compare --json: %v\n%s", err, stdout)
	}
	if len(rs) != 5 {
		t.Fatalf("%d policies, want 5", len(rs))
	}
	for _, r := range rs {
		if r.Stopped == "" && r.Summary.RequestsTotal != 30 {
			t.Errorf("%s: %d requests, want 30", r.Policy, r.Summary.RequestsTotal)
		}
	}
}

// TestCompareVariants: compare runs scenario files and named overrides
// side by side; each column is what run gives for that variant.
func TestCompareVariants(t *testing.T) {
	dir := t.TempDir()
	a := write(t, dir, "a.yaml", "name: one\nworkload: {limit: 30}\n")
	b := write(t, dir, "b.yaml", "name: two\nworkload: {limit: 30}\ninstances: [{count: 2}]\n")
	code, stdout, stderr := run(t, "compare", "-c", a, "-c", b, "--variant", "small batch: engine.max_num_seqs=4", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rs []compare.Result
	if err := json.Unmarshal([]byte(stdout), &rs); err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].Variant != "one" || rs[1].Variant != "two" || rs[2].Variant != "small batch" {
		t.Fatalf("variants %+v", rs)
	}
	// The variant is the first file with the override: same as run.
	if code, _, stderr := run(t, "run", "-c", a, "-q", "--set", "engine.max_num_seqs=4", "--summary-json", filepath.Join(dir, "s.json")); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	var want struct {
		TTFT struct{ Mean float64 } `json:"ttft_ms"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "s.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if rs[2].Summary.TTFT.Mean != want.TTFT.Mean || rs[2].Summary.RequestsTotal != 30 {
		t.Fatalf("variant TTFT mean %g, run gives %g", rs[2].Summary.TTFT.Mean, want.TTFT.Mean)
	}
	for _, bad := range [][]string{
		{"compare", "--variant", "no colon"},
		{"compare", "--variant", "x: engine.nope=1"},
		{"compare", "-c", a, "-c", a},
	} {
		if code, _, _ := run(t, bad...); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
}
