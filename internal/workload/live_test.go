package workload

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestLiveSource: ids in the order added, ErrNotYet while empty, arrivals
// never decreasing, io.EOF after Close.
func TestLiveSource(t *testing.T) {
	var l Live
	if _, err := l.Next(); !errors.Is(err, ErrNotYet) {
		t.Fatalf("empty live source: %v, want ErrNotYet", err)
	}
	l.Add(Request{Arrival: 50, InputTokens: 3, OutputTokens: 2})
	l.Add(Request{Arrival: 40, InputTokens: 4, OutputTokens: 1})
	for i, want := range []int64{50, 50} {
		e, err := l.Next()
		if err != nil || len(e.Requests) != 1 || e.Requests[0].ID != int64(i) || e.Requests[0].Arrival != want {
			t.Fatalf("entry %d: %+v, %v", i, e, err)
		}
		l.Release(e)
	}
	if _, err := l.Next(); !errors.Is(err, ErrNotYet) {
		t.Fatalf("drained live source: %v, want ErrNotYet", err)
	}
	l.Close()
	if _, err := l.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("closed live source: %v, want io.EOF", err)
	}
}

// TestTraceAbortTime: abort_time_ns becomes the request's AbortAt, and an
// abort before the arrival is refused at its line.
func TestTraceAbortTime(t *testing.T) {
	src := NewTraceReader(strings.NewReader(`{"input_toks": 5, "output_toks": 3, "arrival_time_ns": 100, "abort_time_ns": 250}
{"input_toks": 5, "output_toks": 3, "arrival_time_ns": 300, "abort_time_ns": 299}
`), "t.jsonl")
	e, err := src.Next()
	if err != nil || e.Requests[0].AbortAt != 250 {
		t.Fatalf("first line: %+v, %v", e, err)
	}
	_, err = src.Next()
	if err == nil || !strings.Contains(err.Error(), "t.jsonl:2") || !strings.Contains(err.Error(), "abort_time_ns 299") {
		t.Fatalf("abort before arrival: %v", err)
	}
}
