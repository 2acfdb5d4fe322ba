package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// pipeEvent is one thing that happened in a pipelined run.
type pipeEvent struct {
	at        int64
	start     bool  // a batch started (else one finished)
	id        int64 // batch id
	end       int64 // started batches: when they end
	free      int64 // started batches: when the next may start
	sched     []scheduled
	preempted int // started batches: requests preempted forming it
	finished  []metrics.Record
}

// pipeDrive runs e alone like the cluster does: it starts a batch whenever
// the engine takes one (at a batch end or when the first stage frees up)
// and finishes batches at their end. It stops after limit events (0: when
// idle) and calls f for each event.
func pipeDrive(e *Engine, now int64, limit int, f func(ev pipeEvent) error) (int64, error) {
	events := 0
	emit := func(ev pipeEvent) error {
		events++
		return f(ev)
	}
	for limit == 0 || events < limit {
		st, ok, err := e.Begin(now)
		if err != nil {
			return now, err
		}
		if ok {
			ev := pipeEvent{at: now, start: true, id: st.ID, end: st.End, free: st.Free,
				sched: append([]scheduled(nil), e.flights[len(e.flights)-1].sched...), preempted: int(e.preempted)}
			if err := emit(ev); err != nil {
				return now, err
			}
			continue
		}
		if len(e.flights) == 0 {
			if e.HasWork() {
				return now, fmt.Errorf("t=%d: engine has work but formed no batch", now)
			}
			return now, nil
		}
		next := e.flightEnd(e.flights[0])
		if !e.Busy() && e.NextFree() > now && e.NextFree() < next {
			next = e.NextFree()
		}
		if next < now {
			return now, fmt.Errorf("time goes back from %d to %d", now, next)
		}
		if next == now && (e.Busy() || e.NextFree() <= now) && e.flightEnd(e.flights[0]) != now {
			return now, fmt.Errorf("t=%d: stuck", now)
		}
		now = next
		for len(e.flights) > 0 && e.flightEnd(e.flights[0]) == now && (limit == 0 || events < limit) {
			id := e.flights[0].id
			r, err := e.FinishBatch(id, now)
			if err != nil {
				return now, err
			}
			if err := emit(pipeEvent{at: now, id: id, finished: appendFinished(nil, r)}); err != nil {
				return now, err
			}
		}
	}
	return now, nil
}

// describe prints a pipeline event on one line for the scenario files.
func (e *Engine) describe(ev pipeEvent) string {
	if ev.start {
		var sched []string
		for _, sc := range ev.sched {
			sched = append(sched, fmt.Sprintf("%d:%d", e.slots[sc.slot].rec.ID, sc.tokens))
		}
		line := fmt.Sprintf("t=%d start #%d [%s] end=%d free=%d", ev.at, ev.id, strings.Join(sched, " "), ev.end, ev.free)
		if ev.preempted > 0 {
			line += fmt.Sprintf(" preempted=%d", ev.preempted)
		}
		return fmt.Sprintf("%s | in flight %d\n", line, len(e.flights))
	}
	line := fmt.Sprintf("t=%d finish #%d", ev.at, ev.id)
	var done []string
	for _, f := range ev.finished {
		done = append(done, fmt.Sprintf("done %d", f.ID))
	}
	if len(done) > 0 {
		line += " -> " + strings.Join(done, ", ")
	}
	return fmt.Sprintf("%s | in flight %d running=%d waiting=%d free=%d\n", line, len(e.flights), e.Running(), e.Waiting(), e.Pool().Free())
}

// TestPipelineSteadyDecode checks the hand-computed timing of pp=2 with a
// constant step time S = 1000 ns and a send of 100 ns: four one-token
// prompts decode two per batch (budget 2), so two disjoint batches are in
// flight. Each stage takes S/2 = 500; a batch ends 2*500 + 100 = 1100 after
// it starts, and a new one starts every 500 + 100 = 600.
func TestPipelineSteadyDecode(t *testing.T) {
	cfg := Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 2, BlockSize: 16, NumBlocks: 64,
		ChunkedPrefill: true, CheckInvariants: true, PipelineParallel: 2,
		PPSend: PPSend{LatencyNs: 100}}
	e, err := New(0, cfg, fixedStep{base: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		e.Add(&workload.Request{ID: int64(i), InputTokens: 1, OutputTokens: 6}, 0)
	}
	var starts, ends []int64
	var lat []int64
	startOf := map[int64]int64{}
	members := map[int64][]int32{}
	_, err = pipeDrive(e, 0, 0, func(ev pipeEvent) error {
		if ev.start {
			starts = append(starts, ev.at)
			startOf[ev.id] = ev.at
			for _, sc := range ev.sched {
				members[ev.id] = append(members[ev.id], sc.slot)
			}
			return nil
		}
		ends = append(ends, ev.at)
		lat = append(lat, ev.at-startOf[ev.id])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// 4 requests x 6 tokens, 2 per batch: 12 batches.
	if len(starts) != 12 || len(ends) != 12 {
		t.Fatalf("%d batches started, %d ended; want 12", len(starts), len(ends))
	}
	for i, l := range lat {
		if l != 1100 {
			t.Fatalf("batch %d took %d ns, want 2*500+100 = 1100", i+1, l)
		}
	}
	for i, s := range starts {
		if want := int64(600 * i); s != want {
			t.Fatalf("batch %d started at %d, want %d (every 500+100); starts %v", i+1, s, want, starts)
		}
	}
	// The two batches in flight together never share a request.
	for id := int64(2); id <= 12; id++ {
		for _, a := range members[id] {
			for _, b := range members[id-1] {
				if a == b {
					t.Fatalf("batches %d and %d both schedule slot %d", id-1, id, a)
				}
			}
		}
	}
	if e.Pool().Free() != cfg.NumBlocks {
		t.Fatalf("leaked blocks: %d free of %d", e.Pool().Free(), cfg.NumBlocks)
	}
}

// TestPipelineOneBatchLatency: a lone batch through 4 stages with a send
// that costs latency plus bytes over bandwidth takes 4*(S/4) + 3*send.
func TestPipelineOneBatchLatency(t *testing.T) {
	send := PPSend{LatencyNs: 50, BytesPerToken: 8192, Bandwidth: 8192e9} // 1 us per 1000 tokens
	if got := send.Time(1000); got != 1050 {
		t.Fatalf("send of 1000 tokens: %d ns, want 1050", got)
	}
	cfg := Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 2048, BlockSize: 16, NumBlocks: 200,
		ChunkedPrefill: true, CheckInvariants: true, PipelineParallel: 4, PPSend: send}
	e, _ := New(0, cfg, fixedStep{base: 4000})
	e.Add(&workload.Request{ID: 1, InputTokens: 1000, OutputTokens: 1}, 0)
	st, ok, err := e.Begin(0)
	if !ok || err != nil {
		t.Fatalf("no batch (%v)", err)
	}
	if st.End != 4*1000+3*1050 || st.Free != 1000+1050 {
		t.Fatalf("end %d free %d, want %d %d", st.End, st.Free, 4*1000+3*1050, 1000+1050)
	}
}

// TestPipelineProperty drives random workloads through engines with 1 to 4
// pipeline stages, random send costs and arrivals, invariant checking on:
// limits hold, batches in flight are disjoint and end in start order, at
// most pp are in flight, and every request finishes with all its tokens.
func TestPipelineProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := drawConfig(rt, 10)
		cfg.AsyncScheduling = rapid.Bool().Draw(rt, "async")
		cfg.PipelineParallel = rapid.IntRange(1, 4).Draw(rt, "pp")
		cfg.PPSend = PPSend{LatencyNs: int64(rapid.IntRange(0, 300).Draw(rt, "send"))}
		e, err := New(0, cfg, fixedStep{base: 100, perTok: 1})
		if err != nil {
			rt.Fatal(err)
		}
		reqs := drawRequests(rt, e, true)
		// Arrivals in time order, each added when the run reaches it.
		for i := 1; i < len(reqs); i++ {
			for j := i; j > 0 && reqs[j].Arrival < reqs[j-1].Arrival; j-- {
				reqs[j], reqs[j-1] = reqs[j-1], reqs[j]
			}
		}
		now, finished, lastEnd := int64(0), 0, int64(-1)
		startOf := map[int64]int64{}
		check := func(ev pipeEvent) error {
			if len(e.flights) > cfg.PipelineParallel {
				return fmt.Errorf("%d batches in flight > pp %d", len(e.flights), cfg.PipelineParallel)
			}
			if e.Running() > cfg.MaxNumSeqs {
				return fmt.Errorf("%d running > %d", e.Running(), cfg.MaxNumSeqs)
			}
			if e.Pool().Used() > cfg.NumBlocks {
				return fmt.Errorf("over capacity")
			}
			if ev.start {
				tok := 0
				for _, sc := range ev.sched {
					tok += int(sc.tokens)
				}
				if tok > cfg.MaxNumBatchedTokens {
					return fmt.Errorf("batch %d tokens > budget %d", tok, cfg.MaxNumBatchedTokens)
				}
				startOf[ev.id] = ev.at
				return nil
			}
			if ev.at < lastEnd {
				return fmt.Errorf("batch %d ended at %d before the previous end %d", ev.id, ev.at, lastEnd)
			}
			lastEnd = ev.at
			for _, f := range ev.finished {
				if f.Generated != f.OutputTokens {
					return fmt.Errorf("request %d generated %d of %d", f.ID, f.Generated, f.OutputTokens)
				}
				finished++
			}
			return nil
		}
		for i := 0; i < len(reqs); {
			// Run until the next arrival, then add it.
			for len(e.flights) > 0 {
				next := e.flightEnd(e.flights[0])
				if !e.Busy() && e.NextFree() > now && e.NextFree() < next {
					next = e.NextFree()
				}
				if next > reqs[i].Arrival {
					break
				}
				if now, err = pipeDrive(e, now, 1, check); err != nil {
					rt.Fatal(err)
				}
			}
			now = max(now, reqs[i].Arrival)
			for i < len(reqs) && reqs[i].Arrival <= now {
				e.Add(&reqs[i], now)
				i++
			}
			if now, err = pipeDrive(e, now, 1, check); err != nil {
				rt.Fatal(err)
			}
		}
		if _, err = pipeDrive(e, now, 0, check); err != nil {
			rt.Fatal(err)
		}
		if finished != len(reqs) {
			rt.Fatalf("finished %d of %d", finished, len(reqs))
		}
		if err := e.Pool().Check(); err != nil {
			rt.Fatal(err)
		}
		if e.Pool().Free() != cfg.NumBlocks {
			rt.Fatalf("leaked blocks: %d free of %d", e.Pool().Free(), cfg.NumBlocks)
		}
	})
}

// flightEnd is the end of flight f, in flight: without pipeline
// parallelism the latest batch's (f.end is set only with it).
func (e *Engine) flightEnd(f *flight) int64 {
	if e.pp() > 1 {
		return f.end
	}
	return e.stepEnd
}
