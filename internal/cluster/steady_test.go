package cluster

import (
	"fmt"
	"slices"
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// callLog writes down every observer call in order, with what it saw.
type callLog struct {
	calls []string
	sim   *Sim
	last  int64 // the latest Advance
}

func (l *callLog) Advance(now int64) {
	l.last = now
	// What a sampler would read at this moment: every instance's state.
	st := fmt.Sprintf("advance %d", now)
	for i := range l.sim.Engines() {
		s := l.sim.State(i)
		st += fmt.Sprintf(" [%d %d %d]", s.Running, s.Waiting, s.KVUsed)
	}
	l.calls = append(l.calls, st)
}

func (l *callLog) StepDone(inst int, r *engine.StepResult) {
	l.calls = append(l.calls, fmt.Sprintf("step %d %d-%d gen %d prompt %d itl %v batch %+v", inst, r.Start, r.End, r.GenTokens, r.PromptTokens, r.ITL, *r.Batch))
}

func (l *callLog) Terminal(r *metrics.Record) {
	l.calls = append(l.calls, fmt.Sprintf("end %+v", *r))
}

// TestSteadyRunsMatchQueue runs random colocated clusters twice, with the
// steady runs on and off (Config.NoSteadyRuns), and requires the same
// observer calls in the same order, each seeing the same instance states,
// the same event count and the same end, no event processed beyond the
// time RunUntil was asked to reach. Step times and arrivals on a
// coarse grid make events tie with steady batches' ends (the queued event
// must come first); the run is advanced in random slices (RunUntil's
// bound) and sometimes stopped by an event budget.
func TestSteadyRunsMatchQueue(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := engine.Config{
			MaxNumSeqs:          rapid.IntRange(1, 16).Draw(rt, "seqs"),
			MaxNumBatchedTokens: rapid.IntRange(16, 256).Draw(rt, "budget"),
			BlockSize:           rapid.SampledFrom([]int{1, 4, 16}).Draw(rt, "bs"),
			NumBlocks:           rapid.IntRange(64, 400).Draw(rt, "blocks"),
			ChunkedPrefill:      true,
			PrefixCaching:       rapid.Bool().Draw(rt, "caching"),
			AsyncScheduling:     rapid.Bool().Draw(rt, "async"),
			CheckInvariants:     true,
		}
		instances := rapid.IntRange(1, 3).Draw(rt, "instances")
		grid := int64(rapid.SampledFrom([]int{1000, 3000}).Draw(rt, "grid"))
		pred := linear{base: grid, perTok: int64(rapid.IntRange(0, 1).Draw(rt, "perTok")) * grid}
		n := rapid.IntRange(1, 40).Draw(rt, "requests")
		reqs := make([]workload.Request, n)
		at := int64(0)
		for i := range reqs {
			at += grid * int64(rapid.IntRange(0, 40).Draw(rt, "gap"))
			reqs[i] = workload.Request{ID: int64(i), Arrival: at,
				InputTokens: rapid.IntRange(1, 40).Draw(rt, "in"), OutputTokens: rapid.IntRange(1, 60).Draw(rt, "out")}
		}
		maxEvents := int64(0)
		if rapid.IntRange(0, 3).Draw(rt, "limited") == 0 {
			maxEvents = int64(rapid.IntRange(1, 300).Draw(rt, "maxEvents"))
		}
		slice := grid * int64(rapid.IntRange(1, 50).Draw(rt, "slice"))
		run := func(noSteady bool) ([]string, [2]int64) {
			engines := make([]*engine.Engine, instances)
			for i := range engines {
				e, err := engine.New(i, cfg, pred)
				if err != nil {
					rt.Fatal(err)
				}
				engines[i] = e
			}
			log := &callLog{}
			sim, err := New(Config{Engines: engines, Source: &sliceSrc{reqs: slices.Clone(reqs)}, Observer: log,
				Limits: Limits{MaxEvents: maxEvents}, NoSteadyRuns: noSteady, CheckInvariants: true})
			if err != nil {
				rt.Fatal(err)
			}
			log.sim = sim
			if err := sim.Pull(); err != nil {
				rt.Fatal(err)
			}
			for t := slice; ; t += slice {
				done, err := sim.RunUntil(t)
				if err != nil {
					rt.Fatal(err)
				}
				if log.last > t || sim.lastEvent > t {
					rt.Fatalf("RunUntil(%d) processed an event at %d (observed %d)", t, sim.lastEvent, log.last)
				}
				next, ok := sim.q.Peek()
				if done || !ok {
					break
				}
				if next.At > t+slice {
					t = next.At / slice * slice // skip idle time
				}
			}
			if err := sim.Finish(); err != nil {
				rt.Fatal(err)
			}
			return log.calls, [2]int64{sim.events, sim.lastEvent}
		}
		on, evOn := run(false)
		off, evOff := run(true)
		if evOn != evOff {
			rt.Fatalf("events and last event time %v with steady runs, %v without", evOn, evOff)
		}
		for i := range min(len(on), len(off)) {
			if on[i] != off[i] {
				rt.Fatalf("call %d with steady runs:\n%s\nwithout:\n%s", i, on[i], off[i])
			}
		}
		if len(on) != len(off) {
			rt.Fatalf("%d observer calls with steady runs, %d without", len(on), len(off))
		}
	})
}
