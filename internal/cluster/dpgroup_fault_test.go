package cluster

import (
	"fmt"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// dpFaultSim builds instances data-parallel instances of ranks ranks each
// (engines instance×ranks … +ranks−1, one fault unit "g[i]" each, the
// balancer picking the rank, round-robin between instances) with the
// lockstep test predictor and the faults f (its Units are filled here,
// with recovery).
func dpFaultSim(t *testing.T, instances, ranks int, reqs []workload.Request, f FaultConfig, recovery int64) (*Sim, *collect) {
	t.Helper()
	pred := padPred{base: 1000, perTok: 100}
	var engines []*engine.Engine
	var groups []DPGroup
	for g := 0; g < instances; g++ {
		var rs []int
		for r := 0; r < ranks; r++ {
			e, err := engine.New(len(engines), engine.Config{MaxNumSeqs: 16, MaxNumBatchedTokens: 64, BlockSize: 16, NumBlocks: 400,
				ChunkedPrefill: true, CheckInvariants: true}, pred)
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, len(engines))
			engines = append(engines, e)
		}
		groups = append(groups, DPGroup{Ranks: rs, Pred: pred, MoE: moePerTok(10), Graph: testGraph, Balance: true})
		f.Units = append(f.Units, FaultUnit{Name: fmt.Sprintf("g[%d]", g), Pool: "g", Engines: rs, GPUs: ranks, Recovery: recovery})
	}
	f.Seed = 1
	log := &collect{recs: map[int64]metrics.Record{}}
	sim, err := New(Config{Engines: engines, Source: &sliceSrc{reqs: reqs}, Router: &RoundRobin{}, Observer: log,
		DPGroups: groups, Faults: &f})
	if err != nil {
		t.Fatal(err)
	}
	return sim, log
}

// TestDPInstanceLoss: a data-parallel instance is lost with all its
// ranks, and its requests are handled as any lost instance's
// (docs/faults.md): under on_loss retry the router sends them again to a
// live instance, from scratch, keeping their arrival; under fail, or with
// no live instance left, they fail with the reason. Eight requests of 7
// prompt and 100 output tokens at 0 on two-rank instances; round-robin
// gives instance 0 (engines 0 and 1) requests 1, 3, 5 and 7, and the
// balancer spreads them over its two ranks. A decode step takes about
// 1.5 us, so at the loss (50 us) every request is running.
func TestDPInstanceLoss(t *testing.T) {
	var reqs []workload.Request
	for i := int64(1); i <= 8; i++ {
		reqs = append(reqs, workload.Request{ID: i, InputTokens: 7, OutputTokens: 100})
	}
	for _, c := range []struct {
		name      string
		instances int
		onLoss    LossPolicy
		// wants: outcomes, requests sent again, the failed ones' reason
		finished, failed, retried int
		reason                    string
	}{
		{"retry on the live instance", 2, RetryOnLoss, 8, 0, 4, ""},
		{"fail", 2, FailOnLoss, 4, 4, 0, "instance lost: g[0] failed while the request ran there (faults.on_loss fail)"},
		{"retry with no live instance", 1, RetryOnLoss, 0, 8, 8, "instance lost: no live instance can serve the request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := FaultConfig{OnLoss: c.onLoss, MaxRetries: 3, Losses: []ScheduledLoss{{Unit: 0, At: 50_000}}}
			sim, log := dpFaultSim(t, c.instances, 2, reqs, f, -1)
			end, err := sim.Run()
			if err != nil {
				t.Fatal(err)
			}
			if log.dup != 0 || len(log.recs) != len(reqs) {
				t.Fatalf("%d records (%d duplicates) for %d requests", len(log.recs), log.dup, len(reqs))
			}
			n := map[metrics.Outcome]int{}
			for id, r := range log.recs {
				n[r.Outcome]++
				switch {
				case r.Outcome == metrics.Failed && r.Reason != c.reason:
					t.Errorf("request %d failed: %q, want %q", id, r.Reason, c.reason)
				case r.Outcome == metrics.Finished && id%2 == 1 && r.DecodeInstance < 2:
					t.Errorf("request %d finished on engine %d of the lost instance", id, r.DecodeInstance)
				case r.Outcome == metrics.Finished && r.Arrival != 0:
					t.Errorf("request %d: arrival %d, want 0 (a retry keeps its arrival)", id, r.Arrival)
				}
			}
			if n[metrics.Finished] != c.finished || n[metrics.Failed] != c.failed {
				t.Fatalf("finished %d failed %d, want %d and %d", n[metrics.Finished], n[metrics.Failed], c.finished, c.failed)
			}
			if st := sim.FaultStats(end); st.Retried != int64(c.retried) || st.Losses != 1 {
				t.Fatalf("retried %d losses %d, want %d and 1", st.Retried, st.Losses, c.retried)
			}
		})
	}
}

// TestDPBalancerRestartsWithInstance: a DP instance that comes back after
// a loss is a new process, whose load balancer has no counts: the first
// request after the restart goes to rank 0 (all scores 0, ties to the
// lowest rank). Before the loss the balancer sent requests 1, 2 and 3 to
// ranks 0, 1 and 0 and, with no publication yet (they come every 100 ms),
// still counts 8 for rank 0 and 4 for rank 1: kept, they would send the
// request after the restart to rank 1.
func TestDPBalancerRestartsWithInstance(t *testing.T) {
	reqs := []workload.Request{
		{ID: 1, InputTokens: 7, OutputTokens: 100},
		{ID: 2, InputTokens: 7, OutputTokens: 100},
		{ID: 3, InputTokens: 7, OutputTokens: 100},
		{ID: 4, Arrival: 100_000, InputTokens: 7, OutputTokens: 5},
	}
	f := FaultConfig{OnLoss: FailOnLoss, MaxRetries: 3, Losses: []ScheduledLoss{{Unit: 0, At: 20_000}}}
	sim, log := dpFaultSim(t, 1, 2, reqs, f, 50_000)
	end, err := sim.Run()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for id := int64(1); id <= 4; id++ {
		r := log.recs[id]
		got = append(got, fmt.Sprintf("%d:%s@%d", id, r.Outcome, r.DecodeInstance))
	}
	want := "1:failed@0 2:failed@1 3:failed@0 4:finished@0"
	if s := strings.Join(got, " "); s != want {
		t.Fatalf("requests %s, want %s", s, want)
	}
	if st := sim.FaultStats(end); st.Restarts != 1 {
		t.Fatalf("%d restarts, want 1", st.Restarts)
	}
}
