package workload

import (
	"errors"
	"math"
	"strings"
	"testing"
)

const measuredSample = `{"request_id": "bench-1", "input_toks": 4, "output_toks": 3, "arrival_time": 1777142838.6, "queued_ts": 100.25, "scheduled_ts": 100.5, "first_token_ts": 101.0, "last_token_ts": 102.0}

{"request_id": "bench-0", "input_toks": 2, "output_toks": 1, "arrival_time": 1777142838.3, "queued_ts": 100.0, "scheduled_ts": 100.0, "first_token_ts": 100.5, "last_token_ts": 100.5}
{"request_id": "bench-2", "input_toks": 5, "output_toks": 2, "arrival_time": 1777142838.3, "queued_ts": 100.0, "scheduled_ts": 100.1, "first_token_ts": 100.2, "last_token_ts": 100.4}
`

func TestReadMeasured(t *testing.T) {
	reqs, err := ReadMeasured(strings.NewReader(measuredSample), "m.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 3 {
		t.Fatalf("got %d requests, want 3", len(reqs))
	}
	r := reqs[0]
	if r.RequestID != "bench-1" || r.Index != 1 || r.InputToks != 4 || r.OutputToks != 3 {
		t.Errorf("bad first request %+v", r)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !near(r.TTFT(), 0.75) || !near(r.E2E(), 1.75) || !near(r.QueueDelay(), 0.25) {
		t.Errorf("TTFT %v E2E %v queue %v", r.TTFT(), r.E2E(), r.QueueDelay())
	}
	if tpot, ok := r.TPOT(); !ok || !near(tpot, 0.5) {
		t.Errorf("TPOT = %v, %v; want 0.5, true", tpot, ok)
	}
	if _, ok := reqs[1].TPOT(); ok {
		t.Error("TPOT defined for a single output token")
	}

	// Replay: ordered by index, then stably by arrival; ID is the index.
	ids := func(i int) ([]int32, []int32) {
		if i == 2 {
			return []int32{1, 2, 3, 4, 5}, nil
		}
		return nil, nil
	}
	src, err := MeasuredSource(reqs, ids)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Collect(src)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id      int64
		arrival int64
		nIDs    int
	}{{0, 0, 0}, {2, 0, 5}, {1, 250000000, 0}}
	if len(got) != len(want) {
		t.Fatalf("got %d entries", len(got))
	}
	for i, w := range want {
		r := got[i].Requests[0]
		if r.ID != w.id || r.Arrival != w.arrival || len(r.InputIDs) != w.nIDs {
			t.Errorf("entry %d = %+v, want id %d arrival %d ids %d", i, r, w.id, w.arrival, w.nIDs)
		}
	}
	if reqs[0].RequestID != "bench-1" {
		t.Error("MeasuredSource reordered its input")
	}

	if _, err := MeasuredSource(reqs, func(int) ([]int32, []int32) { return []int32{1}, nil }); err == nil {
		t.Error("token-id length mismatch accepted")
	}
	dup := append(reqs[:1:1], reqs[0])
	if _, err := MeasuredSource(dup, nil); err == nil {
		t.Error("duplicate index accepted")
	}
}

func TestReadMeasuredErrors(t *testing.T) {
	line := func(repl ...string) string {
		s := `{"request_id": "bench-0", "input_toks": 2, "output_toks": 2, "arrival_time": 1.0, "queued_ts": 1.0, "scheduled_ts": 2.0, "first_token_ts": 3.0, "last_token_ts": 4.0}`
		for i := 0; i+1 < len(repl); i += 2 {
			s = strings.Replace(s, repl[i], repl[i+1], 1)
		}
		return s
	}
	tests := []struct {
		name, data, want string
	}{
		{"malformed", `{"request_id": `, "m:1: malformed JSON"},
		{"unknown field", line(`"arrival_time"`, `"arrival"`), `m:1: unknown field "arrival"; allowed fields: request_id,`},
		{"missing id", line(`"request_id": "bench-0", `, ``), "m:1: request_id is missing;"},
		{"bad id", line(`bench-0`, `bench`), `m:1: request_id "bench" does not end in "-<index>";`},
		{"missing input", line(`"input_toks": 2, `, ``), "m:1: input_toks is missing;"},
		{"zero output", line(`"output_toks": 2`, `"output_toks": 0`), "m:1: output_toks must be in [1, 2147483647] (got 0);"},
		{"missing ts", line(`, "last_token_ts": 4.0`, ``), "m:1: last_token_ts is missing;"},
		{"unordered ts", line(`"first_token_ts": 3.0`, `"first_token_ts": 1.5`), "m:1: first_token_ts 1.5 is earlier than scheduled_ts 2;"},
		{"duplicate index", line() + "\n" + line(`bench-0`, `other-0`), `m:2: request_id "other-0" repeats index 0 of line 1;`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadMeasured(strings.NewReader(tc.data), "m")
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant prefix %q", err, tc.want)
			}
			var le *LineError
			if !errors.As(err, &le) {
				t.Errorf("error %T is not a *LineError", err)
			}
		})
	}
}

func TestTrailingIndex(t *testing.T) {
	for id, want := range map[string]int{"bench-0": 0, "bench-17": 17, "a-b-3": 3, "x--4": 4} {
		if got, ok := trailingIndex(id); !ok || got != want {
			t.Errorf("trailingIndex(%q) = %d, %v; want %d", id, got, ok, want)
		}
	}
	for _, id := range []string{"", "bench", "bench-", "bench-x", "bench-+3", "bench-1.5"} {
		if _, ok := trailingIndex(id); ok {
			t.Errorf("trailingIndex(%q) accepted", id)
		}
	}
}
