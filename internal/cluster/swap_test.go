package cluster

import (
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/kvtier"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// prefillCount is a collect that also sums the prompt tokens (prefill and
// recompute) of every step.
type prefillCount struct {
	collect
	prefill int64
}

func (c *prefillCount) StepDone(_ int, r *engine.StepResult) {
	c.steps++
	c.prefill += int64(r.Batch.PrefillTokens)
}

// smallTiers is the tier hierarchy of TestSwapProperty and the runs it
// found stalled: 64-token chunks of 1e5-byte blocks in a 20 MB host tier
// of 10 GB/s.
func smallTiers() kvtier.Config {
	return kvtier.Config{BlockSize: 16, ChunkTokens: 64, BlockBytes: 1e5, Nodes: []kvtier.Node{hostNode(2e7, 1e10)}}
}

// swapSim runs reqs on one single-GPU instance of blocks KV blocks (16
// tokens, 1e6 bytes each) whose preemptions swap to a space of swapBlocks
// blocks (0: recompute), with a host tier behind PCIe of 1 GB/s and
// 10 us; steps take 1 ms + 1 us per token.
func swapSim(t *testing.T, blocks, swapBlocks int, reqs []workload.Request) (*prefillCount, *engine.Engine) {
	t.Helper()
	e := colocated(t, 1, engine.Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 2048, BlockSize: 16, NumBlocks: blocks,
		ChunkedPrefill: true, PrefixCaching: true, CheckInvariants: true, SwapBlocks: swapBlocks})[0]
	c := &prefillCount{collect: collect{recs: map[int64]metrics.Record{}}}
	runTiered(t, []*engine.Engine{e}, kvtier.Config{BlockSize: 16, ChunkTokens: 256, BlockBytes: 1e6, Nodes: []kvtier.Node{hostNode(1e9, 1e12)}},
		&sliceSrc{reqs: reqs}, c, &c.collect)
	allFinished(t, &c.collect, len(reqs))
	if e.Swapping() != 0 || e.SwapUsed() != 0 {
		t.Fatalf("after the run: %d swap copies in flight, %d swap-space blocks held", e.Swapping(), e.SwapUsed())
	}
	return c, e
}

// pressure is two requests whose KV (512 + 700 tokens, 76 blocks each)
// cannot both fit in 100 blocks: the second admitted is preempted.
func pressure() []workload.Request {
	var reqs []workload.Request
	for i := 0; i < 2; i++ {
		reqs = append(reqs, workload.Request{ID: int64(i), Arrival: int64(i) * 1e6, InputTokens: 512, OutputTokens: 700})
	}
	return reqs
}

// TestSwapPreemptionComputesPromptsOnce: under memory pressure, recompute
// preemption computes prompt (and output) tokens again; swap preemption
// copies the victim's KV out and back and computes every prompt token
// exactly once. On the idle PCIe link each copy of n blocks takes exactly
// 10 us + n x 1e6 B / 1 GB/s.
func TestSwapPreemptionComputesPromptsOnce(t *testing.T) {
	rc, re := swapSim(t, 100, 0, pressure())
	sc, se := swapSim(t, 100, 1000, pressure())
	prompts := int64(2 * 512)
	if rc.prefill <= prompts {
		t.Fatalf("recompute computed %d prompt tokens for %d: no preemption, the test does not exercise swapping", rc.prefill, prompts)
	}
	if sc.prefill != prompts {
		t.Errorf("swap computed %d prompt tokens, want each of the %d once", sc.prefill, prompts)
	}
	st := se.SwapTotals()
	if st.Outs == 0 || st.Outs != st.Ins || st.OutsDone != st.Outs || st.InsDone != st.Ins || st.BlocksOut != st.BlocksIn || st.Fallbacks != 0 {
		t.Fatalf("swap stats %+v", st)
	}
	pre := 0
	for _, r := range sc.recs {
		pre += r.Preemptions
	}
	if int64(pre) != st.Outs {
		t.Errorf("%d preemptions recorded, %d swap-outs", pre, st.Outs)
	}
	// As in TestPreemptedPrefixReloadsFromHost, request 1 is preempted
	// holding 50 blocks: one swap-out and one swap-in of 50 blocks, one
	// copy at a time on the link, each 10 us + 50 x 1 ms.
	if st.Outs != 1 || st.BlocksOut != 50 {
		t.Errorf("%d swap-outs of %d blocks, want 1 of 50", st.Outs, st.BlocksOut)
	}
	if want := st.Outs*10000 + st.BlocksOut*1_000_000; st.OutNs != want {
		t.Errorf("swap-outs took %d ns, want %d", st.OutNs, want)
	}
	if want := st.Ins*10000 + st.BlocksIn*1_000_000; st.InNs != want {
		t.Errorf("swap-ins took %d ns, want %d", st.InNs, want)
	}
	if re.SwapTotals() != (engine.SwapStats{}) {
		t.Errorf("recompute engine counted swaps: %+v", re.SwapTotals())
	}
	t.Logf("prompt tokens computed: recompute %d, swap %d; swap %+v", rc.prefill, sc.prefill, st)
}

// TestSwapSpaceFullFallsBackToRecompute: a swap space smaller than the
// victim's KV cannot take it, so the victim is recomputed (counted), and
// every request still finishes once.
func TestSwapSpaceFullFallsBackToRecompute(t *testing.T) {
	c, e := swapSim(t, 100, 10, pressure())
	st := e.SwapTotals()
	if st.Fallbacks == 0 || st.Outs != 0 || st.Ins != 0 {
		t.Fatalf("swap stats %+v, want only fallbacks", st)
	}
	if c.prefill <= 2*512 {
		t.Errorf("fallback computed %d prompt tokens: the victim was not recomputed", c.prefill)
	}
}

// TestSwapProperty: random requests on one or two instances with small
// KV pools, swap spaces from tiny to ample, async scheduling and pipeline
// parallelism drawn: every request finishes exactly once, the engines'
// and tiers' invariant checks hold throughout (swap space within its
// capacity, a swapping-out request's GPU blocks released once, when its
// copy ends), every swap-out is swapped back in, and without a fallback
// to recompute no prompt token is computed twice.
func TestSwapProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 2).Draw(rt, "instances")
		blocks := rapid.IntRange(24, 100).Draw(rt, "blocks")
		swapBlocks := rapid.SampledFrom([]int{1, 20, 80, 10000}).Draw(rt, "swapBlocks")
		async := rapid.Bool().Draw(rt, "async")
		pp := rapid.SampledFrom([]int{1, 1, 2}).Draw(rt, "pp")
		var reqs []workload.Request
		var prompts int64
		at := int64(0)
		count := rapid.IntRange(1, 14).Draw(rt, "requests")
		for i := 0; i < count; i++ {
			in := rapid.IntRange(1, 16*blocks/2).Draw(rt, "in")
			out := rapid.IntRange(1, 16*blocks-in).Draw(rt, "out")
			r := workload.Request{ID: int64(i), Arrival: at, InputTokens: in, OutputTokens: out}
			if rapid.Bool().Draw(rt, "ids") {
				r.InputIDs = ids(1000*(i%3), in) // some prompts share prefixes
			}
			reqs = append(reqs, r)
			prompts += int64(in)
			at += rapid.Int64Range(0, 5e6).Draw(rt, "gap")
		}
		engines := colocated(rt, n, engine.Config{MaxNumSeqs: 6, MaxNumBatchedTokens: 256, BlockSize: 16, NumBlocks: blocks,
			ChunkedPrefill: true, PrefixCaching: true, AsyncScheduling: async, PipelineParallel: pp, CheckInvariants: true, SwapBlocks: swapBlocks})
		c := &prefillCount{collect: collect{recs: map[int64]metrics.Record{}}}
		runTiered(rt, engines, smallTiers(), &sliceSrc{reqs: reqs}, c, &c.collect)
		allFinished(rt, &c.collect, len(reqs))
		var made, counted int64
		for _, r := range c.recs {
			counted += int64(r.Preemptions)
		}
		for _, e := range engines {
			made += e.Preemptions()
		}
		if made != counted {
			rt.Fatalf("engines preempted %d times (swap or recompute); records count %d", made, counted)
		}
		var fallbacks int64
		for _, e := range engines {
			st := e.SwapTotals()
			if st.Outs != st.Ins || st.OutsDone != st.Outs || st.InsDone != st.Ins || st.BlocksOut != st.BlocksIn || e.Swapping() != 0 || e.SwapUsed() != 0 {
				rt.Fatalf("instance %v: swap stats %+v at the end, %d copying, %d blocks held", e.Config().Role, st, e.Swapping(), e.SwapUsed())
			}
			if st.PeakUsedBlocks > swapBlocks {
				rt.Fatalf("swap space peaked at %d blocks of %d", st.PeakUsedBlocks, swapBlocks)
			}
			fallbacks += st.Fallbacks
		}
		if fallbacks == 0 && c.prefill > prompts {
			rt.Fatalf("no fallback to recompute, yet %d prompt tokens computed for prompts of %d", c.prefill, prompts)
		}
	})
}

// TestPreemptedWaitsBehindLoaded is a run TestSwapProperty found stalled
// (recompute preemption, no swap): request 4's prefix was loaded from
// host and it waited at the front of the queue holding 15 of 25 blocks;
// a preempted request was put in front of it and waited for blocks it
// held. Preempted requests now queue behind loaded ones.
func TestPreemptedWaitsBehindLoaded(t *testing.T) {
	d := []int{64, 274, 1, 64, 1, 1, 192, 2, 0, 1, 1, 0, 120, 106, 1, 1, 1, 0, 177, 1, 1, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 43, 0, 1, 1, 0, 104, 58, 1}
	reqs := packedRequests(d)
	engines := colocated(t, 2, engine.Config{MaxNumSeqs: 6, MaxNumBatchedTokens: 256, BlockSize: 16, NumBlocks: 25,
		ChunkedPrefill: true, PrefixCaching: true, CheckInvariants: true})
	c := &collect{recs: map[int64]metrics.Record{}}
	runTiered(t, engines, smallTiers(), &sliceSrc{reqs: reqs}, c, c)
	endedOnce(t, c, len(reqs))
}

// TestLoadedRequestNotStranded is a run TestSwapProperty found stalled
// (async scheduling, recompute): request 7's prefix load ended during a
// step, so the batch formed when that step began could not see it; that
// batch was empty and the engine went idle with the loaded request (and
// one behind it) waiting for a wake-up that never came. An idle engine
// now forms again at once, seeing what it could not.
func TestLoadedRequestNotStranded(t *testing.T) {
	d := []int{1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 36, 494, 0, 1, 1, 0, 520, 234, 1, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 520, 1, 0}
	reqs := packedRequests(d)
	engines := colocated(t, 1, engine.Config{MaxNumSeqs: 6, MaxNumBatchedTokens: 256, BlockSize: 16, NumBlocks: 65,
		ChunkedPrefill: true, PrefixCaching: true, AsyncScheduling: true, CheckInvariants: true})
	c := &collect{recs: map[int64]metrics.Record{}}
	runTiered(t, engines, smallTiers(), &sliceSrc{reqs: reqs}, c, c)
	endedOnce(t, c, len(reqs))
}
