package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servesim/servesim/internal/metrics"
)

// runLimited runs a scenario with extra flags and returns its summary and
// requests CSV.
func runLimited(t *testing.T, dir, scenario string, flags ...string) (metrics.Result, []byte) {
	t.Helper()
	sum := filepath.Join(dir, "s.json")
	csv := filepath.Join(dir, "r.csv")
	args := append([]string{"run", "-q", "-c", scenario, "--check-invariants", "--summary-json", sum, "--requests-csv", csv}, flags...)
	code, _, stderr := run(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res metrics.Result
	if err := json.Unmarshal(readFile(t, sum), &res); err != nil {
		t.Fatal(err)
	}
	if res.Finished+res.Rejected+res.Failed+res.Truncated != res.RequestsTotal {
		t.Fatalf("outcomes do not add up: %+v", res)
	}
	return res, readFile(t, csv)
}

// TestLimits: at a limit the run ends with every request in one outcome.
// Constant arrivals every 100 ms: with max_sim_time 1.05 s exactly the 11
// requests arriving at 0, 0.1, ..., 1.0 s arrive; the other 39 are
// truncated; the arrived ones finished or failed with reason limit. Of the
// truncated requests of this generated workload only the one read ahead
// has a row in requests.csv; the rest are counted, not generated.
func TestLimits(t *testing.T) {
	dir := t.TempDir()
	sc := write(t, dir, "sc.yaml", "workload: {synthetic: {requests: 50, arrival: {kind: constant, rate: 10}, input: {kind: fixed, mean: 500}, output: {kind: fixed, mean: 400}}}\n")
	tests := []struct {
		name               string
		flags              []string
		truncated, arrived int64
		limit              string
		rows               int64 // truncated rows in requests.csv
	}{
		{"sim time", []string{"--max-sim-time", "1.05"}, 39, 11, "max_sim_time_s 1.05 reached", 1},
		{"one event", []string{"--max-events", "1"}, 49, 1, "max_events 1 reached", 1},
		{"no limit reached", []string{"--max-sim-time", "1000"}, 0, 50, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, csv := runLimited(t, dir, sc, tc.flags...)
			if res.RequestsTotal != 50 || res.Truncated != tc.truncated || res.Finished+res.Failed != tc.arrived || res.Limit != tc.limit {
				t.Fatalf("total %d finished %d failed %d truncated %d limit %q; want truncated %d, arrived %d, limit %q",
					res.RequestsTotal, res.Finished, res.Failed, res.Truncated, res.Limit, tc.truncated, tc.arrived, tc.limit)
			}
			if got := int64(bytes.Count(csv, []byte(",truncated,limit: never arrived\n"))); got != tc.rows {
				t.Errorf("%d truncated rows in requests.csv, want %d", got, tc.rows)
			}
			if tc.limit != "" && res.Failed > 0 && res.FailureReasons["limit"] != res.Failed {
				t.Errorf("failure reasons %v, want all %d under limit", res.FailureReasons, res.Failed)
			}
			// Deterministic: the same run gives the same bytes.
			_, again := runLimited(t, dir, sc, tc.flags...)
			if !bytes.Equal(csv, again) {
				t.Error("two identical limited runs wrote different requests.csv")
			}
		})
	}
}

// TestLimitsSessions: a session cut by the limit counts its sub-request in
// flight as failed and the ones not yet arrived as truncated.
func TestLimitsSessions(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "t.jsonl",
		`{"session_id": "a", "arrival_time_ns": 0, "sub_requests": [{"input_toks": 100, "output_toks": 5, "tool_duration_ns": 5000000000}, {"input_toks": 100, "output_toks": 5}, {"input_toks": 100, "output_toks": 5}]}`+"\n"+
			`{"input_toks": 100, "output_toks": 5, "arrival_time_ns": 9000000000}`+"\n")
	sc := write(t, dir, "sc.yaml", "workload: {trace: t.jsonl}\n")
	res, csv := runLimited(t, dir, sc, "--max-sim-time", "2")
	// Sub-request 0 finishes well within 2 s; sub-request 1 waits out 5 s
	// of tool time, so it and sub-request 2 never arrive; nor does the
	// plain request at 9 s.
	if res.RequestsTotal != 4 || res.Finished != 1 || res.Truncated != 3 || res.Failed != 0 {
		t.Fatalf("got %+v\n%s", res, csv)
	}
	if !strings.Contains(res.Limit, "max_sim_time_s 2") {
		t.Errorf("limit %q", res.Limit)
	}
}

// TestLimitsBadInput: negative or non-finite limits are bad input.
func TestLimitsBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"run", "-q", "--max-sim-time", "-1"},
		{"run", "-q", "--max-sim-time", "1e300"},
		{"run", "-q", "--max-events", "-5"},
	} {
		code, _, stderr := run(t, args...)
		if code != 2 || !strings.Contains(stderr, "limits.") {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
}

// TestLimitsCutOffRecords: a request in flight at a limit keeps in its
// record everything it reached. Two sessions of one 100-token prompt and
// 2,000 output tokens arrive at t=0 on one instance and are cut off after
// 1 s of decoding: each keeps its session label, its instance, queued and
// scheduled at 0, a first token, and its generated tokens, which add up to
// the summary's output tokens and to the ITL count plus one first token
// each.
func TestLimitsCutOffRecords(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "t.jsonl",
		`{"session_id": "a", "arrival_time_ns": 0, "sub_requests": [{"input_toks": 100, "output_toks": 2000}, {"input_toks": 100, "output_toks": 5}]}`+"\n"+
			`{"session_id": "b", "arrival_time_ns": 0, "sub_requests": [{"input_toks": 100, "output_toks": 2000}]}`+"\n")
	tests := []struct{ name, scenario string }{
		{"colocated", "workload: {trace: t.jsonl}\n"},
		{"pd", "instances: [{name: p, role: prefill}, {name: d, role: decode}]\nhandoff: {policy: pull}\nworkload: {trace: t.jsonl}\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := write(t, dir, tc.name+".yaml", tc.scenario)
			res, raw := runLimited(t, dir, sc, "--max-sim-time", "1")
			if res.RequestsTotal != 3 || res.Failed != 2 || res.Truncated != 1 {
				t.Fatalf("got %+v", res)
			}
			rows, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			col := map[string]int{}
			for i, h := range rows[0] {
				col[h] = i
			}
			var generated int64
			for _, r := range rows[1:] {
				get := func(name string) string { return r[col[name]] }
				if get("outcome") != "failed" {
					continue
				}
				if get("session") == "" || get("decode_instance") == "" || get("prefill_instance") == "" ||
					get("queued_ms") != "0.000" || get("scheduled_ms") != "0.000" || get("first_token_ms") == "" || get("reason") != "limit" {
					t.Errorf("cut-off record lost fields: %v", r)
				}
				g, err := strconv.ParseInt(get("generated"), 10, 64)
				if err != nil || g < 10 || g >= 2000 {
					t.Errorf("generated %q, want some but not all of 2000 tokens", get("generated"))
				}
				generated += g
			}
			if res.OutputTokens != generated || res.ITL.Count != generated-2 {
				t.Errorf("output tokens %d, ITL count %d; the records generated %d (so %d gaps)", res.OutputTokens, res.ITL.Count, generated, generated-2)
			}
		})
	}
}

// TestLimitsHugeWorkload: a limit bounds a run over a generated workload
// of any size: 9e18 requests with max_events 10 end at once, the ones
// never generated counted as truncated.
func TestLimitsHugeWorkload(t *testing.T) {
	dir := t.TempDir()
	sc := write(t, dir, "sc.yaml", "workload: {synthetic: {requests: 9e18, arrival: {kind: poisson, rate: 10}, input: {kind: fixed, mean: 100}, output: {kind: fixed, mean: 10}}}\nlimits: {max_events: 10}\n")
	done := make(chan metrics.Result, 1)
	go func() {
		res, _ := runLimited(t, dir, sc)
		done <- res
	}()
	select {
	case res := <-done:
		if res.RequestsTotal != 9e18 || res.Truncated < 9e18-10 || res.Limit != "max_events 10 reached" {
			t.Errorf("total %d, truncated %d, limit %q", res.RequestsTotal, res.Truncated, res.Limit)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no end within 20 s of wall time")
	}
}
