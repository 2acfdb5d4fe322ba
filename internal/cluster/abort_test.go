package cluster

import (
	"reflect"
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/metrics"
	_ "github.com/servesim/servesim/internal/testseed"
	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// abortSim returns a three-instance colocated simulation of src with
// invariant checks on.
func abortSim(t fataler, src workload.Source, async bool) (*Sim, *collect) {
	var engines []*engine.Engine
	for i := range 3 {
		e, err := engine.New(i, engine.Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 512, BlockSize: 16, NumBlocks: 60 + 60*i,
			ChunkedPrefill: true, PrefixCaching: true, AsyncScheduling: async, CheckInvariants: true}, linear{base: 1e6, perTok: 2000, perKV: 5})
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, e)
	}
	c := &collect{recs: map[int64]metrics.Record{}}
	sim, err := New(Config{Engines: engines, Source: src, Router: LeastLoaded{}, Observer: c, CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	return sim, c
}

// drawAborts draws requests, some of which their clients abandon.
func drawAborts(rt *rapid.T) []workload.Request {
	n := rapid.IntRange(1, 50).Draw(rt, "n")
	var reqs []workload.Request
	at := int64(0)
	for i := range n {
		at += int64(rapid.IntRange(0, 20).Draw(rt, "gapMs")) * 1e6
		r := workload.Request{ID: int64(i), Arrival: at,
			InputTokens: rapid.IntRange(1, 2000).Draw(rt, "in"), OutputTokens: rapid.IntRange(1, 200).Draw(rt, "out")}
		if rapid.Bool().Draw(rt, "abort") {
			r.AbortAt = at + int64(rapid.IntRange(0, 300).Draw(rt, "abortAfterMs"))*1e6 + 1
		}
		reqs = append(reqs, r)
	}
	return reqs
}

// TestAbortsReleaseKV: with clients abandoning requests at random times
// (colocated and P/D, every handoff policy), every request still ends
// exactly once, an aborted one has fewer tokens than it asked for, and at the end every KV block is free again
// (the invariant checks run after every step).
func TestAbortsReleaseKV(t *testing.T) {
	var aborted [2]int // colocated, P/D
	rapid.Check(t, func(rt *rapid.T) {
		reqs := drawAborts(rt)
		var sim *Sim
		var c *collect
		pd := rapid.Bool().Draw(rt, "pd")
		if pd {
			ps := pdSetup{prefill: 2, decode: 2, pBlocks: 300, dBlocks: 300, seqs: 16, budget: 512, bw: 1e9, kvPerToken: 4096,
				cfg:  PDConfig{Policy: PolicyName(rapid.IntRange(0, 3).Draw(rt, "policy")), Placement: LeastLoadedPlacement, MaxReprefills: 3},
				pred: linear{base: 1e6, perTok: 2000, perKV: 5}}
			sim, c = ps.build(rt, reqs)
		} else {
			sim, c = abortSim(rt, &sliceSrc{reqs: reqs}, rapid.Bool().Draw(rt, "async"))
		}
		if _, err := sim.Run(); err != nil {
			rt.Fatal(err)
		}
		if len(c.recs) != len(reqs) || c.dup > 0 {
			rt.Fatalf("%d records for %d requests (%d duplicates)", len(c.recs), len(reqs), c.dup)
		}
		for _, r := range reqs {
			rec := c.recs[r.ID]
			if rec.Reason != AbortedReason {
				continue
			}
			if r.AbortAt == 0 {
				rt.Fatalf("request %d aborted without an abort time", r.ID)
			}
			if pd {
				aborted[1]++
			} else {
				aborted[0]++
			}
			if rec.Outcome != metrics.Failed || rec.Generated >= r.OutputTokens {
				rt.Fatalf("aborted request %d: outcome %s, %d of %d tokens", r.ID, rec.Outcome, rec.Generated, r.OutputTokens)
			}
			if rec.LastToken > 0 && rec.LastToken > rec.Arrival && rec.Generated == 0 {
				rt.Fatalf("aborted request %d has a last token but no tokens", r.ID)
			}
		}
		for i, e := range sim.Engines() {
			if used := e.Pool().Used(); used != 0 {
				rt.Fatalf("instance %d holds %d KV blocks after the run", i, used)
			}
		}
	})
	if aborted[0] == 0 || aborted[1] == 0 {
		t.Fatalf("aborted requests: %d colocated, %d P/D; the test must abort some of each", aborted[0], aborted[1])
	}
}

// TestAbortWhileWaitingFreesNothingAndAbortWhileRunningFreesBlocks: by
// hand, on one instance with room for one request at a time. Request 0
// (1,000 prompt tokens, 100 outputs) runs; request 1 waits behind it
// (max_num_seqs 1) and is aborted at 5 ms: it ends then with no token.
// Request 0 is aborted at 50 ms, during a step: it ends at that step's
// end with the tokens emitted so far, and its 1,100 tokens' worth of
// blocks (63 of 16 tokens, minus none) are released.
func TestAbortWhileWaitingAndWhileRunning(t *testing.T) {
	e, err := engine.New(0, engine.Config{MaxNumSeqs: 1, MaxNumBatchedTokens: 2048, BlockSize: 16, NumBlocks: 200,
		ChunkedPrefill: true, CheckInvariants: true}, constStep(10e6))
	if err != nil {
		t.Fatal(err)
	}
	reqs := []workload.Request{
		{ID: 0, Arrival: 0, InputTokens: 1000, OutputTokens: 100, AbortAt: 50e6 + 1},
		{ID: 1, Arrival: 1e6, InputTokens: 10, OutputTokens: 10, AbortAt: 5e6},
	}
	c := &collect{recs: map[int64]metrics.Record{}}
	sim, err := New(Config{Engines: []*engine.Engine{e}, Source: &sliceSrc{reqs: reqs}, Observer: c})
	if err != nil {
		t.Fatal(err)
	}
	// Stop just after the waiting request's abort: only request 0 holds
	// blocks, ceil(1001/16) = 63 of them (the prompt and the first token
	// of the step in flight).
	if err := sim.Pull(); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.RunUntil(5e6); err != nil {
		t.Fatal(err)
	}
	r1, ok := c.recs[1]
	if !ok || r1.Reason != AbortedReason || r1.FirstToken != -1 || r1.Generated != 0 || r1.Outcome != metrics.Failed {
		t.Fatalf("waiting request after its abort: %+v (present %v)", r1, ok)
	}
	if got := e.Pool().Used(); got != 63 {
		t.Fatalf("blocks in use at 5 ms = %d, want 63", got)
	}
	if _, err := sim.RunUntil(1 << 62); err != nil {
		t.Fatal(err)
	}
	if err := sim.Finish(); err != nil {
		t.Fatal(err)
	}
	// Steps of 10 ms: the prompt's ends at 10 ms (token 1), decodes at
	// 20, 30, 40, 50 ms; the abort at 50 ms + 1 ns comes during the step
	// ending at 60 ms (token 6), after which the request leaves.
	r0 := c.recs[0]
	if r0.Reason != AbortedReason || r0.Generated != 6 || r0.FirstToken != 10e6 || r0.LastToken != 60e6 {
		t.Fatalf("running request after its abort: generated %d first %d last %d reason %q", r0.Generated, r0.FirstToken, r0.LastToken, r0.Reason)
	}
	if got := e.Pool().Used(); got != 0 {
		t.Fatalf("blocks in use after the aborts = %d, want 0", got)
	}
}

// TestRunUntilInSlicesIsRun: advancing a simulation in arbitrary slices of
// time (as a real-time driver does) gives the records of one Run.
func TestRunUntilInSlicesIsRun(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		reqs := drawAborts(rt)
		async := rapid.Bool().Draw(rt, "async")
		sim, want := abortSim(rt, &sliceSrc{reqs: reqs}, async)
		if _, err := sim.Run(); err != nil {
			rt.Fatal(err)
		}
		sim2, got := abortSim(rt, &sliceSrc{reqs: reqs}, async)
		if err := sim2.Pull(); err != nil {
			rt.Fatal(err)
		}
		t := int64(0)
		for {
			if _, ok := sim2.NextEvent(); !ok {
				break
			}
			t += int64(rapid.IntRange(1, 50_000_000).Draw(rt, "sliceNs"))
			if _, err := sim2.RunUntil(t); err != nil {
				rt.Fatal(err)
			}
			if sim2.Now() > t {
				rt.Fatalf("clock %d past the slice end %d", sim2.Now(), t)
			}
		}
		if err := sim2.Finish(); err != nil {
			rt.Fatal(err)
		}
		if !reflect.DeepEqual(want.recs, got.recs) {
			rt.Fatalf("records differ when run in slices")
		}
	})
}

// TestLiveFeedMatchesTrace: requests added to a Live source as the clock
// reaches their arrival, and aborts scheduled as the clock reaches them,
// give the records of the same requests read from a trace with their
// abort times (the arrival times here never tie with step ends).
func TestLiveFeedMatchesTrace(t *testing.T) {
	var reqs []workload.Request
	for i := range 40 {
		r := workload.Request{ID: int64(i), Arrival: int64(i)*3_000_017 + 11, InputTokens: 100 + 37*i, OutputTokens: 5 + 7*(i%9)}
		if i%4 == 1 {
			r.AbortAt = r.Arrival + int64(i)*1_000_003
		}
		reqs = append(reqs, r)
	}
	sim, want := abortSim(t, &sliceSrc{reqs: reqs}, true)
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	live := &workload.Live{}
	sim2, got := abortSim(t, live, true)
	type ev struct {
		at    int64
		req   int
		abort bool
	}
	var evs []ev
	for i, r := range reqs {
		evs = append(evs, ev{r.Arrival, i, false})
		if r.AbortAt > 0 {
			evs = append(evs, ev{r.AbortAt, i, true})
		}
	}
	for i := 1; i < len(evs); i++ { // insertion sort by time
		for j := i; j > 0 && evs[j].at < evs[j-1].at; j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
	for _, e := range evs {
		if _, err := sim2.RunUntil(e.at - 1); err != nil {
			t.Fatal(err)
		}
		if e.abort {
			if err := sim2.AbortAt(int64(e.req), e.at); err != nil {
				t.Fatal(err)
			}
			continue
		}
		r := reqs[e.req]
		r.AbortAt = 0
		if id := live.Add(r); id != int64(e.req) {
			t.Fatalf("live id %d, want %d", id, e.req)
		}
		if err := sim2.Pull(); err != nil {
			t.Fatal(err)
		}
	}
	live.Close()
	if _, err := sim2.RunUntil(1 << 62); err != nil {
		t.Fatal(err)
	}
	if err := sim2.Finish(); err != nil {
		t.Fatal(err)
	}
	aborted := 0
	for _, r := range want.recs {
		if r.Reason == AbortedReason {
			aborted++
		}
	}
	if aborted == 0 {
		t.Fatal("no request was aborted: the test checks nothing about aborts")
	}
	if !reflect.DeepEqual(want.recs, got.recs) {
		for id, w := range want.recs {
			if g := got.recs[id]; !reflect.DeepEqual(w, g) {
				t.Errorf("request %d: trace %+v\nlive %+v", id, w, g)
			}
		}
	}
}
