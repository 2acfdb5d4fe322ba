package cluster

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/kv"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// corrupter drops one reference of a block in use on instance inst after
// that instance's first step (a block of an anonymous tail when there is
// one), so the engine's next invariant check or release fails.
type corrupter struct {
	collect
	es   []*engine.Engine
	inst int
	done bool
}

func (c *corrupter) StepDone(inst int, r *engine.StepResult) {
	c.collect.StepDone(inst, r)
	if c.done || inst != c.inst {
		return
	}
	p := c.es[inst].Pool()
	if p.TailBlocks() > 0 {
		if err := p.ReleaseTail(0, 1); err != nil {
			panic(err)
		}
		c.done = true
		return
	}
	for b := 0; b < p.Capacity(); b++ {
		if p.Refs(kv.BlockID(b)) > 0 {
			if err := p.Release([]kv.BlockID{kv.BlockID(b)}); err != nil {
				panic(err)
			}
			c.done = true
			return
		}
	}
}

// TestRunStopsOnEngineFailure: an invariant violation on any instance
// (here the second of three) ends the run with that instance's error,
// returned by the engine call that found it.
func TestRunStopsOnEngineFailure(t *testing.T) {
	for _, checks := range []bool{true, false} {
		var es []*engine.Engine
		for i := 0; i < 3; i++ {
			e, err := engine.New(i, engine.Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 512, BlockSize: 16, NumBlocks: 40,
				ChunkedPrefill: true, PrefixCaching: true, CheckInvariants: checks}, linear{base: 1e6})
			if err != nil {
				t.Fatal(err)
			}
			es = append(es, e)
		}
		var entries []workload.Entry
		for i := 0; i < 9; i++ {
			entries = append(entries, workload.Entry{Requests: []workload.Request{
				{ID: int64(i), Arrival: int64(i) * 1e5, InputTokens: 40, OutputTokens: 5}}})
		}
		c := &corrupter{collect: collect{recs: map[int64]metrics.Record{}}, es: es, inst: 1}
		sim, err := New(Config{Engines: es, Source: &entrySrc{es: entries}, Observer: c})
		if err != nil {
			t.Fatal(err)
		}
		_, err = sim.Run()
		if err == nil || !strings.Contains(err.Error(), "instance 1: invariant violated") {
			t.Fatalf("checks %v: Run error %v, want instance 1's invariant violation", checks, err)
		}
		for _, i := range []int{0, 2} {
			if err := es[i].CheckNow(sim.Now()); err != nil {
				t.Fatalf("checks %v: healthy instance %d reports %v", checks, i, err)
			}
		}
	}
}
