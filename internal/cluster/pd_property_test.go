package cluster

import (
	"io"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/link"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// TestPDPropertyWide draws wider random P/D clusters than
// TestPDPropertyEveryRequestTerminal: heterogeneous decode pools (some too
// small for some requests), mixed instances among the prefill ones, tiny
// KV, short leases, decode headroom, max_model_len, chunked prefill on and
// off, pipeline parallelism, tensor-parallel links, shared prefixes and
// agentic sessions, under every policy and placement. With the full
// invariant check after every event, every request must end exactly once
// with ordered timestamps, re-prefills within the limit, and every
// instance must end empty. Long run (documented in docs/handoff.md):
//
//	go test ./internal/cluster -run TestPDPropertyWide -rapid.checks=10000
func TestPDPropertyWide(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		policy := PolicyName(rapid.IntRange(0, 4).Draw(rt, "policy"))
		chunked := rapid.Bool().Draw(rt, "chunked")
		budget := rapid.SampledFrom([]int{64, 256, 1024}).Draw(rt, "budget")
		maxLen := 0
		if !chunked {
			maxLen = budget // vLLM's start-up rule without chunked prefill
		} else if rapid.Bool().Draw(rt, "maxLenSet") {
			maxLen = rapid.IntRange(200, 3000).Draw(rt, "maxLen")
		}
		headroom := rapid.SampledFrom([]int{0, 0, 64, 500}).Draw(rt, "headroom")
		tp := rapid.IntRange(1, 2).Draw(rt, "tp")
		pp := rapid.IntRange(1, 2).Draw(rt, "pp")
		nP := rapid.IntRange(1, 3).Draw(rt, "prefill")
		nD := rapid.IntRange(1, 3).Draw(rt, "decode")
		var local engine.LocalKV // a hybrid model's sliding or chunked groups, one run in three
		if rapid.IntRange(0, 2).Draw(rt, "hybrid") == 0 {
			local = engine.LocalKV{Groups: rapid.IntRange(1, 3).Draw(rt, "localGroups"), Window: rapid.SampledFrom([]int{32, 128, 1000}).Draw(rt, "window"), Chunked: rapid.Bool().Draw(rt, "chunkedLocal")}
		}
		var engines []*engine.Engine
		var bufs []int
		for i := 0; i < nP+nD; i++ {
			role := engine.Prefill
			if i >= nP {
				role = engine.Decode
			} else if i > 0 && rapid.IntRange(0, 3).Draw(rt, "mixed") == 0 {
				role = engine.Mixed
			}
			blocks := rapid.SampledFrom([]int{8, 40, 64, 300, 2000, 2000}).Draw(rt, "blocks")
			cfg := engine.Config{MaxNumSeqs: rapid.IntRange(1, 16).Draw(rt, "seqs"), MaxNumBatchedTokens: budget, BlockSize: 16,
				NumBlocks: blocks, MaxModelLen: maxLen, ChunkedPrefill: chunked, PrefixCaching: rapid.Bool().Draw(rt, "cache"),
				AsyncScheduling: rapid.Bool().Draw(rt, "async"), Role: role, PipelineParallel: pp, CheckInvariants: true, Local: local}
			if local.Groups > 0 {
				// Room for the local groups' window and a step's blocks.
				cfg.NumBlocks += local.Groups * ((local.Window+max(budget, headroom+1))/16 + 3)
			}
			if cfg.MaxNumSeqs > budget {
				cfg.MaxNumSeqs = budget
			}
			if role == engine.Decode {
				cfg.ReservedDecodeTokens = headroom
			}
			e, err := engine.New(i, cfg, linear{base: 1e6, perTok: 2000, perKV: 5})
			if err != nil {
				rt.Fatal(err)
			}
			engines = append(engines, e)
			buf := 0
			if role == engine.Decode {
				buf = rapid.IntRange(0, blocks).Draw(rt, "buf")
			}
			bufs = append(bufs, buf)
		}
		cfg := PDConfig{
			Policy:              policy,
			Placement:           Placement(rapid.IntRange(0, 3).Draw(rt, "placement")),
			SkipAhead:           rapid.Bool().Draw(rt, "skip"),
			Lease:               int64(rapid.IntRange(1, 300).Draw(rt, "leaseMs")) * 1e6,
			Heartbeat:           rapid.Bool().Draw(rt, "heartbeat"),
			ExpiryFails:         rapid.Bool().Draw(rt, "expiryFails"),
			RetryAfter:          int64(rapid.IntRange(1, 300).Draw(rt, "retryMs")) * 1e6,
			MaxPrefillQueue:     int64(rapid.IntRange(0, 500).Draw(rt, "maxQueueMs")) * 1e6,
			MaxDecodeKVFraction: rapid.Float64Range(0, 2).Draw(rt, "kvFrac"),
			PushBufferBlocks:    bufs,
			PushSpill:           rapid.Bool().Draw(rt, "spill"),
			HostBandwidth:       rapid.SampledFrom([]float64{1e8, 1e10}).Draw(rt, "hostBW"),
			LocalPrefillBelow:   rapid.SampledFrom([]int{0, 0, 100, 1000}).Draw(rt, "localBelow"),
			MaxReprefills:       rapid.IntRange(0, 4).Draw(rt, "maxReprefills"),
		}
		n := rapid.IntRange(1, 40).Draw(rt, "n")
		shared := rapid.SampledFrom([]int{0, 0, 64, 512}).Draw(rt, "sharedPrefix")
		src := &sessionSrc{}
		at := int64(0)
		id := int64(0)
		for i := 0; i < n; i++ {
			at += int64(rapid.IntRange(0, 100).Draw(rt, "gapMs")) * 1e6
			subs := rapid.IntRange(1, 3).Draw(rt, "subRequests")
			var entry []workload.Request
			for k := 0; k < subs; k++ {
				in := rapid.IntRange(1, rapid.SampledFrom([]int{300, 300, 2500}).Draw(rt, "inMax")).Draw(rt, "in")
				r := workload.Request{ID: id, Arrival: at, InputTokens: in, OutputTokens: rapid.IntRange(1, 200).Draw(rt, "out")}
				if k > 0 {
					r.Delay = int64(rapid.IntRange(0, 50).Draw(rt, "toolMs")) * 1e6
				}
				if shared > 0 {
					r.InputIDs = make([]int32, in)
					for j := range r.InputIDs {
						r.InputIDs[j] = int32(1_000_000*(id+1) + int64(j))
						if j < shared {
							r.InputIDs[j] = int32(j)
						}
					}
				}
				entry = append(entry, r)
				id++
			}
			src.entries = append(src.entries, entry)
		}
		c := &collect{recs: map[int64]metrics.Record{}}
		var limits Limits
		if rapid.IntRange(0, 3).Draw(rt, "limited") == 0 {
			// A run cut off early: requests in flight fail with "limit".
			limits = Limits{MaxEvents: int64(rapid.IntRange(1, 5000).Draw(rt, "maxEvents"))}
		}
		net := link.New()
		bw := rapid.SampledFrom([]float64{link.Unlimited, 1e9, 25e9}).Draw(rt, "bw")
		nodes := make([]Node, len(engines))
		for i := range nodes {
			for r := 0; r < tp; r++ {
				nodes[i].Endpoints = append(nodes[i].Endpoints, must(net.AddEndpoint(bw, int64(rapid.IntRange(0, 20_000).Draw(rt, "lat")))))
			}
			nodes[i].KVBytesPerToken, nodes[i].Layers = 4096, 32
			if local.Groups > 0 {
				nodes[i].LocalKVBytesPerToken = 2048
			}
			nodes[i].PrefillTokensPerSec = rapid.SampledFrom([]float64{0, 1e4, 1e6}).Draw(rt, "prefillRate")
		}
		sim, err := New(Config{Engines: engines, Source: src, Router: &RoundRobin{}, Observer: c, CheckInvariants: true, Limits: limits,
			PD: &PDSetup{Config: cfg, Nodes: nodes, Net: net}})
		if err != nil {
			rt.Fatal(err)
		}
		_, err = sim.Run()
		if policy == Eager && sim.Stopped() != nil {
			return // the legacy policy may stop; it does so with a report
		}
		if err != nil {
			rt.Fatal(err)
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
			if r.Reprefills > cfg.MaxReprefills {
				rt.Fatalf("request %d re-prefilled %d times, limit %d", r.ID, r.Reprefills, cfg.MaxReprefills)
			}
			if err := checkTimestamps(&r); err != nil {
				rt.Fatal(err)
			}
			if r.Outcome == metrics.Rejected && policy != Reject {
				rt.Fatalf("request %d rejected under policy %s", r.ID, policy)
			}
			if strings.Contains(r.Reason, "lease") && cfg.Heartbeat {
				rt.Fatalf("request %d: lease expired with heartbeat on: %s", r.ID, r.Reason)
			}
		}
		// No preemption is lost, whatever the request's outcome: the
		// records' counts add up to the preemptions the engines made.
		var made, counted int64
		for _, e := range sim.Engines() {
			made += e.Preemptions()
		}
		for _, r := range c.recs {
			counted += int64(r.Preemptions)
		}
		if made != counted {
			rt.Fatalf("engines preempted %d times; records count %d (limit %q)", made, counted, sim.LimitReached())
		}
		if sim.LimitReached() != "" {
			return // cut off: instances keep what they held
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
		if sim.pd.hands.len() != 0 {
			rt.Fatalf("%d handoffs left in flight", sim.pd.hands.len())
		}
	})
}

// sessionSrc serves entries of one or more requests (agentic sessions).
type sessionSrc struct {
	entries [][]workload.Request
	i       int
}

func (s *sessionSrc) Next() (workload.Entry, error) {
	if s.i >= len(s.entries) {
		return workload.Entry{}, io.EOF
	}
	e := s.entries[s.i]
	s.i++
	return workload.Entry{Requests: e}, nil
}
