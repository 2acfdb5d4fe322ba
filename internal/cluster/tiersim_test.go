package cluster

import (
	"fmt"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/kvtier"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// Set-up shared by the tests of runs with a KV tier hierarchy.

// hostNode is a node whose host tier holds capacity bytes, reads and
// writes at bw bytes/s with 1 us per operation, behind PCIe links of
// 1 GB/s and 10 us.
func hostNode(capacity int64, bw float64) kvtier.Node {
	return kvtier.Node{Host: kvtier.Spec{CapacityBytes: capacity, ReadBW: bw, WriteBW: bw, LatencyNs: 1000}, PCIeBW: 1e9, PCIeLatencyNs: 10000}
}

// colocated is n colocated instances of configuration cfg whose steps
// take 1 ms + 1 us per token.
func colocated(t fataler, n int, cfg engine.Config) []*engine.Engine {
	var engines []*engine.Engine
	for i := 0; i < n; i++ {
		e, err := engine.New(i, cfg, linear{base: 1e6, perTok: 1000})
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, e)
	}
	return engines
}

// runTiered runs engines on src with the tier hierarchy cfg, each engine
// a single-GPU instance of node 0 (cfg.Instances is filled in), invariants
// checked during the run and the hierarchy's after it. obs observes the
// run and c, its records, must hold no request twice.
func runTiered(t fataler, engines []*engine.Engine, cfg kvtier.Config, src workload.Source, obs Observer, c *collect) (*Sim, *kvtier.Hierarchy) {
	cfg.Instances = nil
	for range engines {
		cfg.Instances = append(cfg.Instances, kvtier.Instance{Node: 0, GPUs: 1})
	}
	h, err := kvtier.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := New(Config{Engines: engines, Source: src, Observer: obs, CheckInvariants: true, Tiers: h})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	if err := h.Check(); err != nil {
		t.Fatal(err)
	}
	if c.dup != 0 {
		t.Fatal(fmt.Sprintf("%d duplicate terminal records", c.dup))
	}
	return sim, h
}

// endedOnce checks that each of n requests ended once.
func endedOnce(t fataler, c *collect, n int) {
	if len(c.recs) != n || c.dup != 0 {
		t.Fatal(fmt.Sprintf("%d records, %d duplicates, want %d", len(c.recs), c.dup, n))
	}
}

// allFinished checks that each of n requests ended once, finished.
func allFinished(t fataler, c *collect, n int) {
	endedOnce(t, c, n)
	for id, r := range c.recs {
		if r.Outcome != metrics.Finished {
			t.Fatal(fmt.Sprintf("request %d: %s %s", id, r.Outcome, r.Reason))
		}
	}
}

// packedRequests are the requests of d, three numbers each: prompt
// tokens, output tokens, and 1 when the prompt has token ids (request i's
// starting at 1000 x (i mod 3), so that some share prefixes).
func packedRequests(d []int) []workload.Request {
	var reqs []workload.Request
	for i := 0; i*3 < len(d); i++ {
		r := workload.Request{ID: int64(i), InputTokens: d[3*i], OutputTokens: d[3*i+1]}
		if d[3*i+2] == 1 {
			r.InputIDs = ids(1000*(i%3), r.InputTokens)
		}
		reqs = append(reqs, r)
	}
	return reqs
}

// offloadRun runs reqs on one prefill and one decode instance (100 and
// 30 blocks; the decode instance holds few requests at once, so prefilled
// ones wait with their KV pinned) under cfg, with a host tier on their
// node for offloaded handoff KV (blocks of 16,000 bytes). Every request
// must finish once and the host memory must hold no handoff KV after.
func offloadRun(t *testing.T, reqs []workload.Request, cfg PDConfig) (*Sim, *collect, *kvtier.Hierarchy) {
	t.Helper()
	ps := pdSetup{prefill: 1, decode: 1, pBlocks: 100, dBlocks: 30, seqs: 8, budget: 2048,
		cfg: cfg, bw: 1e10, latency: 1000, kvPerToken: 1000, pred: linear{base: 1e6, perTok: 1000}}
	h, err := kvtier.New(kvtier.Config{BlockSize: 16, ChunkTokens: 256, BlockBytes: 16000,
		Nodes:     []kvtier.Node{hostNode(1e9, 1e11)},
		Instances: []kvtier.Instance{{Node: 0, GPUs: 1}, {Node: 0, GPUs: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	ps.tiers = h
	sim, c := ps.build(t, reqs)
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	allFinished(t, c, len(reqs))
	if b := h.HandoffBytes(0); b != 0 {
		t.Errorf("host memory holds %d bytes of handoff KV after the run", b)
	}
	return sim, c, h
}

// offloadReqs are 12 requests of 320 prompt tokens (20 blocks) and 50
// output tokens, 1 ms apart.
func offloadReqs() []workload.Request {
	var reqs []workload.Request
	for i := 0; i < 12; i++ {
		reqs = append(reqs, workload.Request{ID: int64(i), Arrival: int64(i) * 1e6, InputTokens: 320, OutputTokens: 50})
	}
	return reqs
}

// KV tiers load and swap a request's full-attention blocks only: an
// engine keeping a hybrid model's local KV cache groups is refused.
func TestTiersRefuseLocalKVGroups(t *testing.T) {
	e, err := engine.New(0, engine.Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 256, BlockSize: 16, NumBlocks: 1000,
		ChunkedPrefill: true, PrefixCaching: true, Local: engine.LocalKV{Groups: 1, Window: 128}}, linear{base: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	h, err := kvtier.New(kvtier.Config{BlockSize: 16, ChunkTokens: 256, BlockBytes: 16000,
		Nodes: []kvtier.Node{hostNode(1e9, 1e11)}, Instances: []kvtier.Instance{{Node: 0, GPUs: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{Engines: []*engine.Engine{e}, Source: &sliceSrc{}, Tiers: h})
	if err == nil || !strings.Contains(err.Error(), "local KV cache groups") {
		t.Fatalf("want the local groups refused with KV tiers, got %v", err)
	}
}
