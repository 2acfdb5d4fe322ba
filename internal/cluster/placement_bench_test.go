package cluster

import (
	"fmt"
	"testing"

	"github.com/servesim/servesim/internal/workload"
)

// BenchmarkPlacement measures one placement (or admission) decision with
// a backlog of queued handoffs spread over 4 decode instances. The cost
// must not grow with the backlog: the decision reads per-instance
// counters, never the handoffs.
//
//	go test ./internal/cluster -run '^$' -bench Placement -benchtime 200000x
func BenchmarkPlacement(b *testing.B) {
	for _, pl := range []Placement{RoundRobinPlacement, LeastLoadedPlacement, MostFreeKVPlacement, RetryPlacement} {
		for _, backlog := range []int{1_000, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/backlog=%d", pl, backlog), func(b *testing.B) {
				sim, h := backlogSim(b, Pull, pl, backlog)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if d := sim.placeDecode(h, -1); d < 0 {
						b.Fatal("no placement")
					}
				}
			})
		}
	}
	for _, backlog := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("reject-admission/backlog=%d", backlog), func(b *testing.B) {
			sim, h := backlogSim(b, Reject, MostFreeKVPlacement, backlog)
			adm := sim.pd.adm
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_ = adm.admission(sim, h, 0) // a reason string only when rejecting
			}
		})
	}
}

// backlogSim returns a 1-prefill, 4-decode simulation with backlog
// handoffs queued at its decode instances, and a fresh handoff to place.
func backlogSim(b *testing.B, pol PolicyName, pl Placement, backlog int) (*Sim, *hand) {
	ps := pdSetup{prefill: 1, decode: 4, pBlocks: 1000, dBlocks: 2000, seqs: 256, budget: 2048, bw: 1e9, kvPerToken: 1000,
		pred: linear{base: 1}, cfg: PDConfig{Policy: pol, Placement: pl, MaxDecodeKVFraction: 1e9}}
	sim, _ := ps.build(b, nil)
	for i := 0; i < backlog; i++ {
		h := sim.pd.newHand(&workload.Request{ID: int64(i), InputTokens: 100 + i%1000, OutputTokens: 10}, 0)
		sim.pd.hands.put(h.id, h)
		if err := sim.transition(h, hPrefilling, -1, 0); err != nil {
			b.Fatal(err)
		}
		if err := sim.transition(h, hQueued, 1+i%4, 0); err != nil {
			b.Fatal(err)
		}
	}
	h := sim.pd.newHand(&workload.Request{ID: -1, InputTokens: 500, OutputTokens: 10}, 0)
	return sim, h
}
