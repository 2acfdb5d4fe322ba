package workload

import (
	"bytes"
	"io/fs"
	"math"
	"reflect"
	"testing"

	"github.com/servesim/servesim/internal/assets"
)

func readAsset(t *testing.T, path string) []Entry {
	t.Helper()
	f, err := assets.FS().Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := Collect(NewTraceReader(f, path))
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func TestEmbeddedWorkloads(t *testing.T) {
	tests := []struct {
		path        string
		count       int
		first, last Request // InputIDs/OutputIDs compared by length only
		withIDs     bool
	}{
		{
			path:    "workloads/sharegpt-llama-3.1-8b-300-sps10.jsonl",
			count:   300,
			first:   Request{ID: 0, Arrival: 46926808, InputTokens: 2358, OutputTokens: 531},
			last:    Request{ID: 299, Arrival: 29183763203, InputTokens: 582, OutputTokens: 768},
			withIDs: true,
		},
		{
			path:    "workloads/example_trace.jsonl",
			count:   10,
			first:   Request{ID: 0, Arrival: 46926808, InputTokens: 10, OutputTokens: 70},
			last:    Request{ID: 9, Arrival: 1026970077, InputTokens: 5, OutputTokens: 26},
			withIDs: true,
		},
		{
			path:  "workloads/workload_me2_01_mixed.jsonl",
			count: 608,
			first: Request{ID: 0, Arrival: 101537000, InputTokens: 27369, OutputTokens: 1626},
			last:  Request{ID: 607, Arrival: 61000000000, InputTokens: 1552, OutputTokens: 512},
		},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			entries := readAsset(t, tc.path)
			if len(entries) != tc.count {
				t.Fatalf("%d entries, want %d", len(entries), tc.count)
			}
			sessions := 0
			for _, e := range entries {
				if e.Session != "" || len(e.Requests) != 1 {
					sessions++
				}
				r := e.Requests[0]
				if (r.InputIDs != nil) != tc.withIDs || (r.OutputIDs != nil) != tc.withIDs {
					t.Fatalf("request %d: token ids present = %v, want %v", r.ID, r.InputIDs != nil, tc.withIDs)
				}
			}
			if sessions != 0 {
				t.Errorf("%d agentic sessions, want none", sessions)
			}
			strip := func(r Request) Request { r.InputIDs, r.OutputIDs = nil, nil; return r }
			if got := strip(entries[0].Requests[0]); !reflect.DeepEqual(got, tc.first) {
				t.Errorf("first = %+v, want %+v", got, tc.first)
			}
			if got := strip(entries[len(entries)-1].Requests[0]); !reflect.DeepEqual(got, tc.last) {
				t.Errorf("last = %+v, want %+v", got, tc.last)
			}
		})
	}
	ex := readAsset(t, "workloads/example_trace.jsonl")
	if ids := ex[0].Requests[0].InputIDs; ids[0] != 1 || ids[9] != 10 {
		t.Errorf("example_trace ids = %v", ids)
	}
}

func TestEmbeddedMeasuredRun(t *testing.T) {
	const path = "vllm-measured/RTXPRO6000-Llama-3.1-8B/requests.jsonl"
	data, err := fs.ReadFile(assets.FS(), path)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := ReadMeasured(bytes.NewReader(data), path)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 300 {
		t.Fatalf("%d measured requests, want 300", len(reqs))
	}
	r0 := reqs[0]
	if r0.RequestID != "bench-0" || r0.InputToks != 2358 || r0.OutputToks != 531 {
		t.Errorf("first = %+v", r0)
	}
	if got := r0.TTFT(); math.Abs(got-(479748.510151426-479748.340626232)) > 1e-9 {
		t.Errorf("TTFT = %v", got)
	}
	meanTTFT := 0.0
	for _, r := range reqs {
		meanTTFT += r.TTFT() / float64(len(reqs))
	}
	if math.Abs(meanTTFT-7.0972) > 0.001 {
		t.Errorf("mean TTFT = %v s, want about 7.0972", meanTTFT)
	}

	// Replay with the token ids of the workload the run used.
	f, err := assets.FS().Open("workloads/sharegpt-llama-3.1-8b-300-sps10.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids, err := TokenIDsByID(NewTraceReader(f, "sharegpt"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := MeasuredSource(reqs, ids)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := Collect(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 300 {
		t.Fatalf("%d replayed entries", len(entries))
	}
	first, second := entries[0].Requests[0], entries[1].Requests[0]
	if first.ID != 0 || first.Arrival != 0 || len(first.InputIDs) != 2358 {
		t.Errorf("first replayed = id %d arrival %d ids %d", first.ID, first.Arrival, len(first.InputIDs))
	}
	if second.ID != 1 || second.Arrival != 284928449 {
		t.Errorf("second replayed = id %d arrival %d", second.ID, second.Arrival)
	}
}
