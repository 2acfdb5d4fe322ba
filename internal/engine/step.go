package engine

import (
	"fmt"

	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/perf"
)

type scheduled struct {
	slot   int32
	tokens int32
	spec   int32 // proposals verified (speculative decoding), in tokens
}

// flight is one batch in flight. What finishing a steady batch reads and
// launching one writes is its first 48 bytes (Engine.cur ends the
// engine's hot lines with them); end is read only with pipeline
// parallelism, and batch holds the batch only then (without it the one
// batch in flight is Engine.batch, which no Form touches until the batch
// has finished). The size is a multiple of 64 bytes, which keeps a
// flight line-aligned in its size class.
type flight struct {
	id        int64
	start     int64
	lane      int32 // lane members, one decode token each, not in sched
	preempted int32
	sched     []scheduled
	end       int64 // (set only with pipeline parallelism)
	draftNs   int64 // speculative proposer time within the step
	batch     perf.Batch
	_         [32]byte
}

// Step describes a batch just started: it ends at End, and the next batch
// may start at Free (End without pipeline parallelism; the time the batch
// has cleared the first stage with it).
type Step struct {
	ID         int64
	Start, End int64
	Free       int64
}

// FirstScheduled (prefill role only) lists the requests whose first prompt
// tokens are in the batch the latest Begin or Launch started: their KV
// starts being produced now. It is valid until the next Begin. (Not a
// field of Step, which stays small enough to be returned in registers.)
func (e *Engine) FirstScheduled() []int64 { return e.firstSched }

// StepResult is what one step did. Slices are reused by the next FinishBatch.
// Finished's records are the finished requests' own, in their slots, not
// copies (which would write a record's four cache lines and read all of
// them, where a reader such as a summary reads two): they stay valid, and
// the caller may change them, until the engine next takes a request in
// (Add, AddRecord, Enqueue), which may reuse their slots.
//
// The fields a steady decode step writes and its observers read (the
// runner's StepDone, the cluster's step end) share two cache lines, the
// engine keeping the result 40 bytes before a line's start: the proposer
// time, Start to ITL, then the one run of ITL gaps such a step has and
// the lengths of Finished and Prefilled, which every step end reads.
// Spec comes first so that its last field, StepNs, which the runner
// reads at every step, opens the first of them.
type StepResult struct {
	Spec       SpecStats // speculative decoding's counts (zero when off)
	Start, End int64
	// PromptTokens is the prompt tokens of requests that emitted their
	// first token; GenTokens the output tokens emitted.
	PromptTokens, GenTokens int
	ITL                     []Gap             // gaps between consecutive tokens emitted this step, run-length encoded
	itl                     [1]Gap            // ITL's backing array on the steady path (FinishSteady)
	Finished                []*metrics.Record // requests that produced their last token (see above)
	Prefilled               []Prefilled       // prefill role: prompts computed, KV pinned

	// Batch is the batch as the predictor saw it, valid until the
	// engine's next Begin, Form or Launch. (A steady step leaves it:
	// without pipeline parallelism it is always the engine's batch.)
	Batch     *perf.Batch
	itlBuf    []Gap   // ITL's backing array on FinishBatch's general path
	Preempted int     // requests preempted while forming the batch
	First     []int64 // ids of the requests that emitted their first output token
}

// Gap is a run of Count equal inter-token gaps of NS nanoseconds. In a
// steady decode step every request's previous token came at the previous
// step's end, so a step's gaps are usually one run.
type Gap struct {
	NS    int64
	Count int64
}

// Prefilled reports a prompt computed on a prefill instance. Its blocks stay
// pinned until ReleasePinned(Slot).
type Prefilled struct {
	Slot   int32
	Record metrics.Record
	Blocks int
}

// Begin forms the next batch at time now and returns when it ends and when
// the next batch may start. It returns false when there is nothing to run,
// when as many batches as pipeline stages are in flight, or when the first
// stage is still busy (before NextFree). It is Form then Launch for the
// predictor's step time.
func (e *Engine) Begin(now int64) (Step, bool, error) {
	if ok, err := e.Form(now); !ok || err != nil {
		return Step{}, false, err
	}
	d := e.pred.StepTime(&e.batch)
	if e.specOn() {
		e.formDraft = e.draftNs()
		d += e.formDraft
	}
	st, err := e.Launch(now, e.Slowed(d))
	return st, true, err
}

// FormedDraftNs prices the proposer's passes for the batch Form formed (0
// without speculation) and keeps the price for the step's record, as Begin
// does; a caller that times the step itself (a data-parallel group) adds
// it to the step.
func (e *Engine) FormedDraftNs() int64 {
	if !e.specOn() {
		return 0
	}
	e.formDraft = e.draftNs()
	return e.formDraft
}

// Form forms the next batch at now without starting it, and reports
// whether there is one. A formed batch must be launched (Launch) at the
// same now before anything else touches the engine. Form and Launch let a
// caller time several engines' batches jointly, as a data-parallel group
// whose ranks step in lockstep does.
func (e *Engine) Form(now int64) (bool, error) {
	if e.Busy() || (len(e.flights) > 0 && now < e.stages[0]) {
		return false, e.err
	}
	if !e.HasWork() {
		e.releaseZombies()
		e.justEnded = false
		return false, e.err
	}
	// The moment this batch is formed: with async scheduling, a batch that
	// starts right as a step ends was formed when that step started.
	formed := now
	if e.async() && e.justEnded && now == e.stepEnd {
		formed = e.stepStart
	}
	e.justEnded = false
	if e.prefill {
		e.firstSched = e.firstSched[:0]
	}
	budget := e.form(now, formed)
	hadZombies := len(e.zombies) > 0
	e.releaseZombies()
	if len(e.sched) == 0 && len(e.lane) == 0 && (hadZombies || formed < now) && e.HasWork() {
		// Nothing could run without knowing the last step's results (its
		// finished requests still held their slots), or without what
		// arrived since the batch was formed (a request whose prefix
		// load ended during the last step): an idle engine schedules
		// again at once, seeing both, and forms the batch again.
		budget = e.form(now, now)
		formed = now
	}
	for e.waiting.prio && len(e.sched) == 0 && len(e.lane) == 0 && e.preempted > 0 && e.numRunning() > 0 {
		// Under the priority policy a request short of blocks may
		// preempt itself (it had the largest priority value) before the
		// running requests after it were scheduled, leaving the batch
		// empty; vLLM's engine then calls schedule() again at once and
		// schedules them. Each pass leaves at least one request fewer
		// running, so this ends.
		budget = e.form(now, formed)
	}
	if e.checkInv {
		e.formBudget = budget
	}
	return len(e.sched) > 0 || len(e.lane) > 0, e.err
}

// FormedBatch is the batch the last successful Form formed, as the
// predictor sees it; valid until Launch.
func (e *Engine) FormedBatch() perf.Batch { return e.batch }

// Launch starts the batch formed by Form at now, lasting d nanoseconds
// (the pipeline stages split d when pp > 1).
func (e *Engine) Launch(now, d int64) (Step, error) {
	e.stepStart = now
	end, free := now+d, now+d
	pp := e.pp() > 1
	if pp {
		end, free = e.pipeline(now, d)
	}
	e.stepEnd = end
	e.nextID++
	f := &e.cur
	if pp {
		f = e.nextFlight()
		f.end = end
	}
	f.id, f.start = e.nextID, now
	// The flight takes the formed list; the next form reuses the flight's
	// old buffer (no copy).
	spare := f.sched[:0]
	f.sched = e.sched
	f.preempted, f.lane = int32(e.preempted), int32(len(e.lane))
	if e.spec { // (f.draftNs is read only then)
		f.draftNs, e.formDraft = e.formDraft, 0
	}
	if !pp {
		e.flights = e.flights[:1] // cur, in the backing array's first place
	} else {
		e.flights = append(e.flights, f)
		// Only pipelined batches overlap the forming of the next one
		// (which overwrites e.batch).
		f.batch = e.batch
		for _, sc := range f.sched {
			e.slots[sc.slot].inFlight = true
		}
	}
	if e.checkInv {
		if err := e.check(e.formBudget); err != nil {
			e.fail(fmt.Errorf("after forming the batch at t=%d ns: %w", now, err))
		}
	}
	e.sched = spare
	return Step{ID: f.id, Start: now, End: end, Free: free}, e.err
}

// nextFlight is the flight the next batch takes with pipeline
// parallelism: a finished one kept after those in flight, or a new one
// (at most pp of them over a run).
func (e *Engine) nextFlight() *flight {
	var f *flight
	if n := len(e.flights); n < cap(e.flights) {
		f = e.flights[:n+1][n] // a finished flight, or nil
	}
	if f == nil {
		f = new(flight)
	}
	return f
}

// pipeline times a batch of step time d entering the first of N stages at
// now: each stage takes d/N, and the batch's activations cross to the next
// stage in PPSend time, during which the sending stage stays busy. A stage
// takes batches in order, so a batch waits for its predecessor to leave a
// stage. It returns the batch's end and when the first stage is free again;
// alone, a batch takes N*(d/N) + (N-1)*send and the next may start after
// d/N + send.
func (e *Engine) pipeline(now, d int64) (end, free int64) {
	n := e.pp()
	if len(e.stages) != n {
		e.stages = make([]int64, n)
	}
	stage := d / int64(n)
	send := e.cfg.PPSend.Time(e.batch.Tokens())
	t := now
	for j := 0; j < n; j++ {
		if j > 0 {
			t += send
		}
		t = max(t, e.stages[j])
		t += stage
		e.stages[j] = t
		if j < n-1 {
			e.stages[j] += send
		}
	}
	return t, e.stages[0]
}
