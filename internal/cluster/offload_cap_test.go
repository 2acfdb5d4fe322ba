package cluster

import (
	"testing"

	"github.com/servesim/servesim/internal/kvtier"
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
	reqs := offloadReqs()
	run := func(after, capBytes int64) (mean float64, sim *Sim, h *kvtier.Hierarchy) {
		sim, _, h = offloadRun(t, reqs, PDConfig{Policy: Pull, Placement: RoundRobinPlacement, Heartbeat: true, MaxReprefills: 3,
			OffloadPinnedAfter: after, OffloadPinnedMax: capBytes})
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

// TestOffloadDeferredRetry: under the retry placement a request whose
// offload waits for room is moved between decode queues every retry_after,
// yet it waits once, in its place: offload_deferred counts each request's
// pinned KV at most once, and the deferred offloads start in the order
// they became due (by request, as the prompts are prefilled in order),
// not with the retried ones sent to the back of the node's queue.
func TestOffloadDeferredRetry(t *testing.T) {
	reqs := offloadReqs()
	const one = 20 * 16000
	ps := pdSetup{prefill: 1, decode: 2, pBlocks: 300, dBlocks: 30, seqs: 8, budget: 2048,
		cfg: PDConfig{Policy: Pull, Placement: RetryPlacement, RetryAfter: 2e5, Heartbeat: true, MaxReprefills: 3,
			OffloadPinnedAfter: 1e6, OffloadPinnedMax: one},
		bw: 1e10, latency: 1000, kvPerToken: 1000, pred: linear{base: 1e6, perTok: 1000}}
	h, err := kvtier.New(kvtier.Config{BlockSize: 16, ChunkTokens: 256, BlockBytes: 16000,
		Nodes:     []kvtier.Node{hostNode(1e9, 1e11)},
		Instances: []kvtier.Instance{{Node: 0, GPUs: 1}, {Node: 0, GPUs: 1}, {Node: 0, GPUs: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	ps.tiers = h
	sim, c := ps.build(t, reqs)
	var started []int64
	sim.tiers.onOffloadStart = func(id int64) { started = append(started, id) }
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	allFinished(t, c, len(reqs))
	var retries int
	for _, r := range c.recs {
		retries += r.Retries
	}
	if retries == 0 || sim.OffloadDeferred() == 0 || len(started) < 2 {
		t.Fatalf("%d retries, %d offloads deferred, %d started: the setting does not exercise retries of deferred offloads", retries, sim.OffloadDeferred(), len(started))
	}
	if d := sim.OffloadDeferred(); d > int64(len(reqs)) {
		t.Errorf("%d offloads deferred for %d requests (%d retries)", d, len(reqs), retries)
	}
	for i := 1; i < len(started); i++ {
		if started[i] < started[i-1] {
			t.Errorf("offloads started in order %v, not first come first served", started)
			break
		}
	}
	t.Logf("%d retries, %d deferred, offloads started %v", retries, sim.OffloadDeferred(), started)
}
