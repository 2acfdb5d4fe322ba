package cluster

import (
	"io"
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

type entrySrc struct {
	es []workload.Entry
	i  int
}

func (s *entrySrc) Next() (workload.Entry, error) {
	if s.i >= len(s.es) {
		return workload.Entry{}, io.EOF
	}
	s.i++
	return s.es[s.i-1], nil
}

// TestSessionsChainSubRequests: sub-request k+1 arrives tool_duration
// after sub-request k finishes; when one cannot be served, the rest of its
// session fail with a reason and every request still ends once.
func TestSessionsChainSubRequests(t *testing.T) {
	e, err := engine.New(0, engine.Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 512, BlockSize: 16, NumBlocks: 20,
		ChunkedPrefill: true, PrefixCaching: true, CheckInvariants: true}, linear{base: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	src := &entrySrc{es: []workload.Entry{
		{Session: "ok", Requests: []workload.Request{
			{ID: 0, Arrival: 0, InputTokens: 20, OutputTokens: 3},
			{ID: 1, Delay: 5e6, InputTokens: 30, OutputTokens: 2},
		}},
		{Session: "broken", Requests: []workload.Request{
			{ID: 2, Arrival: 1e6, InputTokens: 400, OutputTokens: 10}, // 26 blocks > 20: unfit
			{ID: 3, Delay: 1e6, InputTokens: 10, OutputTokens: 2},
		}},
	}}
	c := &collect{recs: map[int64]metrics.Record{}}
	sim, err := New(Config{Engines: []*engine.Engine{e}, Source: src, Observer: c})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	if len(c.recs) != 4 || c.dup != 0 {
		t.Fatalf("%d records (%d duplicates), want 4", len(c.recs), c.dup)
	}
	first, second := c.recs[0], c.recs[1]
	if first.Outcome != metrics.Finished || second.Outcome != metrics.Finished {
		t.Fatalf("session ok: %s, %s", first.Outcome, second.Outcome)
	}
	if second.Arrival != first.LastToken+5e6 {
		t.Errorf("sub-request 1 arrived at %d, want the first one's finish %d + 5 ms", second.Arrival, first.LastToken)
	}
	if r := c.recs[2]; r.Outcome != metrics.Failed || r.Reason[:6] != "unfit:" {
		t.Errorf("request 2: %s %q", r.Outcome, r.Reason)
	}
	if r := c.recs[3]; r.Outcome != metrics.Failed || r.Reason != "session: sub-request 2 did not finish" {
		t.Errorf("request 3: %s %q", r.Outcome, r.Reason)
	}
}

// TestSessionToolTimeOverflowIsCounted: a sub-request whose tool time
// overflows the simulated clock is counted as failed with the reason, and
// so is the rest of its session (it used to vanish: the event queue's
// error was discarded).
func TestSessionToolTimeOverflowIsCounted(t *testing.T) {
	e, err := engine.New(0, engine.Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 512, BlockSize: 16, NumBlocks: 20,
		ChunkedPrefill: true, PrefixCaching: true, CheckInvariants: true}, linear{base: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	src := &entrySrc{es: []workload.Entry{{Session: "s", Requests: []workload.Request{
		{ID: 0, Arrival: 0, InputTokens: 20, OutputTokens: 3},
		{ID: 1, Delay: math.MaxInt64 - 1000, InputTokens: 30, OutputTokens: 2},
		{ID: 2, Delay: 0, InputTokens: 30, OutputTokens: 2},
	}}}}
	c := &collect{recs: map[int64]metrics.Record{}}
	sim, err := New(Config{Engines: []*engine.Engine{e}, Source: src, Observer: c})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	if terminal, seen := sim.Progress(); terminal != 3 || seen != 3 || len(c.recs) != 3 {
		t.Fatalf("%d of %d requests ended, %d records; want 3", terminal, seen, len(c.recs))
	}
	if r := c.recs[1]; r.Outcome != metrics.Failed || !strings.Contains(r.Reason, "overflows the simulated clock") {
		t.Errorf("request 1: %s %q", r.Outcome, r.Reason)
	}
	if r := c.recs[2]; r.Outcome != metrics.Failed || r.Reason != "session: sub-request 1 did not finish" {
		t.Errorf("request 2: %s %q", r.Outcome, r.Reason)
	}
}

// TestStepEndOverflowIsRunError: a step whose end overflows the clock ends
// the run with an error naming the instance, never silently.
func TestStepEndOverflowIsRunError(t *testing.T) {
	e, err := engine.New(0, engine.Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 512, BlockSize: 16, NumBlocks: 20,
		ChunkedPrefill: true, PrefixCaching: true}, linear{base: math.MaxInt64 / 3})
	if err != nil {
		t.Fatal(err)
	}
	src := &entrySrc{es: []workload.Entry{{Requests: []workload.Request{{ID: 0, InputTokens: 20, OutputTokens: 5}}}}}
	sim, err := New(Config{Engines: []*engine.Engine{e}, Source: src, Observer: &collect{recs: map[int64]metrics.Record{}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sim.Run()
	if err == nil || !strings.Contains(err.Error(), "instance 0 step") {
		t.Fatalf("want a run error naming the instance's step, got %v", err)
	}
}
