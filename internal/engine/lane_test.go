package engine

import (
	"reflect"
	"testing"

	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// kvStep prices a step by every field of the batch, so that any difference
// in the decode aggregates shows in the step times too.
type kvStep struct{}

func (kvStep) StepTime(b *perf.Batch) int64 {
	return 500 + 3*int64(b.Tokens()) + b.DecodeKVSum/7 + int64(b.DecodeKVMax-b.DecodeKVMin) + int64(b.PrefillKV/5)
}

// TestDecodeLaneMatchesExplicit runs random workloads on two engines, one
// with the decode lane and one visiting every request in every step (the
// reference), in lockstep, and requires the same batches, step times,
// emitted tokens, gaps, finished records (in order) and pool state after
// every step. Small pools force preemptions; block sizes 1 and 4 make
// members leave the lane often; short ids make prefixes shared.
func TestDecodeLaneMatchesExplicit(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := drawConfig(rt, 40)
		cfg.AsyncScheduling = rapid.Bool().Draw(rt, "async")
		lane, err := New(0, cfg, kvStep{})
		if err != nil {
			rt.Fatal(err)
		}
		ref, _ := New(0, cfg, kvStep{})
		ref.noLane = true
		reqs := drawRequests(rt, lane, true)
		for i := range reqs {
			if rapid.Bool().Draw(rt, "out-ids") {
				reqs[i].OutputIDs = make([]int32, reqs[i].OutputTokens)
			}
		}
		next, now, done := 0, int64(0), 0
		for steps := 0; done < len(reqs); steps++ {
			if steps > 200000 {
				rt.Fatal("no progress")
			}
			for next < len(reqs) && reqs[next].Arrival <= now {
				lane.Add(&reqs[next], now)
				ref.Add(&reqs[next], now)
				next++
			}
			s1, ok1 := lane.Begin(now)
			s2, ok2 := ref.Begin(now)
			if ok1 != ok2 || s1.End != s2.End || lane.batch != ref.batch {
				rt.Fatalf("t=%d: lane batch %v %+v ends %d, reference %v %+v ends %d", now, ok1, lane.batch, s1.End, ok2, ref.batch, s2.End)
			}
			if !ok1 {
				if next == len(reqs) {
					rt.Fatalf("t=%d: stalled with %d running, %d waiting", now, lane.Running(), lane.Waiting())
				}
				now = max(now+1, reqs[next].Arrival)
				continue
			}
			now = s1.End
			r1, r2 := lane.FinishBatch(s1.ID, now), ref.FinishBatch(s2.ID, now)
			for _, e := range []*Engine{lane, ref} {
				if err := e.Err(); err != nil {
					rt.Fatal(err)
				}
			}
			if r1.GenTokens != r2.GenTokens || r1.PromptTokens != r2.PromptTokens || r1.Preempted != r2.Preempted ||
				!reflect.DeepEqual(gapCounts(r1.ITL), gapCounts(r2.ITL)) {
				rt.Fatalf("t=%d: lane step %+v, reference %+v", now, *r1, *r2)
			}
			if len(r1.Finished) != len(r2.Finished) {
				rt.Fatalf("t=%d: %d finished, reference %d", now, len(r1.Finished), len(r2.Finished))
			}
			for i := range r1.Finished {
				if r1.Finished[i] != r2.Finished[i] {
					rt.Fatalf("t=%d: finished %+v, reference %+v", now, r1.Finished[i], r2.Finished[i])
				}
			}
			done += len(r1.Finished)
			if lane.Running() != ref.Running() || lane.Pool().Free() != ref.Pool().Free() || lane.Pool().Cached() != ref.Pool().Cached() {
				rt.Fatalf("t=%d: running %d, free %d, cached %d; reference %d, %d, %d", now,
					lane.Running(), lane.Pool().Free(), lane.Pool().Cached(), ref.Running(), ref.Pool().Free(), ref.Pool().Cached())
			}
		}
	})
}

// gapCounts adds up run-length encoded gaps by length.
func gapCounts(gs []Gap) map[int64]int64 {
	m := map[int64]int64{}
	for _, g := range gs {
		m[g.NS] += g.Count
	}
	return m
}

// TestDecodeLaneEngages checks that the lane is used: in a steady decode
// step of four requests with room in their blocks, no request is visited.
func TestDecodeLaneEngages(t *testing.T) {
	cfg := testConfig()
	e, err := New(0, cfg, fixedStep{base: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		e.Add(&workload.Request{ID: int64(i), InputTokens: 8, OutputTokens: 30}, 0)
	}
	now := int64(0)
	for i := 0; i < 3; i++ { // the prompts, then two decode steps
		d, ok := begin(e, now)
		if !ok {
			t.Fatalf("step %d: no batch", i)
		}
		now += d
		finish(e, now)
	}
	if len(e.lane) != 4 || len(e.running) != 0 {
		t.Fatalf("lane holds %d and the running list %d; want 4 and 0", len(e.lane), len(e.running))
	}
	if _, ok := begin(e, now); !ok {
		t.Fatal("no batch")
	}
	if f := e.flights[0]; len(f.sched) != 0 || f.lane != 4 || e.batch.NumDecode != 4 || e.batch.DecodeKVSum != 4*10 {
		t.Fatalf("batch: %d explicit, %d in the lane, %+v; want 0, 4, 4 decodes of context 10", len(f.sched), f.lane, e.batch)
	}
}
