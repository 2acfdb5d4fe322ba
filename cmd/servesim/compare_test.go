package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/compare"
	"github.com/servesim/servesim/internal/validate"
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

// TestCompareErrorBars: --error-bars gives every variant the intervals of
// its own run --error-bars (the same numbers), in the JSON and as a table;
// a variant with no source (trace workload, profile predictor) is an input
// error.
func TestCompareErrorBars(t *testing.T) {
	args := []string{"compare", "-q", "-c", "../../examples/pd-2p2d.yaml", "--limit", "60", "--handoff", "pull,reserve", "--predictor", "roofline", "--error-bars"}
	code, stdout, stderr := run(t, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rs []struct {
		Policy    string            `json:"policy"`
		ErrorBars *validate.RunBars `json:"error_bars"`
	}
	if err := json.Unmarshal([]byte(stdout), &rs); err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].ErrorBars == nil || rs[1].ErrorBars == nil || rs[0].ErrorBars.Band == "" {
		t.Fatalf("results %.400s", stdout)
	}
	for _, r := range rs {
		for _, st := range r.ErrorBars.Stats {
			if !(st.Lo <= st.Value && st.Value <= st.Hi) {
				t.Errorf("%s %s: %v outside %v–%v", r.Policy, st.Metric, st.Value, st.Lo, st.Hi)
			}
		}
	}
	// The reserve column is reserve's own run with error bars.
	dir := t.TempDir()
	code, _, stderr = run(t, "run", "-q", "-c", "../../examples/pd-2p2d.yaml", "--limit", "60", "--handoff", "reserve", "--predictor", "roofline", "--error-bars", "--out", dir)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	one := readErrorBars(t, dir)
	if a, b := one.Stats, rs[1].ErrorBars.Stats; len(a) != len(b) || a[2] != b[2] || a[len(a)-1] != b[len(b)-1] {
		t.Errorf("reserve: run gives %+v, compare %+v", a, b)
	}
	code, stdout, _ = run(t, args...)
	if code != 0 || !strings.Contains(stdout, "Error bars (90 % nominal)") || !strings.Contains(stdout, "ttft_ms.p99") {
		t.Fatalf("table: exit %d\n%s", code, stdout)
	}
	code, _, stderr = run(t, "compare", "-q", "-c", "../../examples/pd-2p2d.yaml", "--limit", "30", "--handoff", "pull", "--error-bars")
	if code != 2 || !strings.Contains(stderr, "nothing to take an interval from") {
		t.Fatalf("profile predictor on a trace: exit %d, %q", code, stderr)
	}
}
