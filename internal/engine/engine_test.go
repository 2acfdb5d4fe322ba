package engine

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/perf"
	_ "github.com/servesim/servesim/internal/testseed"
	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// fixedStep costs base ns per step plus perTok ns per computed token.
type fixedStep struct{ base, perTok int64 }

func (f fixedStep) StepTime(b *perf.Batch) int64 { return f.base + f.perTok*int64(b.Tokens()) }

func testConfig() Config {
	return Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 64, BlockSize: 16, NumBlocks: 64,
		ChunkedPrefill: true, PrefixCaching: true, CheckInvariants: true}
}

// drive runs the engine alone with all requests arriving at t=0 and returns
// the finished records in completion order.
func drive(t testing.TB, e *Engine, reqs []workload.Request) []metrics.Record {
	for i := range reqs {
		if why := e.Unfit(&reqs[i]); why != "" {
			t.Fatalf("request %d unfit: %s", i, why)
		}
		e.Add(&reqs[i], reqs[i].Arrival)
	}
	var out []metrics.Record
	now := int64(0)
	for steps := 0; e.HasWork(); steps++ {
		d, ok := begin(e, now)
		if !ok {
			t.Fatalf("engine has work but formed no batch at t=%d", now)
		}
		now += d
		r := finish(e, now)
		if err := e.err; err != nil {
			t.Fatal(err)
		}
		out = appendFinished(out, r)
		if steps > 1e6 {
			t.Fatal("no progress")
		}
	}
	return out
}

// appendFinished appends copies of the records of r's finished requests
// to out: r.Finished points into the engine's slots, which the next
// batch may reuse.
func appendFinished(out []metrics.Record, r *StepResult) []metrics.Record {
	for _, rec := range r.Finished {
		out = append(out, *rec)
	}
	return out
}

func TestTimingOfOneRequest(t *testing.T) {
	tests := []struct {
		name              string
		prompt, output    int
		budget            int
		wantTTFT, wantE2E int64
	}{
		// 100-token prompt fits one step: first token at the end of step 1,
		// then one token per step.
		{"single chunk", 100, 5, 2048, 1000, 5000},
		// 5000 tokens at 2048 per step: chunks 2048, 2048, 904.
		{"chunked prompt", 5000, 3, 2048, 3000, 5000},
		// exactly one block boundary; output 1 ends with the first token.
		{"one output token", 16, 1, 2048, 1000, 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.MaxNumBatchedTokens = tc.budget
			cfg.NumBlocks = 1000
			e, err := New(0, cfg, fixedStep{base: 1000})
			if err != nil {
				t.Fatal(err)
			}
			recs := drive(t, e, []workload.Request{{ID: 1, InputTokens: tc.prompt, OutputTokens: tc.output}})
			if len(recs) != 1 {
				t.Fatalf("finished %d requests, want 1", len(recs))
			}
			r := recs[0]
			if r.TTFT() != tc.wantTTFT || r.E2E() != tc.wantE2E || r.Generated != tc.output {
				t.Fatalf("TTFT %d E2E %d generated %d; want %d %d %d", r.TTFT(), r.E2E(), r.Generated, tc.wantTTFT, tc.wantE2E, tc.output)
			}
		})
	}
}

func TestPrefixCacheHit(t *testing.T) {
	ids := make([]int32, 40)
	for i := range ids {
		ids[i] = int32(i + 7)
	}
	cfg := testConfig()
	cfg.MaxNumBatchedTokens = 2048
	e, _ := New(0, cfg, fixedStep{base: 1000})
	drive(t, e, []workload.Request{{ID: 1, InputTokens: 40, OutputTokens: 2, InputIDs: ids}})
	// Same 40-token prompt: two full blocks (32 tokens) are cached.
	recs := drive(t, e, []workload.Request{{ID: 2, InputTokens: 40, OutputTokens: 2, InputIDs: ids}})
	if got := recs[0].CachedTokens; got != 32 {
		t.Fatalf("cached tokens %d, want 32", got)
	}
	// A prompt of exactly 32 tokens may hit at most prompt-1 tokens: 1 block.
	recs = drive(t, e, []workload.Request{{ID: 3, InputTokens: 32, OutputTokens: 2, InputIDs: ids[:32]}})
	if got := recs[0].CachedTokens; got != 16 {
		t.Fatalf("cached tokens %d, want 16 (hits capped at prompt-1)", got)
	}
}

func TestPreemptionUnderMemoryPressure(t *testing.T) {
	cfg := testConfig()
	cfg.NumBlocks = 10 // 160 tokens
	cfg.MaxNumBatchedTokens = 256
	e, _ := New(0, cfg, fixedStep{base: 1000})
	reqs := []workload.Request{
		{ID: 1, InputTokens: 60, OutputTokens: 60},
		{ID: 2, InputTokens: 60, OutputTokens: 60},
	}
	recs := drive(t, e, reqs)
	if len(recs) != 2 {
		t.Fatalf("finished %d, want 2", len(recs))
	}
	pre := recs[0].Preemptions + recs[1].Preemptions
	if pre == 0 {
		t.Fatal("two requests of 120 tokens in 160 token slots must preempt")
	}
	if e.Pool().Free() != cfg.NumBlocks {
		t.Fatalf("blocks leaked: %d free of %d", e.Pool().Free(), cfg.NumBlocks)
	}
}

func TestUnfit(t *testing.T) {
	cfg := testConfig()
	cfg.MaxModelLen = 1000
	e, _ := New(0, cfg, fixedStep{base: 1})
	if why := e.Unfit(&workload.Request{InputTokens: 1000, OutputTokens: 25}); why == "" {
		t.Fatal("1025 tokens > 1024 block capacity must be unfit")
	}
	if why := e.Unfit(&workload.Request{InputTokens: 900, OutputTokens: 101}); why == "" {
		t.Fatal("over max_model_len must be unfit")
	}
	if why := e.Unfit(&workload.Request{InputTokens: 500, OutputTokens: 500}); why != "" {
		t.Fatalf("fits, got %q", why)
	}
}

// TestSchedulerLimitsProperty drives random workloads through small engines
// with invariant checking on: never over the token budget, the sequence
// limit or the KV capacity, and every request finishes with all its tokens.
func TestSchedulerLimitsProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := drawConfig(rt, 40)
		e, err := New(0, cfg, fixedStep{base: 100, perTok: 1})
		if err != nil {
			rt.Fatal(err)
		}
		reqs := drawRequests(rt, e, false)
		for i := range reqs {
			e.Add(&reqs[i], 0)
		}
		now, finished := int64(0), 0
		for steps := 0; e.HasWork(); steps++ {
			d, ok := begin(e, now)
			if !ok {
				rt.Fatalf("stalled with %d running, %d waiting", e.Running(), e.Waiting())
			}
			if e.Running() > cfg.MaxNumSeqs {
				rt.Fatalf("%d running > %d", e.Running(), cfg.MaxNumSeqs)
			}
			if tok := e.batch.Tokens(); tok > cfg.MaxNumBatchedTokens {
				rt.Fatalf("batch %d tokens > budget %d", tok, cfg.MaxNumBatchedTokens)
			}
			if e.Pool().Used() > cfg.NumBlocks {
				rt.Fatal("over capacity")
			}
			now += d
			r := finish(e, now)
			if err := e.err; err != nil {
				rt.Fatal(err)
			}
			for _, f := range r.Finished {
				if f.Generated != f.OutputTokens {
					rt.Fatalf("request %d generated %d of %d", f.ID, f.Generated, f.OutputTokens)
				}
				finished++
			}
			if steps > 100000 {
				rt.Fatal("no progress")
			}
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

// drawConfig draws a small engine configuration with invariant checks on.
func drawConfig(rt *rapid.T, minBlocks int) Config {
	return Config{
		MaxNumSeqs:                rapid.IntRange(1, 8).Draw(rt, "seqs"),
		MaxNumBatchedTokens:       rapid.IntRange(1, 300).Draw(rt, "budget"),
		BlockSize:                 rapid.SampledFrom([]int{1, 4, 16}).Draw(rt, "bs"),
		NumBlocks:                 rapid.IntRange(minBlocks, 200).Draw(rt, "blocks"),
		LongPrefillTokenThreshold: rapid.IntRange(0, 100).Draw(rt, "lpt"),
		ChunkedPrefill:            true,
		PrefixCaching:             rapid.Bool().Draw(rt, "cache"),
		CheckInvariants:           true,
	}
}

// drawRequests draws up to 30 requests that fit e, some with token ids
// from a tiny vocabulary (so prefixes are shared), and with random
// arrivals in [0, 5000] ns when withArrivals.
func drawRequests(rt *rapid.T, e *Engine, withArrivals bool) []workload.Request {
	n := rapid.IntRange(1, 30).Draw(rt, "n")
	vocab := rapid.IntRange(1, 4).Draw(rt, "vocab")
	var reqs []workload.Request
	for i := 0; i < n; i++ {
		in := rapid.IntRange(1, 80).Draw(rt, "in")
		out := rapid.IntRange(1, 40).Draw(rt, "out")
		r := workload.Request{ID: int64(i), InputTokens: in, OutputTokens: out}
		if withArrivals {
			r.Arrival = int64(rapid.IntRange(0, 5000).Draw(rt, "at"))
		}
		if e.Unfit(&r) != "" {
			continue
		}
		if rapid.Bool().Draw(rt, "ids") {
			r.InputIDs = make([]int32, in)
			for j := range r.InputIDs {
				r.InputIDs[j] = int32(j % vocab)
			}
		}
		reqs = append(reqs, r)
	}
	return reqs
}

// begin and finish drive an engine one batch at a time through Begin and
// FinishBatch: begin returns the batch's duration, finish applies the
// oldest batch in flight.
// A violated invariant stays in e.err for the caller to check.
func begin(e *Engine, now int64) (int64, bool) {
	st, ok, err := e.Begin(now)
	sameErr(e, err)
	if !ok {
		return 0, false
	}
	return st.End - now, true
}

func finish(e *Engine, end int64) *StepResult {
	r, err := e.FinishBatch(e.flights[0].id, end)
	sameErr(e, err)
	return r
}

// sameErr panics unless err, returned by a method of e, is the violation
// e recorded (nil when none): the engine has one error, and every method
// reports it.
func sameErr(e *Engine, err error) {
	if err != e.err {
		panic(fmt.Sprintf("engine returned %v, recorded %v", err, e.err))
	}
}

// TestSlotLayout checks that a request slot is eight cache lines, that
// its hot fields (everything a decode step touches) share the first one
// and that its record starts on a line, taking four.
func TestSlotLayout(t *testing.T) {
	var s seq
	if size := unsafe.Sizeof(s); size != 512 {
		t.Errorf("slot is %d bytes, want 512 (slot.go)", size)
	}
	if start, end := unsafe.Offsetof(s.rec), unsafe.Offsetof(s.rec)+unsafe.Sizeof(s.rec); start%64 != 0 || end-start > 256 {
		t.Errorf("record spans bytes %d to %d, not four whole cache lines", start, end)
	}
	if end := unsafe.Offsetof(s.nblocks) + unsafe.Sizeof(s.nblocks); end > 64 {
		t.Errorf("hot fields end at byte %d, past the first cache line", end)
	}
	if start, end := unsafe.Offsetof(s.laneAt), unsafe.Offsetof(s.sharedDone)+unsafe.Sizeof(s.sharedDone); start != 64 || end > 128 {
		t.Errorf("lane and commit fields span bytes %d to %d, not the second cache line", start, end)
	}
}

// TestQueuedAtStepBoundary pins when a busy engine takes a request in
// (vLLM's queued_ts): at the end of the step in flight when it arrives
// mid-step. One arriving at the very instant a step begins is taken in at
// once with async scheduling (the next batch is formed at that instant and
// sees it), and at the step's end without (the batch formed at that
// instant did not include it). A replay whose arrivals are a run's own
// queued times lands exactly on step boundaries and must record the same
// queued times as the run.
func TestQueuedAtStepBoundary(t *testing.T) {
	for _, async := range []bool{false, true} {
		cfg := testConfig()
		cfg.AsyncScheduling = async
		e, err := New(0, cfg, fixedStep{base: 1000})
		if err != nil {
			t.Fatal(err)
		}
		e.Add(&workload.Request{ID: 1, InputTokens: 16, OutputTokens: 8}, 0)
		if _, ok := begin(e, 0); !ok {
			t.Fatal("no batch at t=0")
		}
		// Step [0, 1000) is in flight: one request arrives as it begins,
		// one in its middle, one as it ends (after the next step began).
		e.Add(&workload.Request{ID: 2, InputTokens: 16, OutputTokens: 8}, 0)
		e.Add(&workload.Request{ID: 3, InputTokens: 16, OutputTokens: 8}, 400)
		finish(e, 1000)
		if _, ok := begin(e, 1000); !ok {
			t.Fatal("no batch at t=1000")
		}
		e.Add(&workload.Request{ID: 4, InputTokens: 16, OutputTokens: 8}, 1000)
		want := map[int64]int64{2: 1000, 3: 1000, 4: 2000}
		if async {
			want = map[int64]int64{2: 0, 3: 1000, 4: 1000}
		}
		for slot := range e.slots {
			s := &e.slots[slot]
			if w, ok := want[s.rec.ID]; ok && s.state != stFree && s.rec.Queued != w {
				t.Errorf("async=%v: request %d queued at %d, want %d", async, s.rec.ID, s.rec.Queued, w)
			}
		}
	}
}

// TestEngineLayout checks the engine's placement of what a steady decode
// step touches (engine.go), in the cache lines of an engine New allocated:
// the hot fields, ending with the steady fields of the engine's own
// flight (cur), in five lines, what a P/D placement reads of a decode
// instance in one of them, the gap maxima and the batch in two, the
// result's steady fields (Spec.StepNs to Prefilled) in two,
// the lane's ring of per-batch counts (its mask, then 12 bytes a batch)
// from the start of a line (with those of 16 batches in 4 lines), and
// its batch records, 8 bytes each, from the start of a line; and a flight's steady fields in its first 48
// bytes, its size keeping it line-aligned.
func TestEngineLayout(t *testing.T) {
	e, err := New(0, testConfig(), fixedStep{base: 1000})
	if err != nil {
		t.Fatal(err)
	}
	base := uintptr(unsafe.Pointer(e)) % 64
	lines := func(from, to uintptr) uintptr { return (base+to-1)/64 - (base+from)/64 + 1 }
	res := unsafe.Offsetof(e.result)
	for _, c := range []struct {
		what     string
		from, to uintptr
		want     uintptr
	}{
		{"hot fields", 0, unsafe.Offsetof(e.cur) + unsafe.Offsetof(e.cur.sched) + unsafe.Sizeof(e.cur.sched), 5},
		{"placement's fields", unsafe.Offsetof(e.running), unsafe.Offsetof(e.reservedSeqs) + 4, 1},
		{"gap maxima and batch", unsafe.Offsetof(e.gaps), unsafe.Offsetof(e.batch) + unsafe.Sizeof(e.batch), 2},
		{"result's steady fields", res + unsafe.Offsetof(e.result.Spec.StepNs), res + unsafe.Offsetof(e.result.Prefilled) + unsafe.Sizeof(e.result.Prefilled), 2},
	} {
		if n := lines(c.from, c.to); n > c.want {
			t.Errorf("the engine's %s (bytes %d to %d, the engine starting %d bytes into a line) span %d cache lines, want %d",
				c.what, c.from, c.to, base, n, c.want)
		}
	}
	for _, c := range []struct {
		what      string
		off, size uintptr
		wantSize  uintptr
	}{
		{"per-batch counts", unsafe.Offsetof(e.laneCounts), unsafe.Sizeof(laneCount{}), 12},
		{"batch records", unsafe.Offsetof(e.laneTicks), unsafe.Sizeof(laneTick{}), 8},
	} {
		if c.size != c.wantSize || (base+c.off)%64 != 0 {
			t.Errorf("the lane's %s (%d bytes each, want %d) start %d bytes into a line, want 0",
				c.what, c.size, c.wantSize, (base+c.off)%64)
		}
	}
	var f flight
	if size := unsafe.Sizeof(f); size%64 != 0 {
		t.Errorf("flight is %d bytes, not a multiple of 64: pad it (step.go)", size)
	}
	if got := unsafe.Offsetof(f.sched) + unsafe.Sizeof(f.sched); got != 48 {
		t.Errorf("the flight's steady fields end at byte %d, want 48 (the end of the engine's hot lines in cur)", got)
	}
	if e.flightBuf[0] != &e.cur {
		t.Errorf("the flights' backing array does not start with cur")
	}
}
