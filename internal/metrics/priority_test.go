package metrics

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSummaryByPriority checks the per-priority classes against hand
// computation: counts per class, and the TTFT, TPOT and E2E of the
// finished requests of each.
func TestSummaryByPriority(t *testing.T) {
	s := NewSummary()
	add := func(id int64, prio int32, arrival, first, last int64, gen int, out Outcome) {
		r := NewRecord(id, arrival)
		r.Priority, r.Generated, r.OutputTokens, r.Outcome = prio, gen, gen, out
		r.Queued, r.Scheduled, r.FirstToken, r.LastToken = arrival, arrival, first, last
		s.Add(&r)
	}
	// Priority 0: TTFTs 10 and 30 ms, E2E 50 and 70 ms, TPOT (50-10)/4 =
	// 10 ms and (70-30)/2 = 20 ms.
	add(0, 0, 0, 10e6, 50e6, 5, Finished)
	add(1, 0, 0, 30e6, 70e6, 3, Finished)
	// Priority 2: one finished (TTFT 100 ms, one token: no TPOT), one failed.
	add(2, 2, 0, 100e6, 100e6, 1, Finished)
	add(3, 2, 0, -1, -1, 0, Failed)
	// Priority -1: finished, TTFT 1 ms, E2E 3 ms, TPOT 2 ms.
	add(4, -1, 0, 1e6, 3e6, 2, Finished)
	r := s.Finish(1e9)
	if len(r.Priorities) != 3 {
		t.Fatalf("classes %+v, want 3", r.Priorities)
	}
	want := []struct {
		prio                         int32
		reqs, done                   int64
		ttftMean, tpotMean, e2eMean  float64
		ttftCount, tpotCount, e2eCnt int64
	}{
		{-1, 1, 1, 1, 2, 3, 1, 1, 1},
		{0, 2, 2, 20, 15, 60, 2, 2, 2},
		{2, 2, 1, 100, 0, 100, 1, 0, 1},
	}
	for i, w := range want {
		p := r.Priorities[i]
		if p.Priority != w.prio || p.Requests != w.reqs || p.Finished != w.done || p.Other {
			t.Errorf("class %d: %+v, want priority %d, %d requests, %d finished", i, p, w.prio, w.reqs, w.done)
		}
		if p.TTFT.Mean != w.ttftMean || p.TPOT.Mean != w.tpotMean || p.E2E.Mean != w.e2eMean ||
			p.TTFT.Count != w.ttftCount || p.TPOT.Count != w.tpotCount || p.E2E.Count != w.e2eCnt {
			t.Errorf("class %d: TTFT %+v TPOT %+v E2E %+v", w.prio, p.TTFT, p.TPOT, p.E2E)
		}
	}
	if !strings.Contains(r.String(), "Priority    requests finished") {
		t.Errorf("text summary lacks the per-priority table:\n%s", r)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"priorities":[{"priority":-1,"requests":1,"finished":1,`) {
		t.Errorf("summary JSON lacks the per-priority classes: %s", b)
	}
}

// TestSummaryPriorityZeroOnly: a run whose requests all have priority 0
// shows no per-priority table (outputs of runs without priorities are
// unchanged).
func TestSummaryPriorityZeroOnly(t *testing.T) {
	s := NewSummary()
	r := NewRecord(0, 0)
	r.Outcome = Finished
	s.Add(&r)
	res := s.Finish(1e9)
	if res.Priorities != nil || strings.Contains(res.String(), "Priority ") {
		t.Fatalf("per-priority classes for priority 0 only: %+v", res.Priorities)
	}
}

// TestSummaryPriorityClassesBounded: past 64 distinct priorities the rest
// are gathered in one class, so memory stays bounded.
func TestSummaryPriorityClassesBounded(t *testing.T) {
	s := NewSummary()
	for i := int64(0); i < 100; i++ {
		r := NewRecord(i, 0)
		r.Priority, r.Outcome = int32(i), Finished
		s.Add(&r)
	}
	res := s.Finish(1e9)
	if len(res.Priorities) != 65 || !res.Priorities[64].Other || res.Priorities[64].Requests != 36 || res.Priorities[63].Priority != 63 {
		t.Fatalf("%d classes, last %+v", len(res.Priorities), res.Priorities[len(res.Priorities)-1])
	}
}
