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
// with the decode lane and anonymous tails and one visiting every request
// in every step and naming every block (the reference), in lockstep, and requires the same batches, step times,
// emitted tokens, gaps, finished records (in order) and pool state after
// every step. Small pools force preemptions; block sizes 1 and 4 make
// members leave the lane often; short ids make prefixes shared. Half the
// cases drive the lane engine through FinishSteady and BeginSteady (the
// steady batches' shortcuts, which must be FinishBatch and Begin exactly).
// Some cases decode long with a block size that is not a power of two
// (the lane's counts then move to another entry of their ring) or of a
// lane window or more.
func TestDecodeLaneMatchesExplicit(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := drawConfig(rt, 40)
		long := rapid.IntRange(0, 3).Draw(rt, "long") == 0
		if long {
			cfg.BlockSize = rapid.SampledFrom([]int{3, 6, 100, 256, 300}).Draw(rt, "oddBS")
		}
		cfg.AsyncScheduling = rapid.Bool().Draw(rt, "async")
		steady := rapid.Bool().Draw(rt, "steady")
		lane, err := New(0, cfg, kvStep{})
		if err != nil {
			rt.Fatal(err)
		}
		refCfg := cfg
		refCfg.NoAnonymousTails = true
		ref, _ := New(0, refCfg, kvStep{})
		ref.noLane = true
		reqs := drawRequests(rt, lane, true)
		if long {
			kept := reqs[:0]
			for _, r := range reqs {
				r.OutputTokens += rapid.IntRange(0, 600).Draw(rt, "extra")
				if lane.Unfit(&r) == "" {
					kept = append(kept, r)
				}
			}
			reqs = kept
		}
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
			begin, finish := lane.Begin, lane.FinishBatch
			if steady {
				begin, finish = lane.BeginSteady, lane.FinishSteady
			}
			s1, ok1, err1 := begin(now)
			s2, ok2, err2 := ref.Begin(now)
			sameErr(lane, err1)
			sameErr(ref, err2)
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
			r1, err1 := finish(s1.ID, now)
			r2, err2 := ref.FinishBatch(s2.ID, now)
			sameErr(lane, err1)
			sameErr(ref, err2)
			for _, e := range []*Engine{lane, ref} {
				if err := e.err; err != nil {
					rt.Fatal(err)
				}
			}
			if r1.GenTokens != r2.GenTokens || r1.PromptTokens != r2.PromptTokens || r1.Preempted != r2.Preempted ||
				!reflect.DeepEqual(gapCounts(r1.ITL), gapCounts(r2.ITL)) {
				rt.Fatalf("t=%d: lane step %+v, reference %+v", now, *r1, *r2)
			}
			// The rest of the result too, which a steady step leaves as
			// it is when it is already right.
			if r1.Start != r2.Start || r1.End != r2.End || *r1.Batch != *r2.Batch || r1.Spec != r2.Spec ||
				len(r1.First) != len(r2.First) || len(r1.Prefilled) != len(r2.Prefilled) {
				rt.Fatalf("t=%d: lane step %+v (batch %+v), reference %+v (batch %+v)", now, *r1, *r1.Batch, *r2, *r2.Batch)
			}
			for i := range r1.First {
				if r1.First[i] != r2.First[i] {
					rt.Fatalf("t=%d: first tokens of %v, reference %v", now, r1.First, r2.First)
				}
			}
			if len(r1.Finished) != len(r2.Finished) {
				rt.Fatalf("t=%d: %d finished, reference %d", now, len(r1.Finished), len(r2.Finished))
			}
			for i := range r1.Finished {
				if *r1.Finished[i] != *r2.Finished[i] {
					rt.Fatalf("t=%d: finished %+v, reference %+v", now, *r1.Finished[i], *r2.Finished[i])
				}
			}
			done += len(r1.Finished)
			if lane.Running() != ref.Running() || lane.Pool().Free() != ref.Pool().Free() || laneCached(lane) != ref.Pool().Cached() ||
				lane.Pool().CachedFree() != ref.Pool().CachedFree() {
				rt.Fatalf("t=%d: running %d, free %d, cached %d (%d free); reference %d, %d, %d (%d)", now,
					lane.Running(), lane.Pool().Free(), laneCached(lane), lane.Pool().CachedFree(),
					ref.Running(), ref.Pool().Free(), ref.Pool().Cached(), ref.Pool().CachedFree())
			}
			if g1, g2 := generated(lane), generated(ref); !reflect.DeepEqual(g1, g2) {
				rt.Fatalf("t=%d: tokens generated by the running requests %v, reference %v", now, g1, g2)
			}
			// Between steps, a client may go away: both engines end the
			// request alike and release the same blocks.
			if rapid.IntRange(0, 7).Draw(rt, "abort") == 0 {
				id := int64(rapid.IntRange(0, len(reqs)-1).Draw(rt, "abortID"))
				s1, ok1 := lane.SlotOf(reqs[id].ID)
				s2, ok2 := ref.SlotOf(reqs[id].ID)
				if ok1 != ok2 {
					rt.Fatalf("t=%d: request %d found %v, reference %v", now, id, ok1, ok2)
				}
				if ok1 {
					a1, ok1, err1 := lane.Abort(s1, "gone")
					a2, ok2, err2 := ref.Abort(s2, "gone")
					sameErr(lane, err1)
					sameErr(ref, err2)
					if ok1 != ok2 || a1 != a2 {
						rt.Fatalf("t=%d: abort %v %+v, reference %v %+v", now, ok1, a1, ok2, a2)
					}
					if !ok1 {
						rt.Fatalf("t=%d: a waiting or running request could not be aborted between steps", now)
					}
					done++
					for _, e := range []*Engine{lane, ref} {
						if err := e.CheckNow(now); err != nil {
							rt.Fatal(err)
						}
					}
					if lane.Pool().Free() != ref.Pool().Free() || laneCached(lane) != ref.Pool().Cached() {
						rt.Fatalf("t=%d: after the abort free %d cached %d, reference %d, %d", now, lane.Pool().Free(), laneCached(lane), ref.Pool().Free(), ref.Pool().Cached())
					}
				}
			}
		}
	})
}

// laneCached is the pool's cached block count with the lane members'
// filled blocks whose commit waits for their next block or their leaving
// (laneCommit) counted as committed.
func laneCached(e *Engine) int {
	n := e.Pool().Cached()
	for _, slot := range e.lane {
		s := &e.slots[slot]
		nblocks, i := e.laneSettled(s)
		if e.cfg.PrefixCaching && e.laneComputed(s) >= (i+1)*int32(e.cfg.BlockSize) &&
			i+1 == nblocks && e.laneCommits(s) {
			n++
		}
	}
	return n
}

// generated maps every running request to its output tokens so far.
func generated(e *Engine) map[int64]int {
	m := map[int64]int{}
	e.EachRunning(func(id int64, n int) { m[id] = n })
	return m
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

// TestSteadyResultAfterFailedFinish checks that a steady step after a
// finish that failed (a batch id not in flight, whose result has no
// batch) gives the result its batch again, as FinishBatch does.
func TestSteadyResultAfterFailedFinish(t *testing.T) {
	e, err := New(0, testConfig(), fixedStep{base: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		e.Add(&workload.Request{ID: int64(i), InputTokens: 8, OutputTokens: 30}, 0)
	}
	now := int64(0)
	for i := 0; i < 3; i++ { // the prompts, then two decode steps: a lane of 4
		d, ok := begin(e, now)
		if !ok {
			t.Fatalf("step %d: no batch", i)
		}
		now += d
		finish(e, now)
	}
	st, ok, err := e.BeginSteady(now)
	if err != nil || !ok || !e.SteadyInFlight() {
		t.Fatalf("no steady batch: %v %v", ok, err)
	}
	if r, err := e.FinishBatch(st.ID+1, st.End); err == nil || r.Batch != nil {
		t.Fatalf("finishing a batch not in flight: error %v, batch %p; want an error and no batch", err, r.Batch)
	}
	r, _ := e.FinishSteady(st.ID, st.End) // (the engine is failed: the error stays)
	if r.Batch != &e.batch || r.GenTokens != 4 || r.End != st.End {
		t.Fatalf("steady result after the failed finish: batch %p (want %p), %d tokens, end %d", r.Batch, &e.batch, r.GenTokens, r.End)
	}
}
