package main

import (
	"encoding/json"
	"testing"

	"github.com/servesim/servesim/internal/compare"
)

// TestCompareOnThePool: compare runs its policies on the worker pool and
// returns them in the order asked, each with all its requests ended, the
// same on every run.
func TestCompareOnThePool(t *testing.T) {
	args := []string{"compare", "-c", "../../examples/pd-2p2d.yaml", "--limit", "30", "--handoff", "push,pull,reserve", "--json", "--check-invariants"}
	code, stdout, stderr := run(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rs []compare.Result
	if err := json.Unmarshal([]byte(stdout), &rs); err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].Policy != "push" || rs[1].Policy != "pull" || rs[2].Policy != "reserve" {
		t.Fatalf("policies %+v", rs)
	}
	for _, r := range rs {
		s := r.Summary
		if s.RequestsTotal != 30 || s.Finished+s.Rejected+s.Failed+s.Truncated != 30 {
			t.Errorf("%s: %d requests, %d finished, %d rejected, %d failed", r.Policy, s.RequestsTotal, s.Finished, s.Rejected, s.Failed)
		}
	}
	if _, again, _ := run(t, args...); again != stdout {
		t.Error("two identical compare runs printed different results")
	}
}
