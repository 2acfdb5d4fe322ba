package cluster

import (
	"slices"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// padPred costs base + perTok × the tokens a rank runs (its own, or the
// group's padded count) + the group's MoE time, so a test can recompute
// every rank's step time by hand.
type padPred struct{ base, perTok int64 }

func (p padPred) StepTime(b *perf.Batch) int64 {
	t := b.Tokens()
	if b.DPSynced && b.DPMode != perf.RunEager {
		t = max(t, b.DPPadTo)
	}
	return p.base + p.perTok*int64(t) + b.MoENs
}

// moePerTok costs ns per gathered token.
type moePerTok int64

func (m moePerTok) StepNs(gathered int) int64 { return int64(m) * int64(gathered) }

// testGraph captures graphs of 1, 2, 4, 8 and 16 tokens (full for pure
// decode, piecewise otherwise); larger steps run eagerly.
func testGraph(b *perf.Batch) (perf.Dispatch, int) {
	e := perf.EngineTime{Mode: perf.GraphsFullAndPiecewise, CaptureSizes: []int{1, 2, 4, 8, 16}}
	return e.Dispatch(b)
}

// groupLog records, at every step end of rank 0, the group's step.
type groupLog struct {
	collect
	sim   *Sim
	steps []GroupStep
}

func (l *groupLog) StepDone(inst int, r *engine.StepResult) {
	l.collect.StepDone(inst, r)
	if inst != 0 {
		return
	}
	st, _ := l.sim.LastGroupStep(0)
	st.Tokens, st.Dummy, st.RankNs = slices.Clone(st.Tokens), slices.Clone(st.Dummy), slices.Clone(st.RankNs)
	l.steps = append(l.steps, st)
}

func dpSim(t *testing.T, ranks int, reqs []workload.Request, pred perf.Predictor, maxSeqs ...int) (*Sim, *groupLog) {
	t.Helper()
	var engines []*engine.Engine
	for i := 0; i < ranks; i++ {
		seqs := 16
		if i < len(maxSeqs) {
			seqs = maxSeqs[i]
		}
		e, err := engine.New(i, engine.Config{MaxNumSeqs: seqs, MaxNumBatchedTokens: 64, BlockSize: 16, NumBlocks: 400,
			ChunkedPrefill: true, CheckInvariants: true}, pred)
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, e)
	}
	log := &groupLog{collect: collect{recs: map[int64]metrics.Record{}}}
	rs := make([]int, ranks)
	for i := range rs {
		rs[i] = i
	}
	sim, err := New(Config{Engines: engines, Source: &sliceSrc{reqs: reqs}, Observer: log,
		DPGroups: []DPGroup{{Ranks: rs, Pred: pred, MoE: moePerTok(10), Graph: testGraph, Balance: true}}})
	if err != nil {
		t.Fatal(err)
	}
	log.sim = sim
	return sim, log
}

// TestIdleRankStepsAndPads: one request on rank 0 of a two-rank group.
// Every step, rank 1 runs a one-token dummy batch; under a CUDA graph both
// pad to the larger padded count and the MoE runs on twice that; a step
// too large for a graph runs eagerly on every rank, unpadded, and the MoE
// gathers the real tokens (prompt + the dummy's one). The step lasts as
// long as the slower rank.
func TestIdleRankStepsAndPads(t *testing.T) {
	for _, tc := range []struct {
		name          string
		prompt        int
		padTo, gather int // of the first (prefill) step
	}{
		{"graph", 7, 8, 16},  // 7 tokens pad to the 8-token graph
		{"eager", 40, 0, 41}, // beyond the largest graph: eager
		{"decode", 1, 1, 2},  // a one-token prompt: full graph of 1
	} {
		t.Run(tc.name, func(t *testing.T) {
			pred := padPred{base: 1000, perTok: 100}
			sim, log := dpSim(t, 2, []workload.Request{{ID: 0, InputTokens: tc.prompt, OutputTokens: 4}}, pred)
			if _, err := sim.Run(); err != nil {
				t.Fatal(err)
			}
			if len(log.recs) != 1 || log.recs[0].Outcome != metrics.Finished {
				t.Fatalf("records %+v", log.recs)
			}
			if len(log.steps) != 4 { // prefill + 3 decode steps (async off)
				t.Fatalf("%d group steps, want 4", len(log.steps))
			}
			for i, st := range log.steps {
				if !st.Dummy[1] || st.Dummy[0] || st.Tokens[1] != 1 {
					t.Fatalf("step %d: rank 1 did not run a one-token dummy batch: %+v", i, st)
				}
				padTo, gather := 1, 2 // decode: 1 token + the dummy's 1, graph of 1
				if i == 0 {
					padTo, gather = tc.padTo, tc.gather
				}
				if st.PadTo != padTo || st.Gathered != gather {
					t.Fatalf("step %d: padTo %d gathered %d, want %d and %d", i, st.PadTo, st.Gathered, padTo, gather)
				}
				moe := int64(10 * gather)
				if st.MoENs != moe {
					t.Fatalf("step %d: MoE %d ns, want %d", i, st.MoENs, moe)
				}
				// By hand: each rank runs its padded count (its own tokens eagerly).
				for r := 0; r < 2; r++ {
					tok := max(st.Tokens[r], padTo)
					if padTo == 0 {
						tok = st.Tokens[r]
					}
					if want := 1000 + 100*int64(tok) + moe; st.RankNs[r] != want {
						t.Fatalf("step %d rank %d: %d ns, want %d", i, r, st.RankNs[r], want)
					}
				}
				if d := st.End - st.Start; d != max(st.RankNs[0], st.RankNs[1]) {
					t.Fatalf("step %d lasts %d ns, want the slower rank's %v", i, d, st.RankNs)
				}
			}
		})
	}
}

// TestGroupStepsInLockstep: with work on both ranks, their steps start and
// end together, and a request arriving while the group is busy waits for
// the group's step to end even on an idle rank.
func TestGroupStepsInLockstep(t *testing.T) {
	reqs := []workload.Request{
		{ID: 0, InputTokens: 30, OutputTokens: 20},
		{ID: 1, Arrival: 1500, InputTokens: 5, OutputTokens: 20},
	}
	sim, log := dpSim(t, 2, reqs, padPred{base: 1000, perTok: 100})
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	r0, r1 := log.recs[0], log.recs[1]
	if r0.DecodeInstance != 0 || r1.DecodeInstance != 1 {
		t.Fatalf("balancer placed the requests on %d and %d, want 0 and 1", r0.DecodeInstance, r1.DecodeInstance)
	}
	// The first step (30 tokens, eager, rank 1 dummy) runs from 0 to
	// 1000+100·30+10·31 = 4310 ns; request 1 arrives at 1500 and starts then.
	if r1.Scheduled != 4310 {
		t.Fatalf("request 1 scheduled at %d, want 4310 (the group's step end)", r1.Scheduled)
	}
	for i := 1; i < len(log.steps); i++ {
		if log.steps[i].Start != log.steps[i-1].End {
			t.Fatalf("step %d starts at %d, the previous ended at %d", i, log.steps[i].Start, log.steps[i-1].End)
		}
	}
}

// TestDPBalancerHandBuiltSequence checks vLLM's balancer inside a run
// against a sequence worked out by hand. Two ranks, rank 1 limited to one
// running request, steps of about 0.1 ms; seven requests 10 ms apart from
// t=0, then three at 150, 160 and 170 ms. Request 0 goes to rank 0 (tie),
// whose report is published at once: scores [1 0]. Rank 1's report of
// request 1 arrives within 100 ms of that publication, so the next one is
// due at 100 ms and requests 2 to 6 are placed on the front end's local
// additions alone (+4 each): ranks 1, 0, 1, 0, 1, 0. The publication at
// 100 ms carries rank 0 running 4 (score 4) and rank 1 running 1 with 2
// waiting (4·2 + 1 = 9): rank 0 at 150 ms (8 < 9), rank 0 again at 160 ms
// (its report of the 150 ms request is not published before 200 ms), then
// rank 1 (12 > 9). Counting waiting like running (3 against 3) would have
// sent the 150 ms request to rank 0 and the next to rank 1.
func TestDPBalancerHandBuiltSequence(t *testing.T) {
	ms := int64(1_000_000)
	var reqs []workload.Request
	for i, at := range []int64{0, 10, 20, 30, 40, 50, 60, 150, 160, 170} {
		reqs = append(reqs, workload.Request{ID: int64(i), Arrival: at * ms, InputTokens: 4, OutputTokens: 3000})
	}
	// Steps of about 0.1 ms: every admitted request runs long before
	// 150 ms, and none finishes before 300 ms (3000 output tokens).
	sim, log := dpSim(t, 2, reqs, padPred{base: 100_000, perTok: 1}, 16, 1)
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	want := []int{0, 1, 0, 1, 0, 1, 0, 0, 0, 1}
	got := make([]int, len(reqs))
	for i := range reqs {
		got[i] = int(log.recs[int64(i)].DecodeInstance)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ranks %v, want %v", got, want)
	}
}

// lockstepLog checks, at every step end, that all ranks that ran a batch
// in the group's step end together and that group steps never overlap.
type lockstepLog struct {
	collect
	sim                *Sim
	lastStart, lastEnd int64
	bad                string
}

func (l *lockstepLog) StepDone(inst int, r *engine.StepResult) {
	l.collect.StepDone(inst, r)
	st, _ := l.sim.LastGroupStep(0)
	switch {
	case r.Start != st.Start || r.End != st.End:
		l.bad = "a rank's batch does not span its group step"
	case st.Start != l.lastStart && st.Start < l.lastEnd:
		l.bad = "group steps overlap"
	case st.End-st.Start != slices.Max(st.RankNs):
		l.bad = "the step is not the slowest rank's time"
	}
	l.lastStart, l.lastEnd = st.Start, st.End
}

// TestDPGroupProperty: random workloads on random groups (2-4 ranks,
// balancer or router, small KV caches that force preemption): every
// request ends exactly once and finished, every rank's batch spans its
// group step, group steps never overlap, the engines' invariants hold.
func TestDPGroupProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ranks := rapid.IntRange(2, 4).Draw(rt, "ranks")
		balance := rapid.Bool().Draw(rt, "balance")
		blocks := rapid.IntRange(40, 400).Draw(rt, "blocks")
		n := rapid.IntRange(1, 40).Draw(rt, "requests")
		var reqs []workload.Request
		at := int64(0)
		for i := 0; i < n; i++ {
			at += rapid.Int64Range(0, 3000).Draw(rt, "gap")
			reqs = append(reqs, workload.Request{ID: int64(i), Arrival: at,
				InputTokens: rapid.IntRange(1, 300).Draw(rt, "in"), OutputTokens: rapid.IntRange(1, 60).Draw(rt, "out")})
		}
		pred := padPred{base: 500, perTok: 10}
		var engines []*engine.Engine
		for i := 0; i < ranks; i++ {
			e, err := engine.New(i, engine.Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 128, BlockSize: 16, NumBlocks: blocks,
				ChunkedPrefill: true, PrefixCaching: true, AsyncScheduling: rapid.Bool().Draw(rt, "async"), CheckInvariants: true}, pred)
			if err != nil {
				rt.Fatal(err)
			}
			engines = append(engines, e)
		}
		log := &lockstepLog{collect: collect{recs: map[int64]metrics.Record{}}}
		rs := make([]int, ranks)
		for i := range rs {
			rs[i] = i
		}
		sim, err := New(Config{Engines: engines, Source: &sliceSrc{reqs: reqs}, Router: &RoundRobin{}, Observer: log,
			DPGroups: []DPGroup{{Ranks: rs, Pred: pred, MoE: moePerTok(3), Graph: testGraph, Balance: balance}}})
		if err != nil {
			rt.Fatal(err)
		}
		log.sim = sim
		if _, err := sim.Run(); err != nil {
			rt.Fatal(err)
		}
		if log.bad != "" {
			rt.Fatal(log.bad)
		}
		if len(log.recs) != n || log.dup != 0 {
			rt.Fatalf("%d records (%d duplicates) for %d requests", len(log.recs), log.dup, n)
		}
		for id, r := range log.recs {
			if r.Outcome != metrics.Finished && !strings.HasPrefix(r.Reason, "unfit") {
				rt.Fatalf("request %d: %s (%s)", id, r.Outcome, r.Reason)
			}
		}
	})
}
