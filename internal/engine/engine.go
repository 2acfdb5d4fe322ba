package engine

import (
	"fmt"
	"math/rand/v2"

	"github.com/servesim/servesim/internal/kv"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/workload"
)

// seq is the engine-side state of one admitted request, kept in a flat,
// reusable slot so steady-state steps allocate nothing.
type seq struct {
	// Hot fields first: everything a step reads or writes for a request
	// that decodes one token fits the slot's first 64 bytes, so a step
	// touches one cache line of each request (the slot size is a multiple
	// of 64 bytes, see slotPad).
	prompt    int32
	output    int32
	generated int32 // output tokens produced so far
	computed  int32 // tokens whose KV is in the cache (num_computed_tokens)
	committed int32 // leading full blocks already offered to the prefix cache
	state     state
	// inFlight: scheduled in a batch that has not finished yet. Marked
	// with pipeline parallelism only: without it no batch is formed while
	// one is in flight, so nothing reads the mark.
	inFlight bool
	// started, lastToken and maxITL are the record's FirstToken >= 0,
	// LastToken and MaxITL, kept here while the request is on this
	// instance; syncRecord copies them into rec before rec is shown.
	started   bool
	lastToken int64
	maxITL    int64
	blocks    []kv.BlockID

	// Second line: what committing a filled block reads.
	// shared is how many leading blocks hash by content from the chain's
	// seed (all their token ids known), so another request may share them;
	// from the first block whose ids are unknown on, blocks are private:
	// only this request can ever hit them again (after a preemption). The
	// pool keeps them out of its shared index, tagged kv.Private(salt, i).
	shared     int32
	sharedDone bool // the block after the shared ones is known to be private
	salt       uint64
	hashes     []uint64 // chained hashes of the shared blocks, filled lazily
	// owned[i] is the block that held private block i when the request
	// was last preempted (-1: none), where it may still be cached.
	owned []kv.BlockID

	// Decode lane (lane.go): index in Engine.lane (-1: not a member), the
	// number of batches finished when it joined, the batch it must be
	// explicit in, and its admission order in the running set.
	laneAt    int32
	joinTick  int64
	due       int64
	order     int64
	rec       metrics.Record
	inputIDs  []int32
	outputIDs []int32
	enqueued  int64   // time it joined this instance's waiting queue
	alpha     float64 // speculative decoding: the request's own acceptance rate
	// Links of the decode admission queue (stHandoff only; -1: none).
	qPrev, qNext int32
	loadStart    int64 // start of its lower-tier load (stLoading)
	loadEnd      int32 // blocks held once the load ends
	_            [slotPad]byte
}

// slotPad rounds the slot up to a multiple of 64 bytes, so that slots in
// their (large, page-aligned) array keep their hot fields in one cache
// line. TestSlotLayout checks it.
const slotPad = 40

// syncRecord copies the record's fields kept in the hot part of the slot
// into rec; call it before rec leaves the engine or is shown.
func (s *seq) syncRecord() *metrics.Record {
	s.rec.LastToken, s.rec.MaxITL = s.lastToken, s.maxITL
	return &s.rec
}

func (s *seq) numTokens() int32 { return s.prompt + s.generated }

// state is where a request is on this instance.
type state uint8

const (
	stFree      state = iota // slot unused
	stWaiting                // in the local waiting queue, no blocks
	stRunning                // admitted; holds blocks for its computed tokens
	stDone                   // finished; holds slot and blocks until the next batch is formed
	stPrefilled              // prompt computed on a prefill instance; leaves the batch at the next formation
	stPinned                 // prefilled, KV pinned for a handoff, no sequence slot
	stHandoff                // in a decode instance's admission queue, no blocks
	stReserved               // decode blocks reserved, KV transfer in flight
	stReady                  // KV arrived on the decode instance, waiting for the next batch
	stLoading                // prefix being loaded from a lower KV tier into blocks it holds
	stLoaded                 // prefix loaded; in the waiting queue holding its blocks
)

var stateNames = [...]string{"free", "waiting", "running", "done", "prefilled", "pinned", "handoff-queued", "reserved", "ready", "loading", "loaded"}

// String returns the state's name, as error messages print it.
func (s state) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

type scheduled struct {
	slot   int32
	tokens int32
	spec   int32 // proposals verified (speculative decoding), in tokens
}

// flight is one batch in flight.
type flight struct {
	id         int64
	start, end int64
	sched      []scheduled
	batch      perf.Batch
	preempted  int
	lane       int   // lane members, one decode token each, not in sched
	draftNs    int64 // speculative proposer time within the step
}

// Step describes a batch just started: it ends at End, and the next batch
// may start at Free (End without pipeline parallelism; the time the batch
// has cleared the first stage with it).
type Step struct {
	ID         int64
	Start, End int64
	Free       int64
	// FirstScheduled (prefill role only) lists the requests whose first
	// prompt tokens are in this batch: their KV starts being produced now.
	// It is valid until the next Begin.
	FirstScheduled []int64
}

// StepResult is what one step did. Slices are reused by the next FinishBatch.
type StepResult struct {
	Start, End   int64
	Batch        perf.Batch
	PromptTokens int              // prompt tokens of requests that emitted their first token
	GenTokens    int              // output tokens emitted
	Preempted    int              // requests preempted while forming the batch
	ITL          []Gap            // gaps between consecutive tokens emitted this step, run-length encoded
	Finished     []metrics.Record // requests that produced their last token
	Prefilled    []Prefilled      // prefill role: prompts computed, KV pinned
	Spec         SpecStats        // speculative decoding's counts (zero when off)
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

// Engine is one serving instance.
type Engine struct {
	cfg  Config
	id   int32
	pred perf.Predictor
	pool *kv.Pool

	slots     []seq
	freeSlots []int32
	waiting   deque
	running   []int32

	flights   []flight // batches in flight, oldest first
	spare     []flight // finished flights, for reuse of their buffers
	nextID    int64
	stages    []int64 // time each pipeline stage can take the next batch
	stepStart int64   // start of the latest batch
	stepEnd   int64   // end of the latest batch
	justEnded bool    // a step ended and no batch has been formed since
	// zombies are requests that finished (or, on a prefill instance,
	// completed their prompt) in the last step: with async scheduling they
	// keep their sequence slot and blocks until the next batch is formed.
	zombies []int32

	// P/D handoff state.
	// Decode admission queue, FCFS, as a list linked through the slots so
	// that withdrawing a request from its middle costs O(1).
	hqHead, hqTail int32 // -1 when empty
	hqLen          int
	ready          deque // transferred requests waiting for the next batch
	reservedSeqs   int   // requests holding a decode reservation (reserved or ready)
	pinned         int   // blocks pinned by prefilled requests

	// Decode lane (lane.go).
	lane    []int32 // slots of the members
	laneOff []int64 // parallel to lane: computed - tick at joining
	laneSum int64   // sum of laneOff
	// Minimum and maximum of laneOff; stale after an extreme member left.
	laneLo, laneHi int64
	laneStale      bool
	tick           int64 // batches finished
	prevEnd        int64 // end of the latest finished batch
	gapRing        [laneWindow]int64
	dueRing        [laneWindow][]int32
	nextOrder      int64   // admission-order stamp of the next running request
	mergeBuf       []int32 // scratch of mergeRunning
	noLane         bool    // tests: every request explicit, as a reference

	waitingTokens int64        // tokens the waiting queue must compute
	probe         []uint64     // scratch hashes for PrefixHitTokens
	hits          []kv.BlockID // scratch: blocks of the last prefix match
	sched         []scheduled
	firstSched    []int64 // Step.FirstScheduled of the batch being formed
	batch         perf.Batch
	preempted     int
	result        StepResult
	scratch       []int32
	formBudget    int32 // token budget left by the last Form (invariant check)
	err           error
	onFail        func() // called when err is first set; see OnFail
	tiers         Tiers  // KV tiers below the GPU; nil: none
	loading       int    // requests in stLoading
	checks        int

	// Speculative decoding (spec.go).
	specRand   *rand.Rand // acceptance draws, created on first use
	draftBatch perf.Batch // scratch of draftNs
	formDraft  int64      // proposer time of the batch formed by Begin
	specTotal  SpecStats
}

// New returns an idle engine with an empty KV pool. id is the instance index
// written into the records of the requests it serves.
func New(id int, cfg Config, pred perf.Predictor) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if pred == nil {
		return nil, fmt.Errorf("engine: a latency predictor is required")
	}
	pool, err := kv.NewPool(cfg.NumBlocks, cfg.PrefixCaching)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return &Engine{cfg: cfg, id: int32(id), pred: pred, pool: pool, scratch: make([]int32, cfg.BlockSize), hqHead: -1, hqTail: -1}, nil
}

// Config returns the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// Pool exposes the KV pool for observation (time series, invariants).
func (e *Engine) Pool() *kv.Pool { return e.pool }

// Running is the number of requests in the running batch set.
func (e *Engine) Running() int { return e.numRunning() }

// Waiting is the number of queued requests.
func (e *Engine) Waiting() int { return e.waiting.len() }

// Busy reports whether no further batch can start: a step is in flight
// (with pipeline parallelism: as many batches as stages).
func (e *Engine) Busy() bool { return len(e.flights) >= e.pp() }

// InFlight is the number of batches in flight.
func (e *Engine) InFlight() int { return len(e.flights) }

// pp is the number of pipeline stages (at least 1).
func (e *Engine) pp() int { return max(e.cfg.PipelineParallel, 1) }

// async reports whether batches are formed one step ahead (never with
// pipeline parallelism).
func (e *Engine) async() bool { return e.cfg.AsyncScheduling && e.pp() == 1 }

// NextFree is the earliest time a new batch may start given the batches in
// flight (the first stage free); meaningful when not Busy.
func (e *Engine) NextFree() int64 {
	if len(e.stages) == 0 {
		return 0
	}
	return e.stages[0]
}

// HasWork reports whether any request is running or waiting.
func (e *Engine) HasWork() bool {
	return e.numRunning() > 0 || e.waiting.len() > 0 || e.ready.len() > 0
}

// Unfit returns why r can never be served by this instance ("" if it can):
// its prompt plus output needs more KV blocks than the instance holds, or
// more tokens than max_model_len.
func (e *Engine) Unfit(r *workload.Request) string {
	total := r.InputTokens + r.OutputTokens
	if e.cfg.MaxModelLen > 0 && total > e.cfg.MaxModelLen {
		return fmt.Sprintf("prompt+output %d tokens exceeds max_model_len %d", total, e.cfg.MaxModelLen)
	}
	need := cdiv(total, e.cfg.BlockSize)
	if need > e.cfg.NumBlocks {
		return fmt.Sprintf("prompt+output %d tokens needs %d KV blocks but instance %d holds %d", total, need, e.id, e.cfg.NumBlocks)
	}
	if k := e.cfg.Spec.K; k > 0 {
		// The last verification holds its 1+K tokens and K lookahead
		// slots past the last token's position.
		if need := cdiv(total-1+2*k, e.cfg.BlockSize); need > e.cfg.NumBlocks {
			return fmt.Sprintf("prompt+output %d tokens and %d speculative slots need %d KV blocks but instance %d holds %d", total, 2*k, need, e.id, e.cfg.NumBlocks)
		}
	}
	return ""
}

// take fills a free slot with request r in state st and returns it.
func (e *Engine) take(r *workload.Request, rec metrics.Record, now int64, st state) (int32, *seq) {
	slot := e.newSlot()
	s := &e.slots[slot]
	s.rec = rec
	s.started, s.lastToken, s.maxITL = rec.FirstToken >= 0, rec.LastToken, rec.MaxITL
	s.prompt, s.output = int32(r.InputTokens), int32(r.OutputTokens)
	s.generated, s.computed, s.committed = 0, 0, 0
	s.inputIDs, s.outputIDs = r.InputIDs, r.OutputIDs
	s.alpha = r.SpecAcceptance
	s.salt = uint64(r.ID)*0x2545f4914f6cdd1d + 1
	s.enqueued, s.state = now, st
	s.inFlight = false
	s.blocks = s.blocks[:0]
	s.hashes = s.hashes[:0]
	s.shared, s.sharedDone = 0, false
	s.owned = s.owned[:0]
	s.laneAt = -1
	return slot, s
}

// newSlot takes a free request slot.
func (e *Engine) newSlot() int32 {
	if n := len(e.freeSlots); n > 0 {
		slot := e.freeSlots[n-1]
		e.freeSlots = e.freeSlots[:n-1]
		return slot
	}
	e.slots = append(e.slots, seq{})
	return int32(len(e.slots) - 1)
}

// freeSlot returns a slot whose blocks are already released.
func (e *Engine) freeSlot(slot int32) {
	s := &e.slots[slot]
	s.state = stFree
	s.inputIDs, s.outputIDs = nil, nil
	e.freeSlots = append(e.freeSlots, slot)
}

// Add queues r at the back of the waiting queue and returns its slot. The
// caller must have checked Unfit. now is the arrival time at this instance.
func (e *Engine) Add(r *workload.Request, now int64) int32 {
	rec := metrics.NewRecord(r.ID, now)
	rec.Session, rec.InputTokens, rec.OutputTokens = r.Session, r.InputTokens, r.OutputTokens
	return e.AddRecord(r, rec, now)
}

// AddRecord is Add for a request that already has a record (for example
// one re-queued for prefill after its KV was lost); rec keeps its arrival
// and counters.
func (e *Engine) AddRecord(r *workload.Request, rec metrics.Record, now int64) int32 {
	slot, s := e.take(r, rec, now, stWaiting)
	s.rec.PrefillInstance = e.id
	s.rec.DecodeInstance = -1
	if e.cfg.Role != Prefill {
		s.rec.DecodeInstance = e.id
	}
	// The engine picks new requests up between steps: now when idle, else
	// when the step in flight ends (vLLM's queued time). A re-prefilled
	// request keeps its first queueing as its queued time.
	if s.rec.Queued < 0 {
		s.rec.Queued = now
		if e.Busy() {
			s.rec.Queued = e.stepEnd
			if e.pp() > 1 {
				s.rec.Queued = max(now, e.flights[0].end)
			} else if e.async() && e.stepStart == now {
				// It arrived at the very step boundary, in time for the
				// batch formed as this step began: taken in there.
				s.rec.Queued = now
			}
		} else if len(e.flights) > 0 && e.stages[0] > now {
			s.rec.Queued = e.stages[0]
		}
	}
	e.waiting.pushBack(slot)
	e.waitingTokens += int64(s.prompt)
	return slot
}

// WaitingTokens is the number of tokens the waiting queue still has to
// compute (prompts, and prompts plus outputs of preempted requests).
func (e *Engine) WaitingTokens() int64 { return e.waitingTokens }

// Record returns the live record of the request in slot; it is valid until
// the request ends or leaves this instance.
func (e *Engine) Record(slot int32) *metrics.Record {
	s := &e.slots[slot]
	if s.inLane() {
		e.laneRecord(s)
		return &s.rec
	}
	return s.syncRecord()
}

// Begin forms the next batch at time now and returns when it ends and when
// the next batch may start. It returns false when there is nothing to run,
// when as many batches as pipeline stages are in flight, or when the first
// stage is still busy (before NextFree). It is Form then Launch for the
// predictor's step time.
func (e *Engine) Begin(now int64) (Step, bool) {
	if !e.Form(now) {
		return Step{}, false
	}
	d := e.pred.StepTime(&e.batch)
	if e.specOn() {
		e.formDraft = e.draftNs()
		d += e.formDraft
	}
	return e.Launch(now, d), true
}

// Form forms the next batch at now without starting it, and reports
// whether there is one. A formed batch must be launched (Launch) at the
// same now before anything else touches the engine. Form and Launch let a
// caller time several engines' batches jointly, as a data-parallel group
// whose ranks step in lockstep does.
func (e *Engine) Form(now int64) bool {
	if e.Busy() || (len(e.flights) > 0 && now < e.stages[0]) {
		return false
	}
	if !e.HasWork() {
		e.releaseZombies()
		e.justEnded = false
		return false
	}
	// The moment this batch is formed: with async scheduling, a batch that
	// starts right as a step ends was formed when that step started.
	formed := now
	if e.async() && e.justEnded && now == e.stepEnd {
		formed = e.stepStart
	}
	e.justEnded = false
	e.firstSched = e.firstSched[:0]
	budget := e.form(now, formed)
	hadZombies := len(e.zombies) > 0
	e.releaseZombies()
	if len(e.sched) == 0 && len(e.lane) == 0 && hadZombies && e.HasWork() {
		// Nothing could run without knowing the last step's results (its
		// finished requests still held their slots): the engine processes
		// those results and forms the batch again.
		budget = e.form(now, now)
	}
	e.formBudget = budget
	return len(e.sched) > 0 || len(e.lane) > 0
}

// FormedBatch is the batch the last successful Form formed, as the
// predictor sees it; valid until Launch.
func (e *Engine) FormedBatch() perf.Batch { return e.batch }

// Launch starts the batch formed by Form at now, lasting d nanoseconds
// (the pipeline stages split d when pp > 1).
func (e *Engine) Launch(now, d int64) Step {
	budget := e.formBudget
	e.stepStart = now
	end, free := now+d, now+d
	if e.pp() > 1 {
		end, free = e.pipeline(now, d)
	}
	e.stepEnd = end
	e.nextID++
	var f flight
	if n := len(e.spare); n > 0 {
		f = e.spare[n-1]
		e.spare = e.spare[:n-1]
	}
	f.id, f.start, f.end = e.nextID, now, end
	// The flight takes the formed list; the next form reuses the flight's
	// old buffer (no copy).
	spare := f.sched[:0]
	f.sched = e.sched
	f.batch, f.preempted, f.lane = e.batch, e.preempted, len(e.lane)
	f.draftNs, e.formDraft = e.formDraft, 0
	e.flights = append(e.flights, f)
	if e.pp() > 1 {
		// Only pipelined batches overlap the forming of the next one.
		for _, sc := range f.sched {
			e.slots[sc.slot].inFlight = true
		}
	}
	if e.cfg.CheckInvariants {
		if err := e.check(budget); err != nil {
			e.fail(fmt.Errorf("after forming the batch at t=%d ns: %w", now, err))
		}
	}
	e.sched = spare
	return Step{ID: f.id, Start: now, End: end, Free: free, FirstScheduled: e.firstSched}
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

// form builds the batch at time now from what was known at time formed and
// returns the token budget left.
func (e *Engine) form(now, formed int64) int32 {
	e.sched = e.sched[:0]
	e.batch = perf.Batch{}
	e.preempted = 0
	budget := int32(e.cfg.MaxNumBatchedTokens)
	stalled := false // a running request lacks blocks until a batch in flight ends
	if e.laneOn() {
		e.leaveDue()
		if !e.laneFits(budget) {
			e.flush()
		}
		budget -= int32(len(e.lane)) // the members come after the explicit requests
	}

	// 1. Running requests, in admission order. Most are steady decoders:
	// one token, room for it in their last block. They take a short path
	// that accumulates the decode aggregates in locals (merged into the
	// batch below; sum, minimum and maximum do not depend on the order) and
	// skips the first-scheduled check (a running request has been
	// scheduled before: check verifies it).
	bs := int32(e.cfg.BlockSize)
	spec := e.specOn()
	var dn, dmin, dmax int
	var dsum int64
	for i := 0; i < len(e.running) && budget > 0; i++ {
		slot := e.running[i]
		s := &e.slots[slot]
		if s.state != stRunning || s.inFlight {
			continue // a request in a batch in flight waits for its end
		}
		if ctx := s.computed; ctx+1 == s.prompt+s.generated && ctx < int32(len(s.blocks))*bs && !spec {
			c := int(ctx)
			if dn == 0 || c < dmin {
				dmin = c
			}
			if c > dmax {
				dmax = c
			}
			dn++
			dsum += int64(c)
			e.sched = append(e.sched, scheduled{slot: slot, tokens: 1})
			s.computed = ctx + 1
			budget--
			continue
		}
		n := e.chunk(s.numTokens()-s.computed, budget)
		verify := spec && s.generated > 0 && s.computed+1 == s.numTokens()
		if verify {
			n = e.verifyTokens(s, budget)
		}
		if n <= 0 {
			continue
		}
		scheduledSelf := true
		slots := n
		if verify {
			// vLLM's num_lookahead_tokens: room for the K proposals the
			// drafter writes after this step's verification.
			slots += int32(e.cfg.Spec.K)
		}
		for !e.grow(s, slots) {
			// The last running request not in flight (slot itself at
			// worst); with batches in flight, rather than preempting
			// itself the request waits for them to end.
			vi := len(e.running) - 1
			for e.slots[e.running[vi]].inFlight {
				vi--
			}
			victim := e.running[vi]
			if victim == slot && len(e.flights) > 0 {
				scheduledSelf, stalled = false, true
				break
			}
			e.running = append(e.running[:vi], e.running[vi+1:]...)
			e.preempt(victim)
			if victim == slot {
				scheduledSelf = false
				break
			}
		}
		if !scheduledSelf {
			break
		}
		if verify {
			e.scheduleVerify(slot, n)
		} else {
			e.schedule(slot, n, now)
		}
		budget -= n
	}
	e.laneBatch()
	if dn > 0 {
		b := &e.batch
		if b.NumDecode == 0 || dmin < b.DecodeKVMin {
			b.DecodeKVMin = dmin
		}
		if dmax > b.DecodeKVMax {
			b.DecodeKVMax = dmax
		}
		b.NumDecode += dn
		b.DecodeKVSum += dsum
	}

	// 2. Waiting requests, only if nothing was preempted (or if preemption
	// left the batch empty, which only happens when the head request must
	// restart alone).
	if (e.preempted == 0 || len(e.sched) == 0) && !stalled { // (no preemption with lane members)
		// Transferred requests first: their slot was reserved.
		for e.ready.len() > 0 && budget > 0 && e.numRunning()+len(e.zombies) < e.cfg.MaxNumSeqs {
			slot := e.ready.front()
			s := &e.slots[slot]
			if s.enqueued > formed {
				break
			}
			e.ready.popFront()
			e.reservedSeqs--
			s.state = stRunning
			e.running = append(e.running, slot)
			s.order = e.nextOrder
			e.nextOrder++
			n := e.chunk(s.numTokens()-s.computed, budget)
			e.schedule(slot, n, now)
			budget -= n
		}
		for e.waiting.len() > 0 && budget > 0 && e.numRunning()+len(e.zombies)+e.reservedSeqs < e.cfg.MaxNumSeqs {
			slot := e.waiting.front()
			s := &e.slots[slot]
			if s.enqueued > formed {
				break // not yet visible when this batch was formed
			}
			hit := e.admit(slot, s, budget, now)
			if hit == loadStarted {
				// Its prefix is being loaded from a lower tier; it comes
				// back to the front of the queue when the load ends.
				e.waiting.popFront()
				e.waitingTokens -= int64(s.numTokens())
				continue
			}
			if hit < 0 {
				break
			}
			e.waiting.popFront()
			e.waitingTokens -= int64(s.numTokens())
			s.state = stRunning
			e.running = append(e.running, slot)
			s.order = e.nextOrder
			e.nextOrder++
			// admit allocated the blocks of its chunk, or (a loaded
			// prefix, memory short) kept it to the blocks it holds.
			n := min(e.chunk(s.numTokens()-s.computed, budget), e.room(s))
			e.schedule(slot, n, now)
			budget -= n
		}
	}

	return budget
}

// releaseZombies frees the slots and blocks of requests that finished in
// the previous step, once the batch formed without knowing it is out.
func (e *Engine) releaseZombies() {
	for _, slot := range e.zombies {
		s := &e.slots[slot]
		switch s.state {
		case stDone:
			e.release(s)
			e.freeSlot(slot)
		case stPrefilled:
			s.state = stPinned
		}
	}
	e.zombies = e.zombies[:0]
}

// chunk caps a request's remaining tokens by the long-prefill threshold and
// the step budget.
func (e *Engine) chunk(remaining, budget int32) int32 {
	n := remaining
	if t := int32(e.cfg.LongPrefillTokenThreshold); t > 0 && n > t {
		n = t
	}
	if n > budget {
		n = budget
	}
	return n
}

// grow allocates the blocks s needs to hold computed+n tokens. The common
// case, room left in the last block, costs a multiplication, no division.
func (e *Engine) grow(s *seq, n int32) bool {
	bs := int32(e.cfg.BlockSize)
	room := int32(len(s.blocks)) * bs
	if s.computed+n <= room {
		return true
	}
	need := cdiv(int(s.computed+n-room), int(bs))
	var ok bool
	s.blocks, ok = e.pool.Allocate(s.blocks, need)
	return ok
}

// admit tries to take a waiting request in: prefix-cache hits first, then
// blocks for its first chunk. It returns the number of hit tokens, or -1
// when the request cannot be admitted now (state unchanged).
func (e *Engine) admit(slot int32, s *seq, budget int32, now int64) int {
	if s.state == stLoaded {
		return e.admitLoaded(s, budget)
	}
	bs := int32(e.cfg.BlockSize)
	hitBlocks, maxBlocks := 0, 0
	if e.cfg.PrefixCaching && s.computed == 0 {
		maxBlocks = int((s.numTokens() - 1) / bs)
		hitBlocks = e.match(s, maxBlocks)
		if e.tiers != nil {
			if end, tier := e.tiers.Lookup(int(e.id), s.hashes, hitBlocks, maxBlocks); end > hitBlocks {
				return e.startLoad(slot, s, hitBlocks, end, tier, budget, now)
			}
		}
	}
	hitTokens := int32(hitBlocks) * bs
	remaining := s.numTokens() - hitTokens
	if !e.cfg.ChunkedPrefill && remaining > budget {
		return -1
	}
	n := e.chunk(remaining, budget)
	need := cdiv(int(hitTokens+n), e.cfg.BlockSize) - hitBlocks
	evictable := 0
	if hitBlocks > 0 {
		evictable = e.pool.EvictableBlocks(e.hits)
	}
	if need+evictable > e.pool.Free() {
		return -1
	}
	if e.cfg.PrefixCaching && s.computed == 0 {
		s.blocks = e.pool.AcquireBlocks(s.blocks, e.hits, maxBlocks)
	}
	var ok bool
	if s.blocks, ok = e.pool.Allocate(s.blocks, need); !ok {
		e.fail(fmt.Errorf("request %d: %d blocks checked free but allocation failed", s.rec.ID, need))
		return -1
	}
	s.computed = hitTokens
	s.committed = int32(hitBlocks)
	if s.rec.Scheduled < 0 {
		s.rec.CachedTokens = int(hitTokens)
	}
	return int(hitTokens)
}

// schedule puts n tokens of slot into the batch and accounts them for the
// latency predictor. Blocks must already be allocated.
func (e *Engine) schedule(slot, n int32, now int64) {
	s := &e.slots[slot]
	e.sched = append(e.sched, scheduled{slot: slot, tokens: n})
	if s.rec.Scheduled < 0 {
		s.rec.Scheduled = now
		if e.cfg.Role == Prefill {
			e.firstSched = append(e.firstSched, s.rec.ID)
		}
	}
	b := &e.batch
	ctx := int(s.computed)
	if n == 1 {
		if b.NumDecode == 0 || ctx < b.DecodeKVMin {
			b.DecodeKVMin = ctx
		}
		b.NumDecode++
		b.DecodeKVSum += int64(ctx)
		if ctx > b.DecodeKVMax {
			b.DecodeKVMax = ctx
		}
	} else {
		b.PrefillSeqs++
		b.PrefillTokens += int(n)
		b.PrefillKV += ctx
	}
	s.computed += n
}

// preempt frees a running request's blocks and puts it back at the front of
// the waiting queue; it will recompute its prompt and outputs so far.
func (e *Engine) preempt(slot int32) {
	s := &e.slots[slot]
	e.notePrivate(s)
	e.release(s)
	s.computed, s.committed = 0, 0
	s.rec.Preemptions++
	s.state = stWaiting
	e.waitingTokens += int64(s.numTokens())
	e.preempted++
	e.waiting.pushFront(slot)
}

// release drops the request's references to its blocks.
func (e *Engine) release(s *seq) {
	if err := e.pool.Release(s.blocks); err != nil {
		e.fail(err)
	}
	s.blocks = s.blocks[:0]
}

// fail records the first internal inconsistency; see Err.
func (e *Engine) fail(err error) {
	if e.err == nil {
		e.err = fmt.Errorf("instance %d: invariant violated: %w", e.id, err)
		if e.onFail != nil {
			e.onFail()
		}
	}
}

// OnFail registers f to be called once, when the engine records its first
// invariant violation (the error is then available from Err). A driver of
// many engines uses it to learn of a failure without polling every engine
// after every event. A nil f removes the hook.
func (e *Engine) OnFail(f func()) { e.onFail = f }

// Err returns the first invariant violation detected, if any. A non-nil
// error is a bug in the simulator, never a property of the workload.
func (e *Engine) Err() error { return e.err }

func cdiv(a, b int) int { return (a + b - 1) / b }
