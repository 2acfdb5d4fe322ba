package engine

import (
	"fmt"

	"github.com/servesim/servesim/internal/kv"
	"github.com/servesim/servesim/internal/metrics"
)

// seq is the engine-side state of one admitted request, kept in a flat,
// reusable slot so steady-state steps allocate nothing.
type seq struct {
	// Hot fields first: everything a step reads or writes for a request
	// that decodes one token fits the slot's first 64 bytes, so a step
	// touches one cache line of each request (the slot size is a multiple
	// of 64 bytes, see TestSlotLayout).
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
	started bool
	// redo: recomputing after a preemption, from then until the
	// recompute emits a token. The drafter proposes only after a step
	// that samples a token, so such a request holds no proposals and its
	// step is never a verification (even one token short of the end).
	redo      bool
	lastToken int64
	maxITL    int64
	// nblocks is how many KV blocks the request holds: blocks names the
	// first of them, and the rest are its anonymous tail (tail.go).
	nblocks int32
	// tailed: the request's last blocks are an anonymous tail, and its
	// next ones join it (tail.go).
	tailed bool
	_      [19]byte // the hot fields end the first cache line

	// Second line: what the decode lane's block events (lanefill.go),
	// its joining and leaving (lane.go) and committing a filled block read
	// besides the chained hashes.
	//
	// laneAt is the index in Engine.lane (-1: not a member); joinTick the
	// number of batches finished when it joined, due the batch it must be
	// explicit in, and order its admission order in the running set.
	laneAt int32
	// shared is how many leading blocks hash by content from the chain's
	// seed (all their token ids known), so another request may share them;
	// from the first block whose ids are unknown on, blocks are private:
	// only this request can ever hit them again (after a preemption). The
	// pool keeps them out of its shared index, tagged kv.Private(salt, i).
	shared   int32
	joinTick int64
	due      int64
	order    int64
	// owned[i] is the block that held private block i when the request
	// was last preempted (-1: none), where it may still be cached.
	owned      []kv.BlockID
	sharedDone bool // the block after the shared ones is known to be private
	// laneCommitter: a counted lane member (laneAlloc > 0) commits the
	// block it filled at each of its allocations (lanefill.go).
	laneCommitter bool
	// laneLateCommitter: a counted lane member commits at each of its
	// allocations but the first (every block it held was committed as it
	// joined).
	laneLateCommitter bool
	// laneAlloc, when > 0, makes the lane member a counted one: its first
	// counted allocation is at batch joinTick+laneAlloc, the next ones
	// every block's worth of batches after, all counted in the lane's
	// per-batch counts (Engine.laneCounts) instead of made member by member
	// (lanefill.go).
	laneAlloc int32

	// Lines 2 to 5: the record, on a line boundary so that its 240 bytes
	// take four lines, and the small cold fields after it in the last
	// one.
	rec metrics.Record
	// Links of the decode admission queue (stHandoff only; -1: none).
	qPrev, qNext int32
	loadEnd      int32 // blocks held once the load ends; swap-space blocks held when swapped
	prio         int32 // the request's priority (smaller: served first; priority policy)

	// Lines 6 and 7: the rest.
	blocks    []kv.BlockID // the named blocks (tail.go)
	salt      uint64
	hashes    []uint64 // chained hashes of the shared blocks, filled lazily
	inputIDs  []int32
	outputIDs []int32
	enqueued  int64   // time it joined this instance's waiting queue
	alpha     float64 // speculative decoding: the request's own acceptance rate
	loadStart int64   // start of its lower-tier load (stLoading) or swap copy
}

// The slot is 512 bytes, a multiple of 64, so that slots in their (large,
// page-aligned) array keep their hot fields in one cache line and their
// record in four; TestSlotLayout checks it. A field added to the slot
// must keep its size a multiple of 64 bytes (pad it with a trailing blank
// field, of nonzero size).

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
	stSwapOut                // preempted by swap: KV being copied to host, holds its blocks
	stSwapped                // KV in host swap space; in the waiting queue, no blocks
	stSwapIn                 // KV being copied back into blocks it holds
)

var stateNames = [...]string{"free", "waiting", "running", "done", "prefilled", "pinned", "handoff-queued", "reserved", "ready", "loading", "loaded", "swapping-out", "swapped", "swapping-in"}

// String returns the state's name, as error messages print it.
func (s state) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}
