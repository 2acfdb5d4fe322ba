package cluster

import (
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/kvtier"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// TestDiskHitStoredBackToHost: a prefix loaded from disk is stored to the
// host tier again when its blocks are committed on the GPU (a GPU -> host
// store, as for any newly committed chunk), so a disk hit is promoted to
// host. One instance of 40 blocks, a host tier of two 256-token chunks
// over a disk: request 0 stores prompt A (two chunks, spilled to disk),
// request 1 stores prompt B, which evicts A from host (and most of A's
// blocks from the GPU); request 2 extends A, finds its prefix on disk and
// loads it; afterwards A's chunks are in host again and B's only on disk.
func TestDiskHitStoredBackToHost(t *testing.T) {
	a, b := ids(1, 512), ids(50000, 512)
	a2 := append(append([]int32{}, a...), ids(90000, 64)...)
	reqs := []workload.Request{
		{ID: 0, Arrival: 0, InputTokens: 512, OutputTokens: 1, InputIDs: a},
		{ID: 1, Arrival: 1e9, InputTokens: 512, OutputTokens: 1, InputIDs: b},
		{ID: 2, Arrival: 2e9, InputTokens: len(a2), OutputTokens: 1, InputIDs: a2},
		// Keeps the run going until the stores of request 2 have ended
		// (a run ends with its last request, write-behind copies or not).
		{ID: 3, Arrival: 3e9, InputTokens: 16, OutputTokens: 1},
	}
	engines := colocated(t, 1, engine.Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 2048, BlockSize: 16, NumBlocks: 40,
		ChunkedPrefill: true, PrefixCaching: true, CheckInvariants: true})
	node := hostNode(32e6, 1e12)
	node.Disk = &kvtier.Spec{CapacityBytes: 1e9, ReadBW: 1e10, WriteBW: 1e10, LatencyNs: 100000}
	c := &collect{recs: map[int64]metrics.Record{}}
	_, h := runTiered(t, engines, kvtier.Config{BlockSize: 16, ChunkTokens: 256, BlockBytes: 1e6, Nodes: []kvtier.Node{node}},
		&sliceSrc{reqs: reqs}, c, c)
	if r := c.recs[2]; r.Outcome != metrics.Finished || r.PrefixTier != kvtier.Disk {
		t.Fatalf("request 2: %s, prefix from tier %d, want a disk hit", r.Outcome, r.PrefixTier)
	}
	ha := engine.PromptHashes(nil, a, 32, 16)
	if end, tier := h.Lookup(0, ha, 0, 32); end != 32 || tier != kvtier.Host {
		t.Errorf("prompt A after its disk hit: %d blocks found in tier %d, want 32 in host", end, tier)
	}
	hb := engine.PromptHashes(nil, b, 32, 16)
	if end, tier := h.Lookup(0, hb, 0, 32); end != 32 || tier != kvtier.Disk {
		t.Errorf("prompt B: %d blocks found in tier %d, want 32 on disk (evicted from host)", end, tier)
	}
}
