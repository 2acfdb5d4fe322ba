package cluster

import (
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/kvtier"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// tierSim runs entries on n single-GPU instances of one node (round-robin
// routing) with a host tier: blocks of 16 tokens and 1e6 bytes, chunks of
// 256 tokens, PCIe links of 1 GB/s and 10 us, host DRAM of 1 TB/s.
func tierSim(t *testing.T, n int, blocks int, save bool, es []workload.Entry) (*collect, *kvtier.Hierarchy) {
	t.Helper()
	engines := colocated(t, n, engine.Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 2048, BlockSize: 16, NumBlocks: blocks,
		ChunkedPrefill: true, PrefixCaching: true, CheckInvariants: true})
	c := &collect{recs: map[int64]metrics.Record{}}
	sim, h := runTiered(t, engines, kvtier.Config{BlockSize: 16, ChunkTokens: 256, BlockBytes: 1e6, SaveDecodeCache: save,
		Nodes: []kvtier.Node{hostNode(1e9, 1e12)}}, &entrySrc{es: es}, c, c)
	if n := len(sim.ph.next); n != 0 {
		t.Fatalf("%d sessions' prompt hashes kept after the run", n)
	}
	return c, h
}

func ids(base, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(base + i)
	}
	return out
}

// twoTurns is a conversation: a 512-token prompt with a 257-token reply
// (whose KV fills 48 blocks, three chunks), then, 1 s after it ends, a
// turn whose prompt is the whole history plus 63 new tokens.
func twoTurns() []workload.Entry {
	p1, r1 := ids(1, 512), ids(10000, 257)
	p2 := append(append(append([]int32{}, p1...), r1...), ids(20000, 63)...)
	return []workload.Entry{{Session: "chat", Requests: []workload.Request{
		{ID: 0, Arrival: 0, InputTokens: 512, OutputTokens: 257, InputIDs: p1, OutputIDs: r1},
		{ID: 1, Delay: 1e9, InputTokens: len(p2), OutputTokens: 4, InputIDs: p2},
	}}}
}

// TestMultiTurnReplyInHostOnlyWithSaveDecodeCache: turn 2 runs on the
// other instance (an empty GPU cache), so its prefix comes from the
// node's host tier: the prompt's two chunks, plus the reply's chunk only
// with save_decode_cache. The load takes exactly latency + bytes /
// bandwidth on the idle PCIe link, and the prefill waits for it.
func TestMultiTurnReplyInHostOnlyWithSaveDecodeCache(t *testing.T) {
	for _, tt := range []struct {
		save   bool
		tokens int
	}{{false, 512}, {true, 768}} {
		c, h := tierSim(t, 2, 200, tt.save, twoTurns())
		r := c.recs[1]
		if r.Outcome != metrics.Finished || r.PrefillInstance != 1 {
			t.Fatalf("save %t: turn 2 %s on instance %d", tt.save, r.Outcome, r.PrefillInstance)
		}
		if r.CachedTokens != tt.tokens || r.PrefixTier != kvtier.Host {
			t.Errorf("save %t: turn 2 found %d tokens in tier %d, want %d in host", tt.save, r.CachedTokens, r.PrefixTier, tt.tokens)
		}
		// max(10 us PCIe, 1 us DRAM) + blocks x 1e6 B / 1e9 B/s.
		want := int64(10000 + tt.tokens/16*1_000_000)
		if r.TierLoadNs != want {
			t.Errorf("save %t: load took %d ns, want %d", tt.save, r.TierLoadNs, want)
		}
		if r.Scheduled-r.Arrival < want {
			t.Errorf("save %t: prefill started %d ns after arrival, before the %d ns load ended", tt.save, r.Scheduled-r.Arrival, want)
		}
		if st := h.Stats(kvtier.Host); st.HitTokens != int64(tt.tokens) || st.BytesRead != int64(tt.tokens/16)*1e6 {
			t.Errorf("save %t: host stats %+v", tt.save, st)
		}
	}
}

// TestPreemptedPrefixReloadsFromHost: a GPU pool too small for two long
// prompts at once makes the scheduler preempt (recompute); the preempted
// request's prompt chunks were stored to host, so its re-admission
// loads them rather than recomputing them, and every request finishes.
func TestPreemptedPrefixReloadsFromHost(t *testing.T) {
	var es []workload.Entry
	for i := 0; i < 2; i++ {
		es = append(es, workload.Entry{Requests: []workload.Request{{ID: int64(i), Arrival: int64(i) * 1e6, InputTokens: 512, OutputTokens: 700,
			InputIDs: ids(100000*(i+1), 512)}}})
	}
	c, h := tierSim(t, 1, 100, false, es)
	pre := 0
	for id, r := range c.recs {
		if r.Outcome != metrics.Finished {
			t.Fatalf("request %d: %s %s", id, r.Outcome, r.Reason)
		}
		pre += r.Preemptions
	}
	if pre == 0 {
		t.Fatal("no preemption: the test does not exercise the reload")
	}
	// Request 1 (prompt 32 blocks, two chunks) is preempted holding 50
	// blocks; they are freed tail first, so request 0, growing from 50 to
	// 76 blocks, evicts its blocks 49 down to 24. At re-admission the GPU
	// still holds blocks 0-23 and the host the second chunk (blocks
	// 16-31): blocks 24-31 are loaded, 8 x 1e6 bytes in 10 us + 8 ms.
	if st := h.Stats(kvtier.Host); st.Loads != 1 || st.HitBlocks != 8 || st.LoadNs != 10000+8_000_000 {
		t.Errorf("preempted prefix not reloaded from host as computed: %+v", st)
	}
	if r := c.recs[1]; r.Preemptions == 0 || r.PrefixTier != kvtier.Host || r.CachedTokens != 0 {
		t.Errorf("request 1: %d preemptions, prefix tier %d, cached tokens %d at first admission", r.Preemptions, r.PrefixTier, r.CachedTokens)
	}
}

// TestOffloadPinnedKV: a decode instance that holds one request at a time
// makes prefilled requests wait with their KV pinned. With
// offload_pinned_after 1 ms, that KV moves to the prefill node's host
// memory: the peak pinned KV drops to what waits less than the offload
// delay plus the copy, the prefill instance admits the next prompts
// sooner, every request still ends once, and the host memory holds
// nothing at the end (every offloaded byte was released once).
func TestOffloadPinnedKV(t *testing.T) {
	reqs := offloadReqs()
	run := func(after int64) (peak int, queue int64) {
		sim, c, _ := offloadRun(t, reqs, PDConfig{Policy: Pull, Placement: RoundRobinPlacement, Heartbeat: true, MaxReprefills: 3, OffloadPinnedAfter: after})
		for _, r := range c.recs {
			queue += r.Scheduled - r.Arrival
		}
		p, _ := sim.PinnedStats()
		return p[0], queue
	}
	pinPeak, pinQueue := run(0)
	offPeak, offQueue := run(1e6)
	if offPeak >= pinPeak || offQueue >= pinQueue {
		t.Errorf("offload: peak pinned %d blocks, prefill queueing %d ns; kept pinned: %d, %d", offPeak, offQueue, pinPeak, pinQueue)
	}
	t.Logf("peak pinned %d -> %d blocks, prefill queueing %d -> %d ms", pinPeak, offPeak, pinQueue/1e6, offQueue/1e6)
}
