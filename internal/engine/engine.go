package engine

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/servesim/servesim/internal/kv"
	"github.com/servesim/servesim/internal/perf"
)

// Engine is one serving instance.
//
// Its fields start with what every step reads or writes, in whole cache
// lines: in a cluster the instances step in turn, and an instance's lines
// have left the first-level cache by its next step, so a steady decode
// step (FinishSteady, BeginSteady) costs a miss per distinct line it
// touches. Its first five lines hold the scalars and slice headers such a
// step uses (the configuration's among them, copied at New, and the
// number of queued requests) and, last, what a step reads and writes of
// the batch in flight, which without pipeline parallelism is the
// engine's own (cur); the gap maxima with the batch come next, in two
// lines, then the result, whose two steady lines (StepResult) start 40
// bytes into it. The lines are those of an engine New allocates, which
// starts 8 bytes into a cache line (the allocator's header of an object
// of this size that holds pointers): the first line holds 56 bytes of
// fields. TestEngineLayout checks the placement.
type Engine struct {
	// flights are the batches in flight, oldest first; the backing array
	// keeps the finished ones (for reuse) after them: flightBuf, whose
	// first flight is cur, without pipeline parallelism.
	flights   []*flight
	tick      int64 // batches finished
	prevEnd   int64 // end of the latest finished batch
	nextID    int64
	stepStart int64 // start of the latest batch

	// A line of its own with what a P/D placement reads of every decode
	// instance (Running, Reserved, HandoffQueue).
	running      []int32
	lane         []int32 // slots of the decode lane's members (lane.go)
	hqLen        int32   // requests in the decode admission queue (below)
	reservedSeqs int32   // requests holding a decode reservation (reserved or ready)
	stepEnd      int64   // end of the latest batch

	// zombies are requests that finished (or, on a prefill instance,
	// completed their prompt) in the last step: with async scheduling they
	// keep their sequence slot and blocks until the next batch is formed.
	zombies []int32
	laneSum int64 // sum of laneOff
	// Minimum and maximum of laneOff; stale after an extreme member left.
	laneLo, laneHi int64
	pred           perf.Predictor

	sched      []scheduled
	err        error // the first invariant violation (fail)
	pool       *kv.Pool
	preempted  int32
	maxBatched int32 // cfg.MaxNumBatchedTokens
	blockSize  int32 // cfg.BlockSize
	ppN        int32 // pipeline stages, at least 1 (pp)

	// queued is the number of requests in the waiting, ready and
	// swapped queues (kept at their pushes and pops), read at every step.
	queued    int32
	justEnded bool // a step ended and no batch has been formed since
	// resultDirty: the result holds a field a steady step leaves alone
	// (FinishSteady) set to other than its zero.
	resultDirty bool
	laneStale   bool
	recount     bool // the batch's aggregates must be recounted (rebatch)
	// noLane: the lane is off, by configuration (laneRuledOut) or as a
	// test's reference (every request explicit).
	noLane   bool
	spec     bool // speculative decoding (cfg.Spec.K > 0)
	checkInv bool // cfg.CheckInvariants
	caching  bool // cfg.PrefixCaching
	prefill  bool // cfg.Role == Prefill
	asyncOn  bool // async (cfg.AsyncScheduling without pipeline parallelism)
	slowOn   bool // slow is neither 0 nor 1
	hybridOn bool // cfg.Local.Groups > 0 (hybrid)
	// cur is the flight without pipeline parallelism (the first with
	// it): what finishing and launching a batch read and write of it
	// ends the hot lines, so that a steady step touches no flight line.
	cur flight

	flightBuf  [1]*flight
	slow       float64  // scales every step's time (a straggler, fault.go); 0 or 1: none
	formBudget int32    // token budget left by the last Form (invariant check only)
	_          [28]byte // the gap maxima from the start of a line (TestEngineLayout)

	gaps    gapMax // gaps between the last laneWindow batch ends
	batch   perf.Batch
	_       [24]byte // the result's steady lines from a line's start (TestEngineLayout)
	result  StepResult
	waiting waitQueue
	// firstSched is FirstScheduled of the batch being formed (prefill
	// role), in a line with ready and the copies of the configuration's
	// limits, which every general Form reads.
	firstSched  []int64
	ready       deque // transferred requests waiting for the next batch
	maxSeqs     int32 // cfg.MaxNumSeqs
	longPrefill int32 // cfg.LongPrefillTokenThreshold
	swap        swapState

	cfg        Config
	formDraft  int64         // proposer time of the batch formed by Begin (speculative decoding)
	_          [48]byte      // the counts from the start of a line (TestEngineLayout)
	laneCounts laneCountRing // the counted lane members' block events (lanefill.go)
	_          [60]byte      // the records from the start of a line (TestEngineLayout)
	// laneTicks[i]: the decode lane's record of batch i (mod laneWindow):
	// its members due and its members with named blocks whose next block
	// it allocates (ticklist.go).
	laneTicks [laneWindow]laneTick
	tickNodes tickLists // the nodes of laneTicks' lists

	id        int32
	slots     []seq
	freeSlots []int32
	stages    []int64 // time each pipeline stage can take the next batch

	// P/D handoff state.
	// Decode admission queue, FCFS, as a list linked through the slots so
	// that withdrawing a request from its middle costs O(1).
	hqHead, hqTail int32 // -1 when empty (its length, hqLen, is with the hot fields)
	pinned         int   // distinct blocks pinned by prefilled requests
	// pinRefs[b] is how many prefilled requests pin block b (a shared
	// prefix block is pinned by each of them but counted once in pinned).
	pinRefs []int32
	// Scratch of the invariant check's distinct-block recount: block b was
	// seen in the current walk when checkMark[b] == checkGen.
	checkMark []uint32
	checkGen  uint32

	laneOff []int64 // parallel to lane: computed - tick at joining
	// laneOrd is the largest admission order of a member; stale (an
	// upper bound) after the member holding it left.
	laneOrd      int64
	laneOrdStale bool
	laneBuf      []int32 // scratch of leaveDue and laneAllocate
	nextOrder    int64   // admission-order stamp of the next running request
	mergeBuf     []int32 // scratch of mergeRunning

	waitingTokens int64        // tokens the waiting queue must compute
	probe         []uint64     // scratch hashes for PrefixHitTokens
	hits          []kv.BlockID // scratch: blocks of the last prefix match
	refund        int32        // tokens of preempted requests taken out of the batch being formed
	unseen        []int32      // waiting requests not yet visible to the batch being formed (priority policy)
	scratch       []int32
	tiers         Tiers // KV tiers below the GPU; nil: none
	loading       int   // requests in stLoading
	checks        int   // slot walks of the invariant check (invariants.go)
	checkDebt     int   // slot visits the invariant check owes

	// Speculative decoding (spec.go).
	specRand   *rand.Rand // acceptance draws, created on first use
	draftBatch perf.Batch // scratch of draftNs
	specTotal  SpecStats
	// preemptions counts every preemption (recompute or swap) on this
	// instance, for the check that no request record loses one.
	preemptions int64
	// loc[slot] is what the local KV cache groups hold for the request
	// in slot (hybrid.go; empty without them).
	loc []localHold
}

// laneCount is what the counted lane members do when one batch is formed:
// how many allocate a block, how many of those commit the block they
// filled, and how many are a late committer's first allocation, which
// commits nothing (lanefill.go).
type laneCount struct {
	allocs, commits, firsts int32
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
	e := &Engine{cfg: cfg, id: int32(id), pred: pred, pool: pool, scratch: make([]int32, cfg.BlockSize), hqHead: -1, hqTail: -1}
	e.initHot()
	e.waiting.prio = cfg.PriorityScheduling
	e.spec = cfg.Spec.K > 0
	e.noLane = e.laneRuledOut()
	return e, nil
}

// initHot sets the per-step copies of the configuration and points the
// flights at the engine's own backing array (New, Reset).
func (e *Engine) initHot() {
	e.flightBuf[0] = &e.cur
	e.flights = e.flightBuf[:0]
	e.maxBatched, e.blockSize = int32(e.cfg.MaxNumBatchedTokens), int32(e.cfg.BlockSize)
	e.ppN, e.checkInv = int32(max(e.cfg.PipelineParallel, 1)), e.cfg.CheckInvariants
	e.caching, e.prefill = e.cfg.PrefixCaching, e.cfg.Role == Prefill
	e.asyncOn = e.cfg.AsyncScheduling && e.pp() == 1
	e.hybridOn = e.cfg.Local.Groups > 0
	// (Counts of running requests stay far below 2^31: the clamp changes
	// no comparison. The threshold's conversion is form's own.)
	e.maxSeqs, e.longPrefill = int32(min(e.cfg.MaxNumSeqs, math.MaxInt32)), int32(e.cfg.LongPrefillTokenThreshold)
	e.laneCounts.mask = uint8(e.laneCountSpan() - 1)
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
func (e *Engine) pp() int { return int(e.ppN) }

// async reports whether batches are formed one step ahead (never with
// pipeline parallelism).
func (e *Engine) async() bool { return e.asyncOn }

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
	return e.numRunning() > 0 || e.queued > 0
}

// fail records the first internal inconsistency (a bug in the simulator,
// never a property of the workload). The engine is then broken: the
// method that detected it, and every method with an error result called
// after, returns it.
func (e *Engine) fail(err error) {
	if e.err == nil {
		e.err = fmt.Errorf("instance %d: invariant violated: %w", e.id, err)
	}
}

func cdiv(a, b int) int { return (a + b - 1) / b }
