package cluster

import (
	"reflect"
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// poisonSrc is sliceSrc that also takes entries back, and overwrites what
// it is given: a Sim that kept a pointer into a released entry would see
// the poison.
type poisonSrc struct {
	sliceSrc
	released int
	bad      bool // a session entry or one of several requests came back
}

func (p *poisonSrc) Release(e workload.Entry) {
	if e.Session != "" || len(e.Requests) != 1 {
		p.bad = true
	}
	p.released++
	e.Requests[0] = workload.Request{ID: -7, InputTokens: 1 << 20, OutputTokens: 1 << 20, Arrival: -1}
}

// TestReleasedEntriesAreNotRetained: with a source that poisons every
// entry given back, colocated and P/D runs (every handoff policy) produce
// the same records as with a source that is never given anything back,
// and every plain request is released exactly once.
func TestReleasedEntriesAreNotRetained(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 60).Draw(rt, "n")
		var reqs []workload.Request
		at := int64(0)
		for i := range n {
			at += int64(rapid.IntRange(0, 30).Draw(rt, "gapMs")) * 1e6
			reqs = append(reqs, workload.Request{ID: int64(i), Arrival: at,
				InputTokens: rapid.IntRange(1, 3000).Draw(rt, "in"), OutputTokens: rapid.IntRange(1, 300).Draw(rt, "out")})
		}
		pd := rapid.Bool().Draw(rt, "pd")
		policy := PolicyName(rapid.IntRange(0, 3).Draw(rt, "policy"))
		run := func(src workload.Source) map[int64]metrics.Record {
			var sim *Sim
			var c *collect
			if pd {
				ps := pdSetup{prefill: 2, decode: 2, pBlocks: 300, dBlocks: 300, seqs: 16, budget: 512, bw: 1e9, kvPerToken: 4096,
					cfg: PDConfig{Policy: policy, Placement: LeastLoadedPlacement, MaxReprefills: 3}, pred: linear{base: 1e6, perTok: 2000, perKV: 5}}
				sim, c = ps.build(rt, nil)
				sim.src = src
				sim.rel, _ = src.(workload.Releaser)
			} else {
				var engines []*engine.Engine
				for i := range 3 {
					e, err := engine.New(i, engine.Config{MaxNumSeqs: 16, MaxNumBatchedTokens: 512, BlockSize: 16, NumBlocks: 100 + 100*i,
						ChunkedPrefill: true, PrefixCaching: true, CheckInvariants: true}, linear{base: 1e6, perTok: 2000, perKV: 5})
					if err != nil {
						rt.Fatal(err)
					}
					engines = append(engines, e)
				}
				c = &collect{recs: map[int64]metrics.Record{}}
				var err error
				if sim, err = New(Config{Engines: engines, Source: src, Router: LeastLoaded{}, Observer: c}); err != nil {
					rt.Fatal(err)
				}
			}
			if _, err := sim.Run(); err != nil {
				rt.Fatal(err)
			}
			return c.recs
		}
		want := run(&sliceSrc{reqs: reqs})
		p := &poisonSrc{sliceSrc: sliceSrc{reqs: reqs}}
		got := run(p)
		if p.bad || p.released != n {
			rt.Fatalf("%d of %d entries released (wrong kind released: %v)", p.released, n, p.bad)
		}
		if !reflect.DeepEqual(got, want) {
			rt.Fatalf("records differ when released entries are poisoned")
		}
	})
}
