package cluster

import (
	"fmt"

	"github.com/servesim/servesim/internal/engine"
)

// PolicyName names a prefill -> decode handoff protocol in a PDConfig.
type PolicyName uint8

// Handoff policies (see docs/handoff.md). Each is implemented by a Policy
// in its own file.
const (
	// Pull keeps the KV pinned on the prefill instance while the request
	// waits in the decode instance's admission queue; the decode side
	// reserves blocks and a slot, pulls the KV, and the prefill side frees
	// it when the transfer ends.
	Pull PolicyName = iota
	// Reserve has the decode instance reserve blocks (plus headroom) before
	// the prefill starts; the KV streams to it while the prefill runs, at
	// most as fast as the prefill produces it.
	Reserve
	// Reject is Pull with admission control at arrival: a request is
	// rejected when the predicted prefill queueing time or the decode KV
	// demand exceeds its threshold.
	Reject
	// Push sends the KV at prefill end into a bounded receive buffer on the
	// decode instance; overflow spills to the decode host's memory (copied
	// back over PCIe at admission) or is dropped and re-prefilled.
	Push
	// Eager allocates on the decode instance at prefill end, the legacy
	// behaviour; when the blocks are not free, the run stops with a report.
	Eager
)

// Policies lists the policy names in order.
var Policies = []string{"pull", "reserve", "reject", "push", "eager"}

// String returns the policy's name.
func (p PolicyName) String() string {
	if int(p) < len(Policies) {
		return Policies[p]
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// Policy is one handoff protocol. The coordinator calls it at the two
// points where protocols differ; everything else (placement, admission
// queues, transfers, leases, retries) is shared.
type Policy interface {
	// start begins the handoff of a request that will be handed off (state
	// new, prefill instance h.p chosen).
	start(s handoffSim, h *hand, now int64) error
	// prefilled continues it once its prompt is computed on h.p.
	prefilled(s handoffSim, h *hand, now int64) error
}

// admitter is the optional ability of a policy to refuse a request at
// arrival; it returns the reason, or "" to admit.
type admitter interface {
	admission(s handoffSim, h *hand, now int64) string
}

// handoffSim is what a policy asks of the simulation: the shared steps of
// every protocol. *Sim implements it; the policies' tests drive them on a
// fake that records the steps (policy_dd_test.go).
type handoffSim interface {
	// config is the handoff configuration.
	config() *PDConfig
	// transition moves h to state to on decode instance d.
	transition(h *hand, to hstate, d int, now int64) error
	// startPrefill queues h on its prefill instance.
	startPrefill(h *hand, now int64) error
	// placeDecode chooses h's decode instance (not exclude).
	placeDecode(h *hand, exclude int) int
	// enqueueDecode queues prefilled h for admission on decode instance d.
	enqueueDecode(h *hand, d int, now int64) error
	// awaitReserve queues h on decode instance d before its prefill
	// (reserve), setting h.dSlot.
	awaitReserve(h *hand, d int, now int64)
	// reserve admits what decode instance d can take now.
	reserve(d int, now int64) error
	// seqSlotFree reports whether decode instance d has a sequence slot.
	seqSlotFree(d int) bool
	// forceReserve reserves h's blocks on h.d at once (eager), or reports
	// the blocks needed and free.
	forceReserve(h *hand, now int64) (res engine.Reservation, needed, free int, ok bool, err error)
	// reserved continues h once its decode blocks are reserved.
	reserved(h *hand, res engine.Reservation, now int64) error
	// stopRun stops the run: h's needed blocks are not free (eager).
	stopRun(h *hand, needed, free int, now int64) error
	// pinPrefill notes h's KV pinned on its prefill instance and merges
	// its prefill record into the decode record (reserve).
	pinPrefill(h *hand, now int64)
	// startStream puts h's KV stream on the link (reserve).
	startStream(h *hand, now int64) error
	// transferDone ends h's transfer: it joins the decode batch.
	transferDone(h *hand, now int64) error
	// promptBlocks is h's prompt KV in blocks of decode instance d.
	promptBlocks(h *hand, d int) int
	// transferBytes is the bytes per stream of blocks of h's KV to d.
	transferBytes(h *hand, d, blocks int) int64
	// localBlocks is how many blocks of d a hybrid model's window-bounded
	// layers add to blocks full-attention blocks of h's KV crossing to d
	// (0 for other models).
	localBlocks(h *hand, d, blocks int) int
	// takeBuffer takes blocks of d's push receive buffer if free.
	takeBuffer(d, blocks int) bool
	// startFlows puts h's KV on the network (rate 0: uncapped).
	startFlows(h *hand, now int64, bytes int64, rate float64) error
	// reprefill recomputes h's prompt after its KV was lost.
	reprefill(h *hand, now int64, why string) error
	// failHand ends h as failed with reason.
	failHand(h *hand, now int64, reason string) error
	// prefillQueueNs is the predicted queueing time of prefill instance
	// p (0 when its prefill rate is unknown).
	prefillQueueNs(p int) float64
	// decodeDemand is the decode KV demand with h admitted, and the
	// decode pools' capacity, in blocks.
	decodeDemand(h *hand) (demand, capacity float64)
}

// The handoffSim steps *Sim has no other use for.

func (s *Sim) config() *PDConfig { return &s.pd.cfg }

func (s *Sim) awaitReserve(h *hand, d int, now int64) {
	h.dSlot = s.engines[d].Enqueue(&h.req, h.rec, now)
	s.noteLoad(d)
	h.queuedAt = now
}

func (s *Sim) seqSlotFree(d int) bool { return s.engines[d].SeqSlotFree() }

func (s *Sim) forceReserve(h *hand, now int64) (engine.Reservation, int, int, bool, error) {
	res, needed, free, ok, err := s.engines[h.d].ForceReserve(h.dSlot, now)
	s.noteLoad(h.d)
	return res, needed, free, ok, err
}

func (s *Sim) stopRun(h *hand, needed, free int, now int64) error {
	terminal, _ := s.Progress()
	s.pd.stopped = &StopReport{Request: h.req.ID, Instance: h.d, Needed: needed, Free: free, At: now, Completed: terminal}
	return s.pd.stopped
}

func (s *Sim) pinPrefill(h *hand, now int64) {
	h.holds.set(holdPinned)
	s.trackPinned(h.p, now)
	s.mergePrefill(s.engines[h.d].Record(h.dSlot), h)
}

func (s *Sim) takeBuffer(d, blocks int) bool {
	if s.pd.bufFree[d] < blocks {
		return false
	}
	s.pd.bufFree[d] -= blocks
	return true
}

func (s *Sim) prefillQueueNs(p int) float64 {
	node := s.pd.nodes[p]
	if node.PrefillTokensPerSec <= 0 {
		return 0
	}
	return float64(s.engines[p].WaitingTokens()) / node.PrefillTokensPerSec * 1e9
}

func (s *Sim) decodeDemand(h *hand) (demand, capacity float64) {
	p := s.pd
	for _, d := range p.decode {
		if s.isDown(d) {
			continue // a lost instance's capacity is gone
		}
		e := s.engines[d]
		capacity += float64(e.Pool().Capacity())
		demand += float64(e.Pool().Used())
	}
	return demand + float64(p.demand+p.demandBlocks(&h.req)), capacity
}

// setupper is the optional ability of a policy to prepare per-instance
// state of its own when P/D mode is enabled on n instances.
type setupper interface {
	setup(p *pd, n int) error
}

// newPolicy returns the implementation of a policy name.
func newPolicy(n PolicyName) (Policy, error) {
	switch n {
	case Pull:
		return pullPolicy{}, nil
	case Reserve:
		return reservePolicy{}, nil
	case Reject:
		return rejectPolicy{}, nil
	case Push:
		return pushPolicy{}, nil
	case Eager:
		return eagerPolicy{}, nil
	}
	return nil, fmt.Errorf("cluster: unknown handoff policy %d", n)
}
