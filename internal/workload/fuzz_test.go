package workload

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func FuzzTraceReader(f *testing.F) {
	for _, seed := range []string{
		"",
		"\n\n",
		`{"input_toks": 3, "output_toks": 2, "arrival_time_ns": 5, "input_tok_ids": [1,2,3], "output_tok_ids": [7,8]}`,
		`{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 10}` + "\n" + `{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 9}`,
		`{"session_id": "s", "arrival_time_ns": 0, "sub_requests": [{"input_toks": 2, "output_toks": 1, "tool_duration_ns": 4}, {"input_toks": 3, "output_toks": 1}]}`,
		`{"session_id": "s", "arrival_time_ns": 0, "sub_requests": []}`,
		`{"input_toks": -1}`,
		`{"input_toks": 1e400}`,
		`[{}]`,
		`null`,
		`{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 0} junk`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := NewTraceReader(bytes.NewReader(data), "fz")
		var last, nextID int64
		for range len(data) + 2 { // a trace has at most one entry per byte
			e, err := src.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if !strings.HasPrefix(err.Error(), "fz:") || strings.Contains(err.Error(), "\n") {
					t.Fatalf("badly formed error %q", err)
				}
				if _, err2 := src.Next(); err2 != err {
					t.Fatalf("error not sticky: %v then %v", err, err2)
				}
				return
			}
			if len(e.Requests) == 0 {
				t.Fatal("entry without requests")
			}
			if a := e.Requests[0].Arrival; a < last || a < 0 {
				t.Fatalf("arrival %d after %d", a, last)
			} else {
				last = a
			}
			for k, r := range e.Requests {
				if r.ID != nextID {
					t.Fatalf("id %d, want %d", r.ID, nextID)
				}
				nextID++
				if r.InputTokens <= 0 || r.OutputTokens <= 0 || r.Delay < 0 {
					t.Fatalf("bad request %+v", r)
				}
				if k > 0 && r.Arrival != 0 {
					t.Fatalf("sub-request %d has an arrival", k)
				}
				if (r.InputIDs != nil && len(r.InputIDs) != r.InputTokens) || (r.OutputIDs != nil && len(r.OutputIDs) != r.OutputTokens) {
					t.Fatalf("token ids disagree with counts: %+v", r)
				}
			}
		}
		t.Fatal("reader yielded more entries than lines")
	})
}

func FuzzReadMeasured(f *testing.F) {
	f.Add([]byte(measuredSample))
	f.Add([]byte(`{"request_id": "bench-1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		reqs, err := ReadMeasured(bytes.NewReader(data), "fm")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fm:") {
				t.Fatalf("badly formed error %q", err)
			}
			return
		}
		if _, err := MeasuredSource(reqs, nil); err != nil {
			t.Fatalf("MeasuredSource rejected ReadMeasured output: %v", err)
		}
	})
}
