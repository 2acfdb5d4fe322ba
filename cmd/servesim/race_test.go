package main

import (
	"encoding/json"
	"testing"
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
	var rs []policyResult
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
