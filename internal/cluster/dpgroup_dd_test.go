package cluster

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// TestDPGroupScenarios runs the scenario files in testdata/dpgroup:
// readable traces of a lockstep data-parallel group, regenerated with
// -rewrite. A rank's step costs 1000 ns + 100 ns per token it runs (its
// padded count under a CUDA graph) + the group's MoE time, 10 ns per
// gathered token; graphs are captured for 1, 2, 4, 8 and 16 tokens. Times
// print in ns.
//
//	group ranks=N [seqs=N] [budget=N] [router] [slow=RANK,FACTOR,FROM,TO] [dbo=DECODE,PREFILL]
//	                                             a group of N ranks (router: round-robin addresses ranks;
//	                                             slow: a straggler window on a rank, times in ns;
//	                                             dbo: dual-batch overlap from these tokens a rank, a
//	                                             micro-batched step taking half its time)
//	request id=N in=N out=N [at=NS]              queue a request
//	run                                          run to the end; print every group step and the outcomes
func TestDPGroupScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/dpgroup", func(t *testing.T, path string) {
		var ranks, seqs, budget int
		var balance bool
		var reqs []workload.Request
		var slow []StragglerWindow
		var dbo [2]int
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "group":
				d.ScanArgs(t, "ranks", &ranks)
				seqs, budget = 16, 64
				if d.HasArg("seqs") {
					d.ScanArgs(t, "seqs", &seqs)
				}
				if d.HasArg("budget") {
					d.ScanArgs(t, "budget", &budget)
				}
				balance = !d.HasArg("router")
				reqs, slow, dbo = nil, nil, [2]int{}
				if d.HasArg("dbo") {
					d.ScanArgs(t, "dbo", &dbo[0], &dbo[1])
				}
				if d.HasArg("slow") {
					var rank, from, to int
					var factor float64
					d.ScanArgs(t, "slow", &rank, &factor, &from, &to)
					slow = append(slow, StragglerWindow{Engine: rank, Factor: factor, Start: int64(from), End: int64(to)})
				}
				return "ok"
			case "request":
				id, in, out, at := ddRequestArgs(t, d)
				reqs = append(reqs, workload.Request{ID: int64(id), Arrival: at, InputTokens: in, OutputTokens: out})
				return fmt.Sprintf("%d requests", len(reqs))
			case "run":
				return runDPGroup(t, ranks, seqs, budget, balance, reqs, slow, dbo)
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

// halving is the test's dual-batch overlap: a micro-batched step takes
// half its time.
type halving struct{}

func (halving) HalfMoENs(int) int64                     { return 0 }
func (halving) Overlapped(stepNs, _ int64, _ int) int64 { return stepNs / 2 }

// stepTrace prints every group step once, at the end of its first rank.
type stepTrace struct {
	collect
	sim  *Sim
	last int64
	out  strings.Builder
}

func (l *stepTrace) StepDone(inst int, r *engine.StepResult) {
	l.collect.StepDone(inst, r)
	st, n := l.sim.LastGroupStep(0)
	if n == l.last {
		return
	}
	l.last = n
	var ranks []string
	for i := range st.Tokens {
		if st.Dummy[i] {
			ranks = append(ranks, "dummy")
		} else {
			ranks = append(ranks, fmt.Sprint(st.Tokens[i]))
		}
	}
	pad := "eager"
	if st.PadTo > 0 {
		pad = fmt.Sprintf("pad %d", st.PadTo)
	}
	if st.Micro {
		pad += " micro-batched"
	}
	fmt.Fprintf(&l.out, "step %d-%d: tokens [%s] %s gathered %d moe %d rank-ns %v\n",
		st.Start, st.End, strings.Join(ranks, " "), pad, st.Gathered, st.MoENs, st.RankNs)
}

func runDPGroup(t *testing.T, ranks, seqs, budget int, balance bool, reqs []workload.Request, slow []StragglerWindow, dbo [2]int) string {
	pred := padPred{base: 1000, perTok: 100}
	var engines []*engine.Engine
	for i := 0; i < ranks; i++ {
		e, err := engine.New(i, engine.Config{MaxNumSeqs: seqs, MaxNumBatchedTokens: budget, BlockSize: 16, NumBlocks: 400,
			ChunkedPrefill: true, CheckInvariants: true}, pred)
		if err != nil {
			return "error: " + err.Error()
		}
		engines = append(engines, e)
	}
	log := &stepTrace{collect: collect{recs: map[int64]metrics.Record{}}}
	rs := make([]int, ranks)
	for i := range rs {
		rs[i] = i
	}
	var faults *FaultConfig
	if slow != nil {
		faults = &FaultConfig{Stragglers: slow}
	}
	group := DPGroup{Ranks: rs, Pred: pred, MoE: moePerTok(10), Graph: testGraph, Balance: balance}
	if dbo != [2]int{} {
		group.DBODecodeTokens, group.DBOPrefillTokens = dbo[0], dbo[1]
		group.Overlap = halving{}
	}
	sim, err := New(Config{Engines: engines, Source: &sliceSrc{reqs: append([]workload.Request(nil), reqs...)}, Router: &RoundRobin{}, Observer: log,
		DPGroups: []DPGroup{group}, Faults: faults})
	if err != nil {
		return "error: " + err.Error()
	}
	log.sim = sim
	if _, err := sim.Run(); err != nil {
		return "error: " + err.Error()
	}
	ids := make([]int64, 0, len(log.recs))
	for id := range log.recs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		r := log.recs[id]
		fmt.Fprintf(&log.out, "request %d: %s on rank %d, first token %d, last %d\n", id, r.Outcome, r.DecodeInstance, r.FirstToken, r.LastToken)
	}
	return log.out.String()
}
