package cluster

import (
	"fmt"

	"github.com/servesim/servesim/internal/kv"

	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// This file holds the P/D handoff as an explicit state machine: the state
// type, the table of legal edges (docs/handoff.md draws the same diagram; a
// test compares the two), and the one transition function through which
// every state change goes. The transition keeps the per-instance counters
// that make placement and admission decisions O(decode instances).

// hstate is where a request stands in its P/D handoff.
type hstate uint8

const (
	hNew             hstate = iota // arrived, not yet placed
	hPrefilling                    // queued or computing on the prefill instance
	hAwaitReserve                  // reserve: in a decode admission queue before its prefill
	hReservedPrefill               // reserve: decode blocks held; prompt on the prefill instance; KV streaming
	hPushing                       // push: KV on the wire to the decode receive buffer or host memory
	hQueued                        // prefilled, in a decode admission queue (KV pinned, buffered or spilled)
	hTransfer                      // decode blocks reserved, KV on the link (or copied from host memory)
	hDecoding                      // KV on the decode instance; decoding there
	hDone                          // terminal: finished or failed
	numHStates
)

var hstateNames = [numHStates]string{"new", "prefilling", "await-reserve", "reserved-prefill", "pushing", "queued", "transfer", "decoding", "done"}

// String returns the state's name as docs/handoff.md and error messages
// spell it.
func (s hstate) String() string {
	if s < numHStates {
		return hstateNames[s]
	}
	return fmt.Sprintf("hstate(%d)", uint8(s))
}

// edge is one legal handoff transition.
type edge struct{ from, to hstate }

// edges is the handoff state diagram. docs/handoff.md lists the same
// edges; TestHandoffDiagramMatchesDocs keeps the two equal.
var edges = [...]edge{
	{hNew, hPrefilling},               // pull, reject, push, eager: prefill first
	{hNew, hAwaitReserve},             // reserve: wait for decode blocks first
	{hAwaitReserve, hReservedPrefill}, // decode blocks reserved: prefill and stream start
	{hReservedPrefill, hTransfer},     // prefill ended, stream still on the link
	{hReservedPrefill, hDecoding},     // prefill ended after the stream
	{hPrefilling, hQueued},            // pull, reject, eager: prefilled, queued at a decode instance
	{hPrefilling, hPushing},           // push: KV sent to the receive buffer or host memory
	{hPrefilling, hPrefilling},        // push drop: buffer full, prompt recomputed
	{hPrefilling, hDone},              // push drop: can never fit the buffer, or re-prefill limit
	{hPushing, hQueued},               // pushed KV arrived; queued for admission
	{hQueued, hQueued},                // retry: moved to another decode instance
	{hQueued, hTransfer},              // decode blocks reserved; transfer starts
	{hQueued, hPrefilling},            // lease expired: re-prefill
	{hQueued, hDone},                  // lease expired (on_expiry fail, or re-prefill limit)
	{hTransfer, hDecoding},            // KV arrived on the decode instance (or failed to load: recomputed there)
	{hTransfer, hQueued},              // decode instance lost: another one takes the handoff
	{hTransfer, hPrefilling},          // prefill instance lost with the KV: re-prefill
	{hTransfer, hDone},                // KV load failed (fail policy), or no live instance left
	{hDecoding, hPrefilling},          // decode instance lost: sent again from scratch (faults.on_loss retry)
	{hDecoding, hDone},                // finished (or failed) on the decode instance
}

// legal[from][to] says whether an edge exists.
var legal = func() (t [numHStates][numHStates]bool) {
	for _, e := range edges {
		t[e.from][e.to] = true
	}
	return t
}()

// hand is the handoff of one request in P/D mode. Its state is st; the
// resources it holds (pinned KV on p, a receive-buffer share or spilled
// KV on d, a decode slot) are tracked alongside and checked against the
// state by checkPD.
//
// A hand is 64 bytes, the handCore and the body pointer (one cache line:
// 64-byte objects are 64-byte aligned by their size class), and holds all
// that transition and a finished request's step end read, the request's
// id among it. What only the way to the decode batch needs, the request
// itself included, is in a handBody. A request whose KV reaches its
// decode instance gives its hand back (retire) unless an instance loss, a
// KV tier or the reserve policy may still read it: the hands and bodies
// are reused while still in the caches, and the table holds only the
// requests on their way to a decode batch.
type hand struct {
	handCore
	*handBody
}

// handCore is the part of a hand that transition reads.
type handCore struct {
	st    hstate
	holds holding // where its KV is and which copies are under way (holding.go)
	// loadFail marks a transfer drawn to fail to load.
	loadFail bool
	gen      int32 // invalidates stale lease and retry events
	pSlot    int32 // slot on the prefill instance (pinned KV)
	dSlot    int32 // slot on the decode instance
	// qBlocks and demand fit an int32: a prompt has at most
	// math.MaxInt32 tokens (workload), so at most as many blocks.
	qBlocks int32 // blocks counted in pd.queuedBlocks[d]
	demand  int32 // blocks counted in pd.demand
	p, d    int   // prefill and decode instances (d = -1 before placement)
	since   int64 // when it entered st
	// id is the request's id (req.ID), kept here for what reads only the
	// core (the finish, describe, checkPD).
	id int64
}

// handBody is the part of a hand that a decoding request no longer needs.
// newHand writes all of it (a recycled body is not cleared first).
type handBody struct {
	rec metrics.Record // as of the prefill instance
	bodyFields
	// The padding makes a body 512 bytes, a size class of line-aligned
	// objects, the request its last two lines: no two bodies share a line.
	_   [56]byte
	req workload.Request
}

// bodyFields is a handBody but for its record.
type bodyFields struct {
	prefillEnd int64
	// owned carries, across a re-prefill, where the prefill instance holds
	// the request's private blocks (engine.PrivateBlocks).
	owned      []kv.BlockID
	queuedAt   int64 // when it joined the current decode queue
	bufBlocks  int   // push: receive-buffer blocks held on d
	hostBytes  int64 // holdOffloaded: bytes held in p's host memory
	offloadTag int64 // holdOffloading: the copy's tag
	// offTicket: with holdOffWait, the entry of its node's deferred
	// offload queue that is its place (a retry keeps the place; leaving
	// the decode queues drops it).
	offTicket int64
	bytes     int64 // transfer bytes per stream
	// lossRetries counts how often the request was sent again after an
	// instance loss.
	lossRetries int
}

// TransitionError reports an illegal handoff transition; it is an
// internal invariant violation and ends the run.
type TransitionError struct {
	Request  int64
	From, To string
	At       int64
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("cluster: invariant violated: request %d: illegal handoff transition %s -> %s at t=%d ns", e.Request, e.From, e.To, e.At)
}

// transition moves h to state to on decode instance d at time now,
// refusing edges not in the diagram and time going backwards, and keeps
// the per-instance counters.
func (s *Sim) transition(h *hand, to hstate, d int, now int64) error {
	from := h.st
	if !legal[from][to] {
		return &TransitionError{Request: h.id, From: from.String(), To: to.String(), At: now}
	}
	if now < h.since {
		return fmt.Errorf("cluster: invariant violated: request %d: handoff %s -> %s at t=%d ns, before it entered %s at t=%d ns",
			h.id, from, to, now, from, h.since)
	}
	p := s.pd
	if h.qBlocks != 0 {
		p.queuedBlocks[h.d] -= int(h.qBlocks)
		h.qBlocks = 0
	}
	p.demand -= int(h.demand)
	h.demand = 0
	h.st, h.d, h.since = to, d, now
	if to != hQueued {
		h.holds.drop(holdOffWait) // the waiting offload's entry is now stale
	}
	switch to {
	case hQueued, hAwaitReserve:
		h.qBlocks = int32(s.promptBlocks(h, d))
		p.queuedBlocks[d] += int(h.qBlocks)
	}
	switch to {
	case hQueued, hPrefilling, hPushing:
		h.demand = int32(p.demandBlocks(&h.req))
		p.demand += int(h.demand)
	}
	if p.onTransition != nil {
		p.onTransition(h, from, now)
	}
	return nil
}

// promptBlocks is the number of KV blocks of h's prompt on instance d.
func (s *Sim) promptBlocks(h *hand, d int) int {
	bs := int(s.pd.inst[d].blockSize)
	return (h.req.InputTokens + bs - 1) / bs
}

// demandBlocks is a prompt's size in blocks of the first decode instance,
// the unit of the reject policy's demand counter.
func (p *pd) demandBlocks(r *workload.Request) int {
	return (r.InputTokens + p.demandBS - 1) / p.demandBS
}

// newBody returns a hand body, recycled (as it was) or new.
func (p *pd) newBody() *handBody {
	if n := len(p.bodies); n > 0 {
		b := p.bodies[n-1]
		p.bodies = p.bodies[:n-1]
		return b
	}
	return new(handBody)
}

// freeBody takes h's body away, recycling it for newBody.
func (p *pd) freeBody(h *hand) {
	if b := h.handBody; b != nil {
		p.bodies = append(p.bodies, b)
	}
	h.handBody = nil
}

// retires reports whether a hand whose KV has reached its decode
// instance is given back (retire). It is kept when something may read it
// again: an instance loss (a decoding request is sent again from scratch,
// or ends with its prefill record), a KV tier (the prefill record's tier
// fields), the reserve policy (whose decode record took only some of the
// prefill record's fields, mergePrefill), or a test that keeps hands or
// traces every transition (decoding -> done among them).
func (s *Sim) retires() bool {
	p := s.pd
	return !p.keepHands && p.onTransition == nil && p.cfg.Policy != Reserve && s.ft == nil && s.tiers == nil
}

// retire gives back h, whose KV has just reached its decode instance
// (state decoding), when retires allows it: the request decodes there as
// a colocated one does, out of the table (its finish and an abort find no
// handoff; liveRecords takes the decode instance's record, a later
// snapshot of the hand's), and the hand and its body serve the next
// requests while still in the caches. With the invariant checks on, its
// decode slot is noted for checkPD while it may still be ready (counted
// among the decode instance's reservations).
func (s *Sim) retire(h *hand) {
	if !s.retires() {
		return
	}
	p := s.pd
	if s.checks {
		p.retired = append(p.retired, retiredSlot{id: h.id, d: h.d, slot: h.dSlot})
	}
	p.hands.del(h.id)
	p.freeHand(h)
}

// retiredSlot is the decode slot of a retired hand (pd.retired).
type retiredSlot struct {
	id   int64
	d    int
	slot int32
}
