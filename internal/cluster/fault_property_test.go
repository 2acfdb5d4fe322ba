package cluster

import (
	"fmt"
	"os"
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/link"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// TestFaultProperty draws random colocated and P/D clusters (pull and
// reject handoffs, every placement, short leases, sessions) under random
// faults: scheduled losses, seeded MTBF losses with and without restarts,
// both loss policies and retry budgets, KV load failures under both
// policies, straggler windows and link degradation, with or without an
// autoscaler on each pool (every metric, cool-downs, cold starts,
// drains), with instances of one engine or of two data-parallel ranks
// in lockstep (lost together). With the full
// invariant check after every event (which includes that no pinned KV,
// lease, queue slot or reservation outlives its instance and that a lost
// instance holds nothing), every request must end exactly once with
// ordered timestamps, failures must say why, and every instance must end
// empty with its KV pool consistent. Long run (10,000 cases):
//
//	go test ./internal/cluster -run TestFaultProperty -rapid.checks=10000
func TestFaultProperty(t *testing.T) {
	faultTrace = os.Getenv("SERVESIM_FAULT_TRACE") != ""
	rapid.Check(t, func(rt *rapid.T) {
		pdMode := rapid.Bool().Draw(rt, "pd")
		budget := rapid.SampledFrom([]int{64, 256, 1024}).Draw(rt, "budget")
		nP := rapid.IntRange(1, 3).Draw(rt, "prefill")
		nD := 0
		if pdMode {
			nD = rapid.IntRange(1, 3).Draw(rt, "decode")
		}
		// Each instance is dp engines: data-parallel ranks in lockstep
		// (a DPGroup) when dp is 2, lost and restarted together.
		dp := rapid.SampledFrom([]int{1, 1, 2}).Draw(rt, "dp")
		pred := linear{base: 1e6, perTok: 2000, perKV: 5}
		var engines []*engine.Engine
		var ranks [][]int // per instance
		for i := 0; i < nP+nD; i++ {
			role := engine.Mixed
			if pdMode {
				role = engine.Prefill
				if i >= nP {
					role = engine.Decode
				}
			}
			cfg := engine.Config{MaxNumSeqs: min(rapid.IntRange(1, 16).Draw(rt, "seqs"), budget), MaxNumBatchedTokens: budget, BlockSize: 16,
				NumBlocks: rapid.SampledFrom([]int{64, 300, 2000}).Draw(rt, "blocks"), ChunkedPrefill: true,
				PrefixCaching: rapid.Bool().Draw(rt, "cache"), AsyncScheduling: rapid.Bool().Draw(rt, "async"), Role: role, CheckInvariants: true}
			var rs []int
			for range dp {
				e, err := engine.New(len(engines), cfg, pred)
				if err != nil {
					rt.Fatal(err)
				}
				rs = append(rs, len(engines))
				engines = append(engines, e)
			}
			ranks = append(ranks, rs)
		}
		n := rapid.IntRange(1, 40).Draw(rt, "n")
		src := &sessionSrc{}
		at, id := int64(0), int64(0)
		for i := 0; i < n; i++ {
			at += int64(rapid.IntRange(0, 100).Draw(rt, "gapMs")) * 1e6
			subs := rapid.IntRange(1, 2).Draw(rt, "subRequests")
			var entry []workload.Request
			for k := 0; k < subs; k++ {
				r := workload.Request{ID: id, Arrival: at, InputTokens: rapid.IntRange(1, 900).Draw(rt, "in"), OutputTokens: rapid.IntRange(1, 200).Draw(rt, "out")}
				if k > 0 {
					r.Delay = int64(rapid.IntRange(0, 50).Draw(rt, "toolMs")) * 1e6
				}
				entry = append(entry, r)
				id++
			}
			src.entries = append(src.entries, entry)
		}
		c := &collect{recs: map[int64]metrics.Record{}}
		simCfg := Config{Engines: engines, Source: src, Router: &RoundRobin{}, Observer: c, CheckInvariants: true, Limits: Limits{MaxEvents: 200_000}}
		maxReprefills := rapid.IntRange(0, 3).Draw(rt, "maxReprefills")
		if pdMode {
			cfg := PDConfig{Policy: PolicyName(rapid.SampledFrom([]int{int(Pull), int(Reject)}).Draw(rt, "policy")),
				Placement: Placement(rapid.IntRange(0, 3).Draw(rt, "placement")), SkipAhead: rapid.Bool().Draw(rt, "skip"),
				Lease: int64(rapid.IntRange(1, 300).Draw(rt, "leaseMs")) * 1e6, Heartbeat: rapid.Bool().Draw(rt, "heartbeat"),
				ExpiryFails: rapid.Bool().Draw(rt, "expiryFails"), RetryAfter: int64(rapid.IntRange(1, 300).Draw(rt, "retryMs")) * 1e6,
				MaxPrefillQueue: int64(rapid.IntRange(0, 500).Draw(rt, "maxQueueMs")) * 1e6, MaxDecodeKVFraction: rapid.Float64Range(0, 2).Draw(rt, "kvFrac"),
				LocalPrefillBelow: rapid.SampledFrom([]int{0, 0, 100}).Draw(rt, "localBelow"), MaxReprefills: maxReprefills}
			net := link.New()
			nodes := make([]Node, len(engines))
			for i := range nodes {
				nodes[i] = Node{Endpoints: []link.EndpointID{must(net.AddEndpoint(rapid.SampledFrom([]float64{1e8, 1e9, 25e9}).Draw(rt, "bw"), 0))},
					KVBytesPerToken: 4096, Layers: 32, PrefillTokensPerSec: 1e5}
			}
			simCfg.PD = &PDSetup{Config: cfg, Nodes: nodes, Net: net}
		}
		fc := FaultConfig{MaxRetries: rapid.IntRange(0, 3).Draw(rt, "maxRetries"), Seed: rapid.Uint64Range(1, 1<<40).Draw(rt, "seed")}
		if rapid.Bool().Draw(rt, "failOnLoss") {
			fc.OnLoss = FailOnLoss
		}
		if dp > 1 {
			for _, rs := range ranks {
				simCfg.DPGroups = append(simCfg.DPGroups, DPGroup{Ranks: rs, Pred: pred, MoE: moePerTok(10), Graph: testGraph,
					Balance: rapid.Bool().Draw(rt, "dpBalance")})
			}
		}
		for i, rs := range ranks {
			u := FaultUnit{Name: fmt.Sprintf("inst[%d]", i), Pool: engines[rs[0]].Config().Role.String(), Engines: rs, GPUs: dp, Recovery: -1}
			if rapid.IntRange(0, 3).Draw(rt, "restarts") > 0 {
				u.Recovery = int64(rapid.IntRange(0, 500).Draw(rt, "recoveryMs")) * 1e6
			}
			if rapid.IntRange(0, 2).Draw(rt, "mtbfOn") == 0 {
				u.MTBF = int64(rapid.IntRange(50, 3000).Draw(rt, "mtbfMs")) * 1e6
			}
			fc.Units = append(fc.Units, u)
		}
		for k := rapid.IntRange(0, 4).Draw(rt, "losses"); k > 0; k-- {
			fc.Losses = append(fc.Losses, ScheduledLoss{Unit: rapid.IntRange(0, len(ranks)-1).Draw(rt, "lossUnit"),
				At: int64(rapid.IntRange(0, 3000).Draw(rt, "lossMs")) * 1e6})
		}
		for k := rapid.IntRange(0, 2).Draw(rt, "stragglers"); k > 0; k-- {
			start := int64(rapid.IntRange(0, 2000).Draw(rt, "slowFromMs")) * 1e6
			fc.Stragglers = append(fc.Stragglers, StragglerWindow{Engine: rapid.IntRange(0, len(engines)-1).Draw(rt, "slowEngine"),
				Start: start, End: start + int64(rapid.IntRange(1, 2000).Draw(rt, "slowMs"))*1e6, Factor: rapid.Float64Range(1, 5).Draw(rt, "factor")})
		}
		if pdMode {
			fc.TransferFailure = rapid.SampledFrom([]float64{0, 0.1, 0.5, 1}).Draw(rt, "transferFail")
			if rapid.Bool().Draw(rt, "loadFail") {
				fc.LoadFailure = FailOnLoadFailure
			}
			for k := rapid.IntRange(0, 2).Draw(rt, "linkWindows"); k > 0; k-- {
				start := int64(rapid.IntRange(0, 2000).Draw(rt, "linkFromMs")) * 1e6
				fc.Links = append(fc.Links, LinkWindow{Engines: []int{rapid.IntRange(0, len(engines)-1).Draw(rt, "linkEngine")},
					Start: start, End: start + int64(rapid.IntRange(1, 2000).Draw(rt, "linkMs"))*1e6, Factor: rapid.Float64Range(0.01, 1).Draw(rt, "linkFactor")})
			}
		}
		if rapid.Bool().Draw(rt, "autoscale") {
			as := &AutoscalerConfig{Interval: int64(rapid.IntRange(1, 200).Draw(rt, "intervalMs")) * 1e6}
			for _, pool := range []string{"prefill", "decode", "mixed"} {
				var units []int
				for u := range fc.Units {
					if fc.Units[u].Pool == pool {
						units = append(units, u)
					}
				}
				if len(units) == 0 || rapid.IntRange(0, 2).Draw(rt, "poolOn") == 0 {
					continue
				}
				mx := rapid.IntRange(1, len(units)).Draw(rt, "max")
				mn := rapid.IntRange(1, mx).Draw(rt, "min")
				as.Pools = append(as.Pools, ScalePool{Name: pool, Units: units, Metric: ScaleMetric(rapid.IntRange(0, 2).Draw(rt, "metric")),
					Target: rapid.SampledFrom([]float64{0.3, 1, 4, 200}).Draw(rt, "target"), Window: int64(rapid.IntRange(1, 500).Draw(rt, "windowMs")) * 1e6,
					Min: mn, Max: mx, Initial: rapid.IntRange(mn, mx).Draw(rt, "initial"),
					UpCooldown: int64(rapid.IntRange(0, 300).Draw(rt, "upMs")) * 1e6, DownCooldown: int64(rapid.IntRange(0, 300).Draw(rt, "downMs")) * 1e6,
					ColdStart: int64(rapid.IntRange(0, 500).Draw(rt, "coldMs")) * 1e6})
			}
			if len(as.Pools) > 0 {
				fc.Autoscaler = as
			}
		}
		simCfg.Faults = &fc
		sim, err := New(simCfg)
		if err != nil {
			rt.Fatal(err)
		}
		if faultTrace && sim.pd != nil {
			sim.pd.onTransition = func(h *hand, from hstate, now int64) {
				rt.Logf("t=%d request %d: %s -> %s p=%d d=%d down=%v", now/1000, h.id, from, h.st, h.p, h.d, sim.ft.down)
			}
		}
		end, err := sim.Run()
		if err != nil {
			rt.Fatal(err)
		}
		if l := sim.LimitReached(); l != "" {
			rt.Fatalf("run did not end: %s; %s", l, sim.describe())
		}
		if c.dup != 0 || len(c.recs) != int(id) {
			rt.Fatalf("%d terminal records (%d duplicates) for %d requests", len(c.recs), c.dup, id)
		}
		for _, r := range c.recs {
			if r.Outcome == metrics.Finished && r.Generated != r.OutputTokens {
				rt.Fatalf("request %d finished with %d of %d tokens", r.ID, r.Generated, r.OutputTokens)
			}
			if r.Outcome == metrics.Failed && r.Reason == "" {
				rt.Fatalf("request %d failed without a reason", r.ID)
			}
			if r.Reprefills > maxReprefills {
				rt.Fatalf("request %d re-prefilled %d times, limit %d", r.ID, r.Reprefills, maxReprefills)
			}
			if err := checkTimestamps(&r); err != nil {
				rt.Fatal(err)
			}
		}
		for i, e := range sim.Engines() {
			if e.PinnedBlocks() != 0 || e.Pool().Used() != 0 || e.HandoffQueue() != 0 || e.Reserved() != 0 || e.Running() != 0 || e.Waiting() != 0 {
				rt.Fatalf("instance %d left with %d pinned, %d used blocks, %d queued, %d reserved, %d running, %d waiting",
					i, e.PinnedBlocks(), e.Pool().Used(), e.HandoffQueue(), e.Reserved(), e.Running(), e.Waiting())
			}
			if err := e.Pool().Check(); err != nil {
				rt.Fatal(err)
			}
		}
		if sim.pd != nil && sim.pd.hands.len() != 0 {
			rt.Fatalf("%d handoffs left in flight", sim.pd.hands.len())
		}
		st := sim.FaultStats(end)
		if st.Restarts > st.Losses {
			rt.Fatalf("%d restarts after %d losses", st.Restarts, st.Losses)
		}
		// GPU time: never more than every unit's GPUs for the whole run.
		gpus := 0
		for _, u := range fc.Units {
			gpus += u.GPUs
		}
		if limit := float64(gpus) * float64(end) / 3600e9; st.GPUHours > limit*(1+1e-9) {
			rt.Fatalf("GPU-hours %g exceed %d GPUs for the whole run (%g)", st.GPUHours, gpus, limit)
		}
	})
}

// faultTrace logs every handoff transition of the property test
// (SERVESIM_FAULT_TRACE=1), to read a failing case.
var faultTrace bool
