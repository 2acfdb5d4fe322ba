package cluster

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/kvtier"
	"github.com/servesim/servesim/internal/link"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// linear costs base ns per step plus perTok ns per token and perKV ns per
// decode context token.
type linear struct{ base, perTok, perKV int64 }

func (l linear) StepTime(b *perf.Batch) int64 {
	return l.base + l.perTok*int64(b.Tokens()) + l.perKV*(b.DecodeKVSum+int64(b.PrefillKV))
}

type sliceSrc struct {
	reqs []workload.Request
	i    int
}

func (s *sliceSrc) Next() (workload.Entry, error) {
	if s.i >= len(s.reqs) {
		return workload.Entry{}, io.EOF
	}
	r := s.reqs[s.i]
	s.i++
	return workload.Entry{Requests: []workload.Request{r}}, nil
}

// collect records every terminal record.
type collect struct {
	recs  map[int64]metrics.Record
	dup   int
	steps int
}

func (c *collect) Advance(int64)                    {}
func (c *collect) StepDone(int, *engine.StepResult) { c.steps++ }
func (c *collect) Terminal(r *metrics.Record) {
	if _, ok := c.recs[r.ID]; ok {
		c.dup++
	}
	c.recs[r.ID] = *r
}

type pdSetup struct {
	prefill, decode  int
	pBlocks, dBlocks int
	seqs, budget     int
	cfg              PDConfig
	bw               float64 // bytes/s; Inf = zero cost
	latency          int64
	kvPerToken       int64
	pred             perf.Predictor
	tiers            *kvtier.Hierarchy // nil: none
	local            engine.LocalKV    // a hybrid model's window-bounded groups
	localKV          int64             // their part of kvPerToken
}

// fataler is the part of testing.TB and *rapid.T the setup needs.
type fataler interface {
	Fatal(args ...any)
}

func (ps pdSetup) build(t fataler, reqs []workload.Request) (*Sim, *collect) {
	var engines []*engine.Engine
	add := func(role engine.Role, blocks int) {
		e, err := engine.New(len(engines), engine.Config{
			MaxNumSeqs: ps.seqs, MaxNumBatchedTokens: ps.budget, BlockSize: 16, NumBlocks: blocks,
			ChunkedPrefill: true, PrefixCaching: true, AsyncScheduling: true, Role: role,
			ReservedDecodeTokens: 0, CheckInvariants: true, Local: ps.local,
		}, ps.pred)
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, e)
	}
	for i := 0; i < ps.prefill; i++ {
		add(engine.Prefill, ps.pBlocks)
	}
	for i := 0; i < ps.decode; i++ {
		add(engine.Decode, ps.dBlocks)
	}
	c := &collect{recs: map[int64]metrics.Record{}}
	net := link.New()
	nodes := make([]Node, len(engines))
	for i := range nodes {
		nodes[i] = Node{Endpoints: []link.EndpointID{must(net.AddEndpoint(ps.bw, ps.latency))}, KVBytesPerToken: ps.kvPerToken, LocalKVBytesPerToken: ps.localKV, Layers: 32, PrefillTokensPerSec: 20000}
	}
	cfg := ps.cfg
	if cfg.Policy == Push && cfg.PushBufferBlocks == nil {
		cfg.PushBufferBlocks = make([]int, len(engines))
		for i := ps.prefill; i < len(engines); i++ {
			cfg.PushBufferBlocks[i] = ps.dBlocks / 10
		}
	}
	sim, err := New(Config{Engines: engines, Source: &sliceSrc{reqs: reqs}, Router: &RoundRobin{}, Observer: c, CheckInvariants: true,
		Tiers: ps.tiers, PD: &PDSetup{Config: cfg, Nodes: nodes, Net: net}})
	if err != nil {
		t.Fatal(err)
	}
	return sim, c
}

// TestDecodePhaseMatchesPreloadedMixed: with ample decode memory and
// zero-cost links, each request's decode phase on the decode instance is
// the same as on a mixed instance that already holds the prompt's KV.
func TestDecodePhaseMatchesPreloadedMixed(t *testing.T) {
	pred := linear{base: 5_000_000, perTok: 10_000, perKV: 100}
	// Prompts of 16k+1 tokens: a preloaded prefix covers prompt-1 tokens.
	var reqs []workload.Request
	for i := 0; i < 4; i++ {
		in := 16*(10+7*i) + 1
		ids := make([]int32, in)
		for j := range ids {
			ids[j] = int32(1000*i + j)
		}
		reqs = append(reqs, workload.Request{ID: int64(i), Arrival: int64(i) * 20e9, InputTokens: in, OutputTokens: 20 + 5*i, InputIDs: ids})
	}
	ps := pdSetup{prefill: 1, decode: 1, pBlocks: 5000, dBlocks: 5000, seqs: 64, budget: 2048,
		cfg: PDConfig{Policy: Pull, Heartbeat: true, Lease: 30e9}, bw: math.Inf(1), kvPerToken: 1000, pred: pred}
	sim, got := ps.build(t, reqs)
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		// Mixed instance with the prompt preloaded: run it once to fill the
		// prefix cache, then again; the second run's decode phase is the
		// reference.
		mixed, err := engine.New(0, engine.Config{MaxNumSeqs: 64, MaxNumBatchedTokens: 2048, BlockSize: 16, NumBlocks: 5000,
			ChunkedPrefill: true, PrefixCaching: true, AsyncScheduling: true, CheckInvariants: true}, pred)
		if err != nil {
			t.Fatal(err)
		}
		warm := r
		warm.ID = 100
		warm.Arrival = 0
		warm.OutputTokens = 1
		c := &collect{recs: map[int64]metrics.Record{}}
		ms, _ := New(Config{Engines: []*engine.Engine{mixed}, Source: &sliceSrc{reqs: []workload.Request{warm, {ID: r.ID, Arrival: 10e9, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, InputIDs: r.InputIDs}}}, Observer: c})
		if _, err := ms.Run(); err != nil {
			t.Fatal(err)
		}
		ref := c.recs[r.ID]
		if ref.CachedTokens != r.InputTokens-1 {
			t.Fatalf("reference run cached %d tokens, want %d", ref.CachedTokens, r.InputTokens-1)
		}
		pd := got.recs[r.ID]
		if pd.Outcome != metrics.Finished || pd.TransferEnd < 0 {
			t.Fatalf("request %d: %+v", r.ID, pd)
		}
		wantDecode := ref.LastToken - ref.Arrival
		gotDecode := pd.LastToken - pd.TransferEnd
		if gotDecode != wantDecode {
			t.Errorf("request %d: decode phase %d ns after the transfer, %d ns on a preloaded mixed instance", r.ID, gotDecode, wantDecode)
		}
		if pd.TransferEnd != pd.TransferStart || pd.TransferStart != pd.PrefillEnd {
			t.Errorf("request %d: zero-cost link and idle decode must hand off instantly: prefill end %d, transfer %d..%d", r.ID, pd.PrefillEnd, pd.TransferStart, pd.TransferEnd)
		}
	}
}

// TestTransferTimeOnIdleLink: one request's KV of B bytes per stream takes
// latency + B/bandwidth.
func TestTransferTimeOnIdleLink(t *testing.T) {
	reqs := []workload.Request{{ID: 0, InputTokens: 1600, OutputTokens: 4}}
	ps := pdSetup{prefill: 1, decode: 1, pBlocks: 1000, dBlocks: 1000, seqs: 8, budget: 2048,
		cfg: PDConfig{Policy: Pull, Heartbeat: true, Lease: 30e9}, bw: 1e9, latency: 20_000, kvPerToken: 4096, pred: linear{base: 1e6}}
	sim, got := ps.build(t, reqs)
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	r := got.recs[0]
	// 100 blocks x 16 tokens x 4096 bytes = 6,553,600 bytes at 1 GB/s.
	want := int64(20_000 + 6_553_600)
	if d := r.TransferEnd - r.TransferStart; d != want {
		t.Fatalf("transfer took %d ns, want %d", d, want)
	}
}

// TestHybridTransferMovesWindowBlocks: for a model whose sliding-window
// layers hold half the KV (W = 128), a 1,600-token prompt moves all 100
// blocks of the full-attention layers and the last ⌈128/16⌉ + 1 = 9 of the
// sliding ones (vLLM's NixlConnector clips them): (100 + 9) x 16 tokens x
// 2,048 bytes = 3,571,712 bytes at 1 GB/s after 20 µs, instead of
// 6,553,600.
func TestHybridTransferMovesWindowBlocks(t *testing.T) {
	reqs := []workload.Request{{ID: 0, InputTokens: 1600, OutputTokens: 4}}
	ps := pdSetup{prefill: 1, decode: 1, pBlocks: 1000, dBlocks: 1000, seqs: 8, budget: 2048,
		cfg: PDConfig{Policy: Pull, Heartbeat: true, Lease: 30e9}, bw: 1e9, latency: 20_000, kvPerToken: 4096, pred: linear{base: 1e6},
		local: engine.LocalKV{Groups: 1, Window: 128}, localKV: 2048}
	sim, got := ps.build(t, reqs)
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	r := got.recs[0]
	if d, want := r.TransferEnd-r.TransferStart, int64(20_000+3_571_712); d != want || r.Outcome != metrics.Finished {
		t.Fatalf("transfer took %d ns, want %d (outcome %v)", d, want, r.Outcome)
	}
}

// TestPullBackpressure: congesting the decode pool raises the KV pinned
// on the prefill instance and delays prefill admission.
func TestPullBackpressure(t *testing.T) {
	var reqs []workload.Request
	for i := 0; i < 60; i++ {
		reqs = append(reqs, workload.Request{ID: int64(i), Arrival: int64(i) * 50e6, InputTokens: 3000, OutputTokens: 200})
	}
	run := func(dBlocks int) (peak int, meanQueue float64) {
		ps := pdSetup{prefill: 1, decode: 1, pBlocks: 2500, dBlocks: dBlocks, seqs: 64, budget: 2048,
			cfg: PDConfig{Policy: Pull, Heartbeat: true, Lease: 30e9}, bw: 50e9, latency: 10_000, kvPerToken: 4096,
			pred: linear{base: 8e6, perTok: 20_000, perKV: 50}}
		sim, got := ps.build(t, reqs)
		if _, err := sim.Run(); err != nil {
			t.Fatal(err)
		}
		if len(got.recs) != len(reqs) || got.dup != 0 {
			t.Fatalf("%d terminal records (%d duplicates) for %d requests", len(got.recs), got.dup, len(reqs))
		}
		p, _ := sim.PinnedStats()
		sum := 0.0
		for _, r := range got.recs {
			if r.Outcome != metrics.Finished {
				t.Fatalf("request %d: %s %s", r.ID, r.Outcome, r.Reason)
			}
			sum += float64(r.Scheduled - r.Arrival)
		}
		return p[0], sum / float64(len(reqs))
	}
	amplePeak, ampleQueue := run(20000)
	tightPeak, tightQueue := run(600)
	t.Logf("pinned peak %d -> %d blocks; mean prefill queueing %.1f -> %.1f ms", amplePeak, tightPeak, ampleQueue/1e6, tightQueue/1e6)
	if tightPeak <= 2*amplePeak {
		t.Errorf("congested decode must pin more KV on prefill: peak %d vs %d", tightPeak, amplePeak)
	}
	if tightQueue <= 2*ampleQueue {
		t.Errorf("congested decode must slow prefill admission: mean queueing %.1f ms vs %.1f ms", tightQueue/1e6, ampleQueue/1e6)
	}
}

// TestPDPropertyEveryRequestTerminal: random clusters, workloads and
// policies never panic, end every request exactly once and keep the
// invariants (checked after every event).
func TestPDPropertyEveryRequestTerminal(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		policy := PolicyName(rapid.IntRange(0, 4).Draw(rt, "policy"))
		ps := pdSetup{
			prefill: rapid.IntRange(1, 3).Draw(rt, "p"),
			decode:  rapid.IntRange(1, 3).Draw(rt, "d"),
			pBlocks: rapid.IntRange(60, 400).Draw(rt, "pBlocks"),
			dBlocks: rapid.IntRange(60, 400).Draw(rt, "dBlocks"),
			seqs:    rapid.IntRange(1, 16).Draw(rt, "seqs"),
			budget:  rapid.IntRange(16, 512).Draw(rt, "budget"),
			cfg: PDConfig{
				Policy:              policy,
				Placement:           Placement(rapid.IntRange(0, 3).Draw(rt, "placement")),
				SkipAhead:           rapid.Bool().Draw(rt, "skip"),
				Lease:               int64(rapid.IntRange(1, 5000).Draw(rt, "leaseMs")) * 1e6,
				Heartbeat:           rapid.Bool().Draw(rt, "heartbeat"),
				ExpiryFails:         rapid.Bool().Draw(rt, "expiryFails"),
				RetryAfter:          int64(rapid.IntRange(1, 2000).Draw(rt, "retryMs")) * 1e6,
				MaxPrefillQueue:     int64(rapid.IntRange(0, 2000).Draw(rt, "maxQueueMs")) * 1e6,
				MaxDecodeKVFraction: rapid.Float64Range(0, 2).Draw(rt, "kvFrac"),
				PushSpill:           rapid.Bool().Draw(rt, "spill"),
				HostBandwidth:       1e9,
				LocalPrefillBelow:   rapid.SampledFrom([]int{0, 0, 200}).Draw(rt, "localBelow"),
				MaxReprefills:       rapid.SampledFrom([]int{0, 1, DefaultMaxReprefills}).Draw(rt, "maxReprefills"),
			},
			bw:         rapid.SampledFrom([]float64{math.Inf(1), 1e9, 20e9}).Draw(rt, "bw"),
			latency:    int64(rapid.IntRange(0, 50_000).Draw(rt, "lat")),
			kvPerToken: 2048,
			pred:       linear{base: 1e6, perTok: 5000, perKV: 10},
		}
		n := rapid.IntRange(1, 40).Draw(rt, "n")
		var reqs []workload.Request
		at := int64(0)
		for i := 0; i < n; i++ {
			at += int64(rapid.IntRange(0, 200).Draw(rt, "gapMs")) * 1e6
			reqs = append(reqs, workload.Request{ID: int64(i), Arrival: at,
				InputTokens: rapid.IntRange(1, 3000).Draw(rt, "in"), OutputTokens: rapid.IntRange(1, 300).Draw(rt, "out")})
		}
		sim, got := ps.build(rt, reqs)
		_, err := sim.Run()
		if policy == Eager && sim.Stopped() != nil {
			return // the legacy policy may stop; it must do so with a report
		}
		if err != nil {
			rt.Fatal(err)
		}
		if got.dup != 0 || len(got.recs) != n {
			rt.Fatalf("%d terminal records (%d duplicates) for %d requests", len(got.recs), got.dup, n)
		}
		for _, e := range sim.Engines() {
			if e.PinnedBlocks() != 0 || e.Pool().Used() != 0 || e.HandoffQueue() != 0 {
				rt.Fatalf("instance left with %d pinned, %d used blocks, %d queued", e.PinnedBlocks(), e.Pool().Used(), e.HandoffQueue())
			}
			if err := e.Pool().Check(); err != nil {
				rt.Fatal(err)
			}
		}
		for _, r := range got.recs {
			if r.Outcome == metrics.Finished && r.Generated != r.OutputTokens {
				rt.Fatalf("request %d finished with %d of %d tokens", r.ID, r.Generated, r.OutputTokens)
			}
			if policy == Pull && !ps.cfg.ExpiryFails && r.Outcome == metrics.Failed && !strings.HasPrefix(r.Reason, "unfit") && !strings.HasPrefix(r.Reason, "re-prefill limit") {
				rt.Fatalf("pull without on_expiry fail failed request %d: %s", r.ID, r.Reason)
			}
			if r.Reprefills > ps.cfg.MaxReprefills {
				rt.Fatalf("request %d re-prefilled %d times, limit %d", r.ID, r.Reprefills, ps.cfg.MaxReprefills)
			}
			if err := checkTimestamps(&r); err != nil {
				rt.Fatal(err)
			}
		}
	})
}

// TestConditionalDisaggregation: prompts shorter than local_prefill_below
// are prefilled on the decode instance, with no handoff; longer ones are
// handed off.
func TestConditionalDisaggregation(t *testing.T) {
	reqs := []workload.Request{
		{ID: 0, Arrival: 0, InputTokens: 100, OutputTokens: 5},
		{ID: 1, Arrival: 1e9, InputTokens: 2000, OutputTokens: 5},
		{ID: 2, Arrival: 2e9, InputTokens: 499, OutputTokens: 5},
	}
	ps := pdSetup{prefill: 1, decode: 1, pBlocks: 1000, dBlocks: 1000, seqs: 8, budget: 2048,
		cfg: PDConfig{Policy: Pull, Heartbeat: true, Lease: 30e9, LocalPrefillBelow: 500}, bw: 10e9, kvPerToken: 1024, pred: linear{base: 1e6}}
	sim, got := ps.build(t, reqs)
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id    int64
		local bool
	}{{0, true}, {1, false}, {2, true}} {
		r := got.recs[tc.id]
		local := r.PrefillInstance == 1 && r.DecodeInstance == 1 && r.TransferStart < 0
		if local != tc.local || r.Outcome != metrics.Finished {
			t.Errorf("request %d: prefill on %d, decode on %d, transfer at %d; want local=%v", tc.id, r.PrefillInstance, r.DecodeInstance, r.TransferStart, tc.local)
		}
	}
}

// TestRouters: each router's choice for a given cluster state.
func TestRouters(t *testing.T) {
	ids := make([]int32, 64)
	for i := range ids {
		ids[i] = int32(i)
	}
	var engines []*engine.Engine
	for i := 0; i < 3; i++ {
		e, err := engine.New(i, engine.Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 512, BlockSize: 16, NumBlocks: 100 + 50*i, PrefixCaching: true, ChunkedPrefill: true}, linear{base: 1})
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, e)
	}
	sim, err := New(Config{Engines: engines, Source: &sliceSrc{}})
	if err != nil {
		t.Fatal(err)
	}
	// Instance 0 caches the prompt's prefix; instance 1 has a queue.
	warm := workload.Request{ID: 1, InputTokens: 64, OutputTokens: 1, InputIDs: ids}
	engines[0].Add(&warm, 0)
	for engines[0].HasWork() {
		st, _, err := engines[0].Begin(0)
		if err == nil {
			_, err = engines[0].FinishBatch(st.ID, st.End)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := engines[0].Begin(0); err != nil { // release the finished request's slot
		t.Fatal(err)
	}
	for k := 0; k < 3; k++ {
		engines[1].Add(&workload.Request{ID: int64(10 + k), InputTokens: 10, OutputTokens: 5}, 0)
	}
	req := &workload.Request{ID: 2, InputTokens: 64, OutputTokens: 4, InputIDs: ids}
	c := []int{0, 1, 2}
	for _, tc := range []struct {
		name   string
		router Router
		want   int
	}{
		{"least-loaded picks an idle instance (lowest index)", LeastLoaded{}, 0},
		{"least-kv picks the most free blocks", LeastKV{}, 2},
		{"prefix-affinity picks the cached prefix", PrefixAffinity{}, 0},
	} {
		if got := tc.router.Route(req, c, view{sim}); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
	rr := &RoundRobin{}
	if a, b, d := rr.Route(req, c, view{sim}), rr.Route(req, c, view{sim}), rr.Route(req, c, view{sim}); a != 0 || b != 1 || d != 2 {
		t.Errorf("round-robin: %d %d %d", a, b, d)
	}
	p2 := PowerOfTwo{Rand: rand.New(rand.NewPCG(1, 2))}
	for k := 0; k < 20; k++ {
		if got := p2.Route(req, c, view{sim}); got == 1 {
			t.Fatal("power-of-two never picks the loaded instance 1 over an idle one")
		}
	}
}

// checkTimestamps verifies the order of a terminal record's timestamps:
// arrival <= queued <= scheduled <= prefill end <= first token <= last
// token, each where it is set (-1: never reached); the decode reservation
// (before the prefill under reserve) lies between arrival and first token.
func checkTimestamps(r *metrics.Record) error {
	seq := []struct {
		name string
		t    int64
	}{{"arrival", r.Arrival}, {"queued", r.Queued}, {"scheduled", r.Scheduled}, {"prefill_end", r.PrefillEnd},
		{"first_token", r.FirstToken}, {"last_token", r.LastToken}}
	prev, prevName := int64(-1), ""
	for _, x := range seq {
		if x.t < 0 {
			continue
		}
		if x.t < prev {
			return fmt.Errorf("request %d (%s): %s %d ns before %s %d ns", r.ID, r.Outcome, x.name, x.t, prevName, prev)
		}
		prev, prevName = x.t, x.name
	}
	if r.Reserved >= 0 && (r.Reserved < r.Arrival || (r.FirstToken >= 0 && r.FirstToken < r.Reserved)) {
		return fmt.Errorf("request %d: reserved at %d ns outside [arrival %d, first token %d]", r.ID, r.Reserved, r.Arrival, r.FirstToken)
	}
	if r.TransferStart >= 0 && r.TransferEnd >= 0 && r.TransferEnd < r.TransferStart {
		return fmt.Errorf("request %d: transfer end %d ns before its start %d ns", r.ID, r.TransferEnd, r.TransferStart)
	}
	return nil
}

// TestHybridPushBufferHoldsTheWindow: under the push policy a hybrid
// model's KV arrives as its 100 full-attention blocks and the sliding
// group's last 9: 109 blocks, which a receive buffer of 105 cannot take
// (overflow drop), while 109 can.
func TestHybridPushBufferHoldsTheWindow(t *testing.T) {
	for _, c := range []struct {
		buf  int
		want metrics.Outcome
	}{{105, metrics.Failed}, {109, metrics.Finished}} {
		reqs := []workload.Request{{ID: 0, InputTokens: 1600, OutputTokens: 4}}
		ps := pdSetup{prefill: 1, decode: 1, pBlocks: 1000, dBlocks: 1000, seqs: 8, budget: 2048,
			cfg: PDConfig{Policy: Push, PushBufferBlocks: []int{0, c.buf}}, bw: 1e9, latency: 20_000, kvPerToken: 4096, pred: linear{base: 1e6},
			local: engine.LocalKV{Groups: 1, Window: 128}, localKV: 2048}
		sim, got := ps.build(t, reqs)
		if _, err := sim.Run(); err != nil {
			t.Fatal(err)
		}
		if r := got.recs[0]; r.Outcome != c.want {
			t.Errorf("buffer of %d blocks: outcome %v (%s), want %v", c.buf, r.Outcome, r.Reason, c.want)
		}
	}
}
