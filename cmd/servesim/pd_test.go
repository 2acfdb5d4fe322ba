package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/compare"
)

const pdStress = "../../examples/pd-stress.yaml"

// TestPDStressPolicies: on the memory-pressure scenario, eager stops with a
// report while pull, reserve, push and reject bring all 608 requests to
// exactly one terminal outcome; pull rejects and fails nothing; the
// policies differ visibly.
func TestPDStressPolicies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the 608-request scenario under five policies")
	}
	code, stdout, stderr := run(t, "compare", "-c", pdStress, "--json", "--check-invariants")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rs []compare.Result
	if err := json.Unmarshal([]byte(stdout), &rs); err != nil {
		t.Fatalf("compare --json: %v\n%s", err, stdout)
	}
	by := map[string]*compare.Result{}
	for i := range rs {
		by[rs[i].Policy] = &rs[i]
	}
	for _, p := range []string{"pull", "reserve", "reject", "push"} {
		r := by[p]
		if r == nil || r.Stopped != "" {
			t.Fatalf("%s: missing or stopped: %+v", p, r)
		}
		s := r.Summary
		if s.RequestsTotal != 608 || s.Finished+s.Rejected+s.Failed != 608 {
			t.Errorf("%s: %d total, %d finished + %d rejected + %d failed, want 608", p, s.RequestsTotal, s.Finished, s.Rejected, s.Failed)
		}
	}
	if s := by["pull"].Summary; s.Rejected != 0 || s.Failed != 0 || s.Finished != 608 {
		t.Errorf("pull must finish everything: %d finished, %d rejected, %d failed", s.Finished, s.Rejected, s.Failed)
	}
	if by["reject"].Summary.Rejected == 0 {
		t.Errorf("reject must reject under this load")
	}
	if e := by["eager"]; e == nil || !strings.Contains(e.Stopped, "needs") || !strings.Contains(e.Stopped, "decode instance") {
		t.Errorf("eager must stop with a report, got %+v", e)
	}
	peak := func(p string) int {
		m := 0
		for _, x := range by[p].Summary.PinnedKV {
			m = max(m, x.PeakBlocks)
		}
		return m
	}
	if peak("pull") <= 4*peak("reserve") {
		t.Errorf("pull pins KV on prefill while decode is congested: peak %d vs reserve %d", peak("pull"), peak("reserve"))
	}
	if by["pull"].Summary.HandoffWait.Mean <= 0 || by["reserve"].Summary.HandoffWait.Mean != 0 {
		t.Errorf("handoff wait: pull %.1f ms (must be > 0), reserve %.1f ms (must be 0: decode reserved before prefill)",
			by["pull"].Summary.HandoffWait.Mean, by["reserve"].Summary.HandoffWait.Mean)
	}
	if by["reserve"].Summary.CapacityWait.Mean <= by["pull"].Summary.CapacityWait.Mean {
		t.Errorf("reserve waits for decode capacity before prefill: %.0f ms vs pull %.0f ms",
			by["reserve"].Summary.CapacityWait.Mean, by["pull"].Summary.CapacityWait.Mean)
	}
}

// TestEagerStopsWithReport: exit code 3 and a one-line report naming the
// request, the instance, the blocks needed and free and the time.
func TestEagerStopsWithReport(t *testing.T) {
	code, stdout, stderr := run(t, "run", "-q", "-c", pdStress, "--handoff", "eager", "--check-invariants")
	if code != 3 {
		t.Fatalf("exit %d, want 3; stderr %s", code, stderr)
	}
	oneLineError(t, stderr, "eager handoff stopped the run at t=", "request ", "needs ", "KV blocks on decode instance ", " free")
	if !strings.Contains(stdout, "STOPPED:") {
		t.Errorf("summary must say the run stopped:\n%s", stdout)
	}
}

// TestDecodeCongestionInTimeSeries: under pull, the decode instances'
// admission queues and the prefill instances' pinned KV show in the time
// series.
func TestDecodeCongestionInTimeSeries(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the 608-request scenario")
	}
	dir := t.TempDir()
	ts := filepath.Join(dir, "ts.csv")
	code, _, stderr := run(t, "run", "-q", "-c", pdStress, "--timeseries", ts, "--check-invariants")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := os.Open(ts)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	maxQueue := map[string]int{}
	maxPinned := map[string]int{}
	for _, r := range rows[1:] {
		q, _ := strconv.Atoi(r[col["handoff_queue"]])
		p, _ := strconv.Atoi(r[col["kv_pinned_blocks"]])
		inst := r[col["instance"]]
		maxQueue[inst] = max(maxQueue[inst], q)
		maxPinned[inst] = max(maxPinned[inst], p)
	}
	// Instances 0-1 prefill, 2-3 decode.
	for _, d := range []string{"2", "3"} {
		if maxQueue[d] < 10 {
			t.Errorf("decode instance %s: admission queue peaked at %d; congestion must show", d, maxQueue[d])
		}
	}
	for _, p := range []string{"0", "1"} {
		if maxPinned[p] < 1000 {
			t.Errorf("prefill instance %s: pinned KV peaked at %d blocks", p, maxPinned[p])
		}
	}
}

// TestHandoffWithoutPDIsNoted: a handoff section in a scenario without
// prefill or decode instances does nothing; run says so instead of
// ignoring it silently, and says nothing when the scenario is P/D.
func TestHandoffWithoutPDIsNoted(t *testing.T) {
	dir := t.TempDir()
	const note = "note: handoff: the scenario sets a handoff section, but no instance group has role prefill or decode"
	for _, tc := range []struct {
		yaml  string
		noted bool
	}{
		{"handoff: {policy: push}\nworkload: {limit: 3}\n", true},
		{"instances: [{role: prefill}, {role: decode}]\nhandoff: {policy: push}\nworkload: {limit: 3}\n", false},
		{"workload: {limit: 3}\n", false},
	} {
		sc := write(t, dir, "s.yaml", tc.yaml)
		code, _, stderr := run(t, "run", "-q", "-c", sc)
		if code != 0 || strings.Contains(stderr, note) != tc.noted {
			t.Errorf("%q: exit %d, stderr %q; want the note: %v", tc.yaml, code, stderr, tc.noted)
		}
	}
}
