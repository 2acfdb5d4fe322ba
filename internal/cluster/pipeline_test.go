package cluster

import (
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/workload"
)

type constStep int64

func (c constStep) StepTime(*perf.Batch) int64 { return int64(c) }

// stepLog records every finished step.
type stepLog struct{ starts, ends []int64 }

func (l *stepLog) Advance(int64) {}
func (l *stepLog) StepDone(_ int, r *engine.StepResult) {
	l.starts = append(l.starts, r.Start)
	l.ends = append(l.ends, r.End)
}
func (l *stepLog) Terminal(*metrics.Record) {}

// TestPipelineEventLoop: with pp=2, a constant step S = 1000 and a 100 ns
// stage-to-stage send, the event loop keeps two batches in flight on a
// steady decode load: each ends 2*(S/2)+100 = 1100 after it starts and the
// next starts S/2+100 = 600 after the previous one.
func TestPipelineEventLoop(t *testing.T) {
	e, err := engine.New(0, engine.Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 2, BlockSize: 16, NumBlocks: 64,
		ChunkedPrefill: true, CheckInvariants: true, PipelineParallel: 2, PPSend: engine.PPSend{LatencyNs: 100}}, constStep(1000))
	if err != nil {
		t.Fatal(err)
	}
	var reqs []workload.Request
	for i := 1; i <= 4; i++ {
		reqs = append(reqs, workload.Request{ID: int64(i), InputTokens: 1, OutputTokens: 6})
	}
	log := &stepLog{}
	sim, err := New(Config{Engines: []*engine.Engine{e}, Source: &sliceSrc{reqs: reqs}, Observer: log})
	if err != nil {
		t.Fatal(err)
	}
	end, err := sim.Run()
	if err != nil {
		t.Fatal(err)
	}
	// The first arrival starts batch 1 alone at t=0 (the others arrive
	// next, at the same time, with the first stage busy); then requests
	// {2,3} and {1,4} alternate two per batch, and request 4's last token
	// runs alone: 1 + 22/2 + 1 = 13 batches.
	if len(log.starts) != 13 {
		t.Fatalf("%d batches, want 13: starts %v ends %v", len(log.starts), log.starts, log.ends)
	}
	for i := range log.starts {
		if log.starts[i] != int64(600*i) || log.ends[i]-log.starts[i] != 1100 {
			t.Fatalf("batch %d ran [%d, %d], want [%d, %d]", i+1, log.starts[i], log.ends[i], 600*i, 600*i+1100)
		}
	}
	if end != 600*12+1100 {
		t.Fatalf("run ended at %d, want %d", end, 600*12+1100)
	}
}
