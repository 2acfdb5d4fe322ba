package cluster

import (
	"testing"

	"github.com/servesim/servesim/internal/kvtier"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// TestOffloadPinnedCap: the setting of TestOffloadPinnedKV (a decode
// instance that holds one request at a time, so prefilled requests wait
// with their KV pinned) with the host memory for offloaded handoff KV
// bounded. One request's prompt KV is 20 blocks of 16,000 bytes, 320 kB:
// a bound of 640 kB holds two. The node never holds more than the bound,
// the offloads beyond it wait (counted) and start as offloaded KV is
// released, the mean pinned GPU KV lies between keeping it pinned and
// offloading without a bound, every request still finishes once and
// nothing is left in host memory. A bound smaller than one request's KV offloads nothing.
func TestOffloadPinnedCap(t *testing.T) {
	var reqs []workload.Request
	for i := 0; i < 12; i++ {
		reqs = append(reqs, workload.Request{ID: int64(i), Arrival: int64(i) * 1e6, InputTokens: 320, OutputTokens: 50})
	}
	run := func(after, capBytes int64) (mean float64, sim *Sim, h *kvtier.Hierarchy) {
		ps := pdSetup{prefill: 1, decode: 1, pBlocks: 100, dBlocks: 30, seqs: 8, budget: 2048,
			cfg: PDConfig{Policy: Pull, Placement: RoundRobinPlacement, Heartbeat: true, MaxReprefills: 3,
				OffloadPinnedAfter: after, OffloadPinnedMax: capBytes},
			bw: 1e10, latency: 1000, kvPerToken: 1000, pred: linear{base: 1e6, perTok: 1000}}
		sim, c := ps.build(t, reqs)
		var err error
		h, err = kvtier.New(kvtier.Config{BlockSize: 16, ChunkTokens: 256, BlockBytes: 16000,
			Nodes:     []kvtier.Node{{Host: kvtier.Spec{CapacityBytes: 1e9, ReadBW: 1e11, WriteBW: 1e11, LatencyNs: 1000}, PCIeBW: 1e9, PCIeLatencyNs: 10000}},
			Instances: []kvtier.Instance{{Node: 0, GPUs: 1}, {Node: 0, GPUs: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		sim.EnableTiers(h)
		if _, err := sim.Run(); err != nil {
			t.Fatal(err)
		}
		if len(c.recs) != len(reqs) || c.dup != 0 {
			t.Fatalf("%d records, %d duplicates, want %d", len(c.recs), c.dup, len(reqs))
		}
		for id, r := range c.recs {
			if r.Outcome != metrics.Finished {
				t.Fatalf("request %d: %s %s", id, r.Outcome, r.Reason)
			}
		}
		if b := h.HandoffBytes(0); b != 0 {
			t.Errorf("host memory holds %d bytes of handoff KV after the run", b)
		}
		_, m := sim.PinnedStats()
		return m[0], sim, h
	}
	const one = 20 * 16000
	pinMean, _, _ := run(0, 0)
	freeMean, freeSim, freeH := run(1e6, 0)
	capMean, capSim, capH := run(1e6, 2*one)
	if freeSim.OffloadDeferred() != 0 || freeH.HandoffPeak(0) <= 2*one {
		t.Fatalf("unbounded: %d deferred, peak %d bytes offloaded: the bound would not bind", freeSim.OffloadDeferred(), freeH.HandoffPeak(0))
	}
	if p := capH.HandoffPeak(0); p > 2*one || p == 0 {
		t.Errorf("bounded to %d bytes, the node held up to %d", 2*one, p)
	}
	if capSim.OffloadDeferred() == 0 {
		t.Error("no offload waited under the bound")
	}
	if !(freeMean < capMean && capMean < pinMean) {
		t.Errorf("mean pinned blocks: kept pinned %.1f, bounded offload %.1f, unbounded %.1f", pinMean, capMean, freeMean)
	}
	_, tinySim, tinyH := run(1e6, one-1)
	if tinyH.HandoffPeak(0) != 0 || tinySim.OffloadDeferred() == 0 {
		t.Errorf("bound below one request's KV: peak %d bytes offloaded, %d deferred", tinyH.HandoffPeak(0), tinySim.OffloadDeferred())
	}
	t.Logf("mean pinned blocks: kept %.1f, bounded %.1f, unbounded %.1f; peak offloaded bytes bounded %d, unbounded %d; deferred %d",
		pinMean, capMean, freeMean, capH.HandoffPeak(0), freeH.HandoffPeak(0), capSim.OffloadDeferred())
}
