package cluster

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/link"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// TestHandoffScenarios runs the scenario files in testdata/handoff:
// readable traces of P/D handoffs, regenerated with -rewrite. Steps cost
// 1 ms plus 1 us per token (so a 1,000-token prefill step takes 2 ms); KV
// is 1,000 bytes per token; links are 1 GB/s with no latency unless set.
// Times print in microseconds. Every event runs the full invariant check.
//
//	cluster [policy=pull|reserve|reject|push|eager] [placement=NAME] [lease=US] [heartbeat=off]
//	        [expiry=fail] [retry=US] [skip] [local=N] [reprefills=N] [spill] [hostbw=B/s]
//	        [bw=B/s|inf] [lat=US] [headroom=N] [reject-kv=F] [reject-queue=US] [prefill-rate=TOK/s]
//	<role> blocks=N [seqs=N] [budget=N] [buf=N] [maxlen=N]   one line per instance
//	request id=N in=N out=N [at=US] [shared=N]    queue a request (shared: first N prompt tokens common)
//	run [trace]                                    run to the end; print outcomes (and transitions)
func TestHandoffScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/handoff", func(t *testing.T, path string) {
		var sc *ddScenario
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, ok := handoffCmd(t, d, &sc)
			if !ok {
				t.Fatalf("unknown command %q", d.Cmd)
			}
			return out
		})
	})
}

// handoffCmd runs a command of the handoff harness on *sc (cluster
// replaces it) and reports whether it is one: the commands of
// TestHandoffScenarios, and
//
//	requests from=ID n=N in=N out=N at=US [every=US]   n requests, ids from..from+n-1
func handoffCmd(t *testing.T, d *datadriven.TestData, sc **ddScenario) (string, bool) {
	switch d.Cmd {
	case "cluster":
		var err error
		if *sc, err = newDDScenario(d); err != nil {
			return "error: " + err.Error(), true
		}
		return "ok", true
	case "request":
		id, in, out, at := ddRequestArgs(t, d)
		shared := 0
		if d.HasArg("shared") {
			d.ScanArgs(t, "shared", &shared)
		}
		r := workload.Request{ID: int64(id), Arrival: at * 1000, InputTokens: in, OutputTokens: out}
		if shared > 0 {
			r.InputIDs = make([]int32, in)
			for i := range r.InputIDs {
				r.InputIDs[i] = int32(1_000_000*id + i)
				if i < shared {
					r.InputIDs[i] = int32(i)
				}
			}
		}
		(*sc).reqs = append((*sc).reqs, r)
		return fmt.Sprintf("%d requests", len((*sc).reqs)), true
	case "requests":
		var from, n, in, out int
		var at, every int64
		d.ScanArgs(t, "from", &from)
		d.ScanArgs(t, "n", &n)
		d.ScanArgs(t, "in", &in)
		d.ScanArgs(t, "out", &out)
		d.ScanArgs(t, "at", &at)
		if d.HasArg("every") {
			d.ScanArgs(t, "every", &every)
		}
		for i := 0; i < n; i++ {
			(*sc).reqs = append((*sc).reqs, workload.Request{ID: int64(from + i), Arrival: (at + int64(i)*every) * 1000, InputTokens: in, OutputTokens: out})
		}
		return fmt.Sprintf("%d requests", len((*sc).reqs)), true
	case "run":
		return strings.TrimRight((*sc).run(t, d.HasArg("trace")), "\n") + "\n", true
	}
	return "", false
}

// ddRequestArgs reads a request command's id, in, out and at (0 when
// absent).
func ddRequestArgs(t *testing.T, d *datadriven.TestData) (id, in, out int, at int64) {
	d.ScanArgs(t, "id", &id)
	d.ScanArgs(t, "in", &in)
	d.ScanArgs(t, "out", &out)
	if d.HasArg("at") {
		d.ScanArgs(t, "at", &at)
	}
	return id, in, out, at
}

type ddInstance struct {
	role                              engine.Role
	blocks, seqs, budget, buf, maxLen int
}

type ddScenario struct {
	cfg         PDConfig
	bw          float64
	lat         int64
	headroom    int
	prefillRate float64
	insts       []ddInstance
	reqs        []workload.Request
	faults      *FaultConfig // fault_dd_test.go; nil: none
	router      Router       // nil: round-robin
}

func newDDScenario(d *datadriven.TestData) (*ddScenario, error) {
	sc := &ddScenario{bw: 1e9, prefillRate: 1e6,
		cfg: PDConfig{Heartbeat: true, Lease: 30e9, RetryAfter: 1e9, MaxReprefills: DefaultMaxReprefills, HostBandwidth: 1e9}}
	for _, a := range d.CmdArgs {
		v := ""
		if len(a.Vals) > 0 {
			v = a.Vals[0]
		}
		num := func() float64 { f, _ := strconv.ParseFloat(v, 64); return f }
		var err error
		switch a.Key {
		case "policy":
			sc.cfg.Policy, err = parsePolicy(v)
		case "placement":
			sc.cfg.Placement, err = parsePlacement(v)
		case "lease":
			sc.cfg.Lease = int64(num() * 1000)
		case "heartbeat":
			sc.cfg.Heartbeat = v != "off"
		case "expiry":
			sc.cfg.ExpiryFails = v == "fail"
		case "retry":
			sc.cfg.RetryAfter = int64(num() * 1000)
		case "skip":
			sc.cfg.SkipAhead = true
		case "local":
			sc.cfg.LocalPrefillBelow = int(num())
		case "reprefills":
			sc.cfg.MaxReprefills = int(num())
		case "spill":
			sc.cfg.PushSpill = true
		case "hostbw":
			sc.cfg.HostBandwidth = num()
		case "bw":
			sc.bw = num()
			if v == "inf" {
				sc.bw = math.Inf(1)
			}
		case "lat":
			sc.lat = int64(num() * 1000)
		case "headroom":
			sc.headroom = int(num())
		case "reject-kv":
			sc.cfg.MaxDecodeKVFraction = num()
		case "reject-queue":
			sc.cfg.MaxPrefillQueue = int64(num() * 1000)
		case "prefill-rate":
			sc.prefillRate = num()
		default:
			return nil, fmt.Errorf("unknown cluster argument %q", a.Key)
		}
		if err != nil {
			return nil, err
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		in := ddInstance{seqs: 16, budget: 2048}
		switch f[0] {
		case "prefill":
			in.role = engine.Prefill
		case "decode":
			in.role = engine.Decode
		case "mixed":
			in.role = engine.Mixed
		default:
			return nil, fmt.Errorf("unknown role %q", f[0])
		}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("instance argument %q: %v", kv, err)
			}
			switch k {
			case "blocks":
				in.blocks = n
			case "seqs":
				in.seqs = n
			case "budget":
				in.budget = n
			case "buf":
				in.buf = n
			case "maxlen":
				in.maxLen = n
			default:
				return nil, fmt.Errorf("unknown instance argument %q", k)
			}
		}
		sc.insts = append(sc.insts, in)
	}
	return sc, nil
}

func (sc *ddScenario) build() (*Sim, *collect, error) {
	var engines []*engine.Engine
	for i, in := range sc.insts {
		cfg := engine.Config{MaxNumSeqs: in.seqs, MaxNumBatchedTokens: in.budget, BlockSize: 16, NumBlocks: in.blocks,
			MaxModelLen: in.maxLen, ChunkedPrefill: true, PrefixCaching: true, AsyncScheduling: true, Role: in.role, CheckInvariants: true}
		if in.role == engine.Decode {
			cfg.ReservedDecodeTokens = sc.headroom
		}
		e, err := engine.New(i, cfg, linear{base: 1e6, perTok: 1000})
		if err != nil {
			return nil, nil, err
		}
		engines = append(engines, e)
	}
	c := &collect{recs: map[int64]metrics.Record{}}
	net := link.New()
	nodes := make([]Node, len(engines))
	cfg := sc.cfg
	if cfg.Policy == Push {
		cfg.PushBufferBlocks = make([]int, len(engines))
	}
	for i := range nodes {
		nodes[i] = Node{Endpoints: []link.EndpointID{must(net.AddEndpoint(sc.bw, sc.lat))}, KVBytesPerToken: 1000, Layers: 32, PrefillTokensPerSec: sc.prefillRate}
		if cfg.Policy == Push {
			cfg.PushBufferBlocks[i] = sc.insts[i].buf
		}
	}
	sim, err := New(Config{Engines: engines, Source: &sliceSrc{reqs: sc.reqs}, Router: sc.router, Observer: c, CheckInvariants: true,
		PD: &PDSetup{Config: cfg, Nodes: nodes, Net: net}, Faults: sc.faults})
	return sim, c, err
}

func (sc *ddScenario) run(t *testing.T, trace bool) string {
	sim, c, err := sc.build()
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	if trace {
		sim.pd.onTransition = func(h *hand, from hstate, now int64) {
			fmt.Fprintf(&b, "t=%d request %d: %s -> %s", now/1000, h.id, from, h.st)
			if h.d >= 0 && h.st != hDone {
				fmt.Fprintf(&b, " (decode %d)", h.d)
			}
			b.WriteString("\n")
		}
	}
	end, err := sim.Run()
	if err != nil {
		fmt.Fprintf(&b, "run error: %v\n", err)
	}
	counts := map[metrics.Outcome]int{}
	ids := make([]int64, 0, len(c.recs))
	for id, r := range c.recs {
		counts[r.Outcome]++
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	fmt.Fprintf(&b, "end t=%d: %d requests: finished %d, rejected %d, failed %d\n", end/1000, len(c.recs),
		counts[metrics.Finished], counts[metrics.Rejected], counts[metrics.Failed])
	us := func(x int64) string {
		if x < 0 {
			return "-"
		}
		return strconv.FormatInt(x/1000, 10)
	}
	for _, id := range ids {
		r := c.recs[id]
		fmt.Fprintf(&b, "request %d %s p=%d d=%d queued=%s sched=%s prefill_end=%s first=%s last=%s reprefills=%d retries=%d preempted=%d",
			id, r.Outcome, r.PrefillInstance, r.DecodeInstance, us(r.Queued), us(r.Scheduled), us(r.PrefillEnd),
			us(r.FirstToken), us(r.LastToken), r.Reprefills, r.Retries, r.Preemptions)
		if r.Reason != "" {
			fmt.Fprintf(&b, " reason=%q", r.Reason)
		}
		b.WriteString("\n")
		if err := checkTimestamps(&r); err != nil {
			t.Errorf("%v", err)
		}
	}
	if sim.Stopped() != nil {
		return b.String() // the eager policy stopped the run, with its report
	}
	if st := sim.FaultStats(end); st != nil {
		fmt.Fprintf(&b, "faults: losses %d restarts %d retried %d replaced %d kv-lost %d load-failures %d recomputed %d\n",
			st.Losses, st.Restarts, st.Retried, st.Replaced, st.KVLost, st.LoadFailures, st.LoadRecomputed)
		for _, e := range st.Events {
			fmt.Fprintf(&b, "  t=%d %s %s\n", e.At/1000, e.Unit, e.Kind)
		}
		if st.ScaleUps+st.ScaleDowns > 0 {
			fmt.Fprintf(&b, "scale-ups %d scale-downs %d\n", st.ScaleUps, st.ScaleDowns)
		}
		fmt.Fprintf(&b, "gpu-us %.0f\n", st.GPUHours*3600e6)
	}
	if c.dup != 0 || len(c.recs) != len(sc.reqs) {
		t.Errorf("%d terminal records (%d duplicates) for %d requests", len(c.recs), c.dup, len(sc.reqs))
	}
	if err == nil {
		for i, e := range sim.Engines() {
			if e.PinnedBlocks() != 0 || e.Pool().Used() != 0 || e.HandoffQueue() != 0 || e.Reserved() != 0 {
				t.Errorf("instance %d left with %d pinned, %d used blocks, %d queued, %d reserved", i, e.PinnedBlocks(), e.Pool().Used(), e.HandoffQueue(), e.Reserved())
			}
		}
	}
	return b.String()
}

// parsePolicy returns the policy of a name in a testdata file (a
// simulation gets its policy from config through assemble).
func parsePolicy(s string) (PolicyName, error) {
	for i, n := range Policies {
		if n == s {
			return PolicyName(i), nil
		}
	}
	return 0, fmt.Errorf("unknown handoff policy %q (valid: pull, reserve, reject, push, eager)", s)
}

// parsePlacement returns the placement of a name in a testdata file.
func parsePlacement(s string) (Placement, error) {
	for i, n := range Placements {
		if n == s {
			return Placement(i), nil
		}
	}
	return 0, fmt.Errorf("unknown decode placement %q (valid: round-robin, least-loaded, most-free-kv, retry)", s)
}
