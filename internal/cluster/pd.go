package cluster

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/internal/des"
	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/link"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// PDConfig configures disaggregated serving. Durations are ns.
type PDConfig struct {
	Policy    PolicyName
	Placement Placement
	// SkipAhead lets a decode instance admit later requests past a head
	// request that does not fit (default FCFS, head-of-line blocking).
	SkipAhead bool
	// Lease bounds how long pinned KV is held on the prefill instance;
	// with Heartbeat the lease is renewed while the request sits in the
	// admission queue of a live decode instance, so it never expires there.
	Lease     int64
	Heartbeat bool
	// ExpiryFails ends a request whose lease expired as failed instead of
	// re-prefilling it.
	ExpiryFails bool
	// RetryAfter is, for the retry placement, how long a request waits in
	// one decode queue before moving to another (keeping its pinned KV).
	RetryAfter int64
	// Reject thresholds: predicted prefill queueing time, and decode KV
	// demand as a fraction of the decode pool (0 disables a check).
	MaxPrefillQueue     int64
	MaxDecodeKVFraction float64
	// Push: receive buffer per decode instance in blocks, whether overflow
	// spills to host memory (else it is dropped and re-prefilled), and the
	// host-to-device bandwidth in bytes/s for spilled KV.
	PushBufferBlocks []int
	PushSpill        bool
	HostBandwidth    float64
	// LocalPrefillBelow enables conditional disaggregation: a request whose
	// prompt, less the prefix the chosen decode instance already caches, is
	// shorter than this many tokens is prefilled on that decode instance,
	// with no handoff (0: always disaggregate).
	LocalPrefillBelow int
	// OffloadPinnedAfter (pull, with KV tiers): KV pinned on a prefill
	// instance that has waited this long (ns) since its prefill ended
	// moves to the node's host memory (handoff_offload.go); 0: never.
	OffloadPinnedAfter int64
	// OffloadPinnedMax bounds the bytes of handoff KV offloaded to one
	// node's host memory at once (copies in flight included); an offload
	// that would exceed it waits, in FIFO order, until offloaded KV is
	// released. 0: unbounded.
	OffloadPinnedMax int64
	// MaxReprefills bounds how many times one request's prompt is
	// recomputed after its KV was lost (lease expiry, push drop); the next
	// loss fails the request with the reason. 0 allows none.
	MaxReprefills int
}

// DefaultMaxReprefills is the scenario default of handoff.max_reprefills.
const DefaultMaxReprefills = 3

// Node is how an instance attaches to the KV network.
type Node struct {
	Endpoints []link.EndpointID // one per tensor-parallel rank
	// KVBytesPerToken is the KV size of one token on one rank.
	KVBytesPerToken int64
	// LocalKVBytesPerToken is the part of KVBytesPerToken in a hybrid
	// model's window-bounded layers, of which a handoff moves only the
	// blocks the decode side needs (engine.LocalTransferBlocks); 0 for
	// other models.
	LocalKVBytesPerToken int64
	// Layers is the number of transformer layers.
	Layers int
	// PrefillTokensPerSec estimates the instance's prefill throughput: the
	// reject policy's queueing prediction, and the rate at which the
	// reserve policy's KV stream may leave the instance.
	PrefillTokensPerSec float64
}

// pdInst is what a handoff reads of one instance's Node and engine
// configuration, 64 bytes (one cache line, where a Node and the per-field
// arrays took several).
type pdInst struct {
	eps       []link.EndpointID // Node.Endpoints
	kvFull    int64             // KV bytes per token outside the window-bounded layers
	kvLocal   int64             // Node.LocalKVBytesPerToken
	blockSize int64
	isMixed   bool
	_         [15]byte
}

// pd is the P/D coordinator state of a Sim.
type pd struct {
	cfg    PDConfig
	pol    Policy
	adm    admitter // nil unless the policy refuses requests at arrival
	nodes  []Node
	net    *link.Network
	netGen int64
	netAt  int64
	done   []link.Completion
	hands  idTable[*hand]
	free   []*hand     // recycled hands
	bodies []*handBody // recycled hand bodies
	// keepHands turns retire off (tests compare runs with and without
	// it).
	keepHands bool
	// retired lists, with the invariant checks on, the decode slots of
	// retired hands that may still be ready (checkPD).
	retired []retiredSlot
	prefill []int // instances that compute prompts (prefill or mixed)
	decode  []int
	// Per instance, what the hot paths ask of its configuration
	// (engine.Config returns a copy of the whole struct).
	isDecode []bool
	inst     []pdInst
	rr       int
	resv     []engine.Reservation
	bufFree  []int     // push: free receive-buffer blocks per instance
	pins     []pinStat // per instance, one cache line for two
	stopped  *StopReport

	// Counters kept by transition, so that decisions cost O(decode
	// instances) whatever the backlog.
	queuedBlocks []int // per instance: prompt blocks of hands queued or awaiting reservation there
	demand       int   // prompt blocks (in demandBS units) of hands prefilling, pushing or queued
	demandBS     int
	// mixed says some instance is mixed: pdArrive reads it before the
	// instance's line (pdInst), which most arrivals need not touch.
	mixed bool
	loads decodeLoads // the least-loaded placement's counts (placement.go)

	// onTransition, if set, sees every legal transition (tests trace it).
	onTransition func(h *hand, from hstate, now int64)
}

// StoppedReason is the failure reason of the requests in flight when the
// eager policy stopped a run.
const StoppedReason = "stopped: the eager handoff policy ended the run"

// StopReport explains why the eager policy stopped a run.
type StopReport struct {
	Request   int64
	Instance  int
	Needed    int // blocks
	Free      int // blocks
	At        int64
	Completed int64 // requests that had ended when the run stopped
}

func (r *StopReport) Error() string {
	return fmt.Sprintf("eager handoff stopped the run at t=%.3f s: request %d needs %d KV blocks on decode instance %d, which has %d free (%d requests had ended)",
		float64(r.At)/1e9, r.Request, r.Needed, r.Instance, r.Free, r.Completed)
}

// Event kinds of the P/D coordinator.
const (
	evNet     int32 = 10 + iota // the KV network has an event due (Arg = generation)
	evLease                     // Arg = request id, Target = generation
	evRetry                     // Arg = request id, Target = generation
	evHost                      // push spill copied back to the device: Arg = request id
	evOffload                   // pinned KV due to move to host: Arg = request id, Target = generation
)

// setPD turns the simulation into a disaggregated one (Config.PD,
// validated): nodes describe every instance's network attachment
// (index-aligned with the engines).
func (s *Sim) setPD(cfg PDConfig, nodes []Node, net *link.Network) error {
	pol, err := newPolicy(cfg.Policy)
	if err != nil {
		return err
	}
	p := &pd{cfg: cfg, pol: pol, nodes: nodes, net: net}
	p.adm, _ = pol.(admitter)
	n := len(s.engines)
	p.pins = make([]pinStat, n)
	p.queuedBlocks, p.isDecode, p.inst = make([]int, n), make([]bool, n), make([]pdInst, n)
	for i, e := range s.engines {
		cfg := e.Config()
		p.inst[i] = pdInst{eps: nodes[i].Endpoints, kvFull: nodes[i].KVBytesPerToken - nodes[i].LocalKVBytesPerToken,
			kvLocal: nodes[i].LocalKVBytesPerToken, blockSize: int64(cfg.BlockSize), isMixed: cfg.Role == engine.Mixed}
		p.mixed = p.mixed || cfg.Role == engine.Mixed
		switch cfg.Role {
		case engine.Decode:
			p.decode = append(p.decode, i)
			p.isDecode[i] = true
		default:
			p.prefill = append(p.prefill, i)
		}
	}
	p.demandBS = s.engines[p.decode[0]].Config().BlockSize
	p.loads.setup(p.cfg.Placement, s.engines, p.decode)
	if su, ok := pol.(setupper); ok {
		if err := su.setup(p, n); err != nil {
			return err
		}
	}
	s.pd = p
	return nil
}

// Stopped returns the eager policy's stop report, if the run stopped.
func (s *Sim) Stopped() *StopReport {
	if s.pd == nil {
		return nil
	}
	return s.pd.stopped
}

// LinkUtilisation returns the mean egress and ingress utilisation of the
// NICs of instance i at the current time.
func (s *Sim) LinkUtilisation(i int) float64 {
	if s.pd == nil {
		return 0
	}
	eps := s.pd.nodes[i].Endpoints
	u := 0.0
	for _, ep := range eps {
		eg, in, err := s.pd.net.Utilisation(ep)
		if err != nil {
			return math.NaN() // unreachable: New checked every endpoint (Config.Validate)
		}
		u += math.Max(eg, in)
	}
	return u / float64(len(eps))
}

// pdUnfit returns why a request can never be served in P/D mode: no
// decode instance can ever admit it (prompt plus output, and prompt plus
// the decode headroom), or no prefill-capable instance can hold it. When it
// returns "", s.candidates holds the prefill-capable instances that can
// take req.
func (s *Sim) pdUnfit(req *workload.Request) string {
	p := s.pd
	f := s.bounds()
	if f.fitsAllDecode(req) && f.fitsAllPrefill(req) {
		s.candidates = append(s.candidates[:0], p.prefill...)
		if s.ft != nil {
			s.liveCandidates()
		}
		return ""
	}
	reason := ""
	fitsD := false
	for _, d := range p.decode {
		if why := s.engines[d].HandoffUnfit(req); why == "" {
			fitsD = true
			break
		} else if reason == "" {
			reason = why
		}
	}
	if !fitsD {
		return reason
	}
	if s.prefillCandidates(req) {
		return ""
	}
	if s.ft != nil {
		// Some prefill instance fits but none is alive: the caller finds
		// no candidate.
		for _, i := range p.prefill {
			if s.prefillUnfit(req, i) == "" {
				return ""
			}
		}
	}
	return s.prefillUnfit(req, p.prefill[0])
}

// prefillUnfit is why prefill-capable instance i cannot take req: a
// prefill instance holds the prompt, a mixed one serves it whole.
func (s *Sim) prefillUnfit(req *workload.Request, i int) string {
	e := s.engines[i]
	if e.Config().Role == engine.Mixed {
		return e.Unfit(req)
	}
	prompt := *req
	prompt.OutputTokens = 1
	return e.Unfit(&prompt)
}

// prefillCandidates fills s.candidates with the prefill-capable instances
// that can take req and reports whether there is one.
func (s *Sim) prefillCandidates(req *workload.Request) bool {
	s.candidates = s.candidates[:0]
	for _, i := range s.pd.prefill {
		if !s.isClosed(i) && s.prefillUnfit(req, i) == "" {
			s.candidates = append(s.candidates, i)
		}
	}
	return len(s.candidates) > 0
}

// pdArrive places a request in P/D mode.
func (s *Sim) pdArrive(req *workload.Request, now int64) error {
	p := s.pd
	if why := s.pdUnfit(req); why != "" {
		rec := failedRecord(req, now, "unfit: "+why)
		return s.end(&rec, now)
	}
	// pdUnfit left the prefill candidates in s.candidates.
	if len(s.candidates) == 0 {
		rec := failedRecord(req, now, "instance lost: no live prefill instance can take the request")
		return s.end(&rec, now)
	}
	pi := s.candidates[0]
	s.ph.reset()
	if len(s.candidates) > 1 {
		pi = s.router.Route(req, s.candidates, view{s})
	}
	h := p.newHand(req, now)
	if s.reArriving {
		h.rec.Arrival = s.reArrival
	}
	h.p = pi
	if p.adm != nil {
		if why := p.adm.admission(s, h, now); why != "" {
			rec := h.rec
			rec.Outcome, rec.Reason = metrics.Rejected, why
			p.freeHand(h)
			return s.end(&rec, now)
		}
	}
	if p.mixed && p.inst[pi].isMixed {
		// A mixed instance serves the whole request: no handoff.
		s.seedHashes(pi, s.engines[pi].AddRecord(req, h.rec, now), req)
		p.freeHand(h)
		return s.kick(pi, now)
	}
	if p.cfg.LocalPrefillBelow > 0 {
		d := s.placeDecode(h, -1)
		if d < 0 {
			rec := h.rec
			rec.Outcome, rec.Reason = metrics.Failed, "instance lost: no live decode instance can admit the request"
			p.freeHand(h)
			return s.end(&rec, now)
		}
		e := s.engines[d]
		if req.InputTokens-e.PrefixHitTokens(req) < p.cfg.LocalPrefillBelow && e.Unfit(req) == "" {
			// Conditional disaggregation: prefilled and decoded on d.
			s.seedHashes(d, e.AddRecord(req, h.rec, now), req)
			p.freeHand(h)
			err := s.kick(d, now)
			s.noteLoad(d)
			return err
		}
	}
	p.hands.put(req.ID, h)
	s.hashesPlaced(req)
	return p.pol.start(s, h, now)
}

// newHand returns a hand for a newly arrived request (state new).
func (p *pd) newHand(req *workload.Request, now int64) *hand {
	var h *hand
	if n := len(p.free); n > 0 {
		h = p.free[n-1]
		p.free = p.free[:n-1]
	} else {
		h = new(hand)
	}
	// The hand's core is zero (new, or cleared by freeHand): only its
	// fields that start non-zero are set. The body, the request in it, is
	// written whole, without building a whole body to copy.
	h.st, h.since, h.d, h.pSlot, h.dSlot, h.id = hNew, now, -1, -1, -1, req.ID
	h.handBody = p.newBody()
	h.bodyFields = bodyFields{prefillEnd: -1}
	h.req = *req
	h.rec = metrics.NewRecord(req.ID, now)
	h.rec.Session, h.rec.InputTokens, h.rec.OutputTokens = req.Session, req.InputTokens, req.OutputTokens
	h.rec.Priority = req.Priority
	return h
}

// freeHand recycles a hand that is no longer in the table, its core
// cleared for newHand and its body recycled as it is (newHand writes a
// body whole).
func (p *pd) freeHand(h *hand) {
	p.freeBody(h)
	h.handCore = handCore{}
	p.free = append(p.free, h)
}

// startPrefill queues h's prompt on its prefill instance (state
// prefilling).
func (s *Sim) startPrefill(h *hand, now int64) error {
	if err := s.transition(h, hPrefilling, -1, now); err != nil {
		return err
	}
	return s.enqueuePrefill(h, now)
}

// enqueuePrefill adds h to its prefill instance's waiting queue.
func (s *Sim) enqueuePrefill(h *hand, now int64) error {
	h.pSlot = s.engines[h.p].AddRecord(&h.req, h.rec, now)
	if len(h.owned) > 0 { // a re-prefill: its earlier private blocks
		s.engines[h.p].RestorePrivate(h.pSlot, h.owned)
		h.owned = h.owned[:0]
	}
	return s.kick(h.p, now)
}

// prefilled handles a prompt computed on a prefill instance: its KV is
// pinned there until the handoff is over.
func (s *Sim) prefilled(f *engine.Prefilled, now int64) error {
	p := s.pd
	h := p.hands.get(f.Record.ID)
	if h == nil || (h.st != hPrefilling && h.st != hReservedPrefill) {
		st := "none"
		if h != nil {
			st = h.st.String()
		}
		return fmt.Errorf("cluster: invariant violated: request %d prefilled in handoff state %s", f.Record.ID, st)
	}
	h.rec = f.Record
	h.prefillEnd = now
	h.holds.set(holdPinned)
	s.trackPinned(h.p, now)
	return p.pol.prefilled(s, h, now)
}

// mergePrefill copies the prefill-side fields into the decode record. The
// decode side has preempted nothing yet (the request holds no running
// slot there), so the prefill side's count is the request's whole count:
// the decode record may already hold it (Enqueue copied h.rec).
func (s *Sim) mergePrefill(r *metrics.Record, h *hand) {
	r.PrefillInstance = h.rec.PrefillInstance
	r.Scheduled = h.rec.Scheduled
	r.Queued = h.rec.Queued
	r.CachedTokens = h.rec.CachedTokens
	r.Preemptions = h.rec.Preemptions
	r.PrefillEnd = h.rec.PrefillEnd
	r.Reprefills = h.rec.Reprefills
}

// enqueueDecode puts a prefilled request in decode instance d's admission
// queue (state queued) and arms its lease and retry timers.
func (s *Sim) enqueueDecode(h *hand, d int, now int64) error {
	p := s.pd
	if err := s.transition(h, hQueued, d, now); err != nil {
		return err
	}
	h.queuedAt = now
	h.dSlot = s.engines[d].Enqueue(&h.req, h.rec, now)
	s.noteLoad(d)
	h.gen++
	if !p.cfg.Heartbeat && p.cfg.Lease > 0 && h.holds.has(holdPinned) {
		if err := s.schedule(des.Event{At: max(now, satAdd(h.prefillEnd, p.cfg.Lease)), Kind: evLease, Arg: h.id, Target: h.gen}); err != nil {
			return err
		}
	}
	if err := s.armOffload(h, now); err != nil {
		return err
	}
	if p.cfg.Placement == RetryPlacement && p.cfg.RetryAfter > 0 && len(p.decode) > 1 {
		return s.schedule(des.Event{At: satAdd(now, p.cfg.RetryAfter), Kind: evRetry, Arg: h.id, Target: h.gen})
	}
	return nil
}

// reserve admits what decode instance d can take now.
func (s *Sim) reserve(d int, now int64) error {
	p := s.pd
	e := s.engines[d]
	if e.HandoffQueue() == 0 {
		// Nothing to admit: Reserve would return at once (most calls, one
		// after every decode step).
		s.noteLoad(d)
		return nil
	}
	var err error
	if p.resv, err = e.Reserve(now, p.cfg.SkipAhead, p.resv[:0]); err != nil {
		return err
	}
	for _, res := range p.resv {
		h := p.hands.get(res.ID)
		if h == nil {
			return fmt.Errorf("cluster: invariant violated: decode instance %d reserved for request %d, which has no handoff", d, res.ID)
		}
		var err error
		if h.st == hAwaitReserve {
			err = s.granted(h, res, now)
		} else {
			err = s.reserved(h, res, now)
		}
		if err != nil {
			return err
		}
	}
	s.noteLoad(d)
	return nil
}

// localBlocks is the blocks of d's local KV cache groups that arrive with
// blocks full-attention blocks of h's prompt.
func (s *Sim) localBlocks(h *hand, d, blocks int) int {
	e := s.engines[d]
	return e.Config().Local.Groups * e.LocalTransferBlocks(h.req.InputTokens, blocks)
}

// transferBytes is the per-stream size of moving blocks KV blocks.
func (s *Sim) transferBytes(h *hand, d, blocks int) int64 {
	from, bs := &s.pd.inst[h.p], s.pd.inst[d].blockSize
	local := int64(s.engines[d].LocalTransferBlocks(h.req.InputTokens, blocks))
	return int64(blocks)*bs*from.kvFull + local*bs*from.kvLocal
}

// reserved starts the transfer of a queued request whose decode blocks
// are now held.
func (s *Sim) reserved(h *hand, res engine.Reservation, now int64) error {
	p := s.pd
	if err := s.transition(h, hTransfer, h.d, now); err != nil {
		return err
	}
	r := s.engines[h.d].Record(res.Slot)
	s.mergePrefill(r, h)
	r.HandoffWait = now - h.prefillEnd
	r.CapacityWait = now - h.prefillEnd
	r.TransferStart = now
	switch {
	case h.holds.has(holdSpilled):
		// Push overflow: the KV waits in the decode host's memory and is
		// copied to the device over PCIe.
		bytes := h.bytes * int64(len(p.nodes[h.d].Endpoints))
		dur := int64(0)
		if p.cfg.HostBandwidth > 0 {
			dur = int64(math.Ceil(float64(bytes) / p.cfg.HostBandwidth * 1e9))
		}
		return s.schedule(des.Event{At: satAdd(now, dur), Kind: evHost, Arg: h.id, Target: h.gen})
	case h.bufBlocks > 0:
		// Push: the KV is already in the receive buffer on this device.
		p.bufFree[h.d] += h.bufBlocks
		h.bufBlocks = 0
		return s.transferDone(h, now)
	}
	h.bytes = s.transferBytes(h, h.d, res.TransferBlocks)
	h.loadFail = s.loadFails()
	return s.startFlows(h, now, h.bytes, 0)
}

// startFlows puts h's KV on the network: one flow per tensor-parallel
// rank of bytes each, each at most rate bytes/s (0: uncapped).
func (s *Sim) startFlows(h *hand, now int64, bytes int64, rate float64) error {
	p := s.pd
	from, to := p.inst[h.p].eps, p.inst[h.d].eps
	n := min(len(from), len(to))
	var err error
	if rate > 0 {
		_, err = p.net.StartParallelCapped(now, from[:n], to[:n], bytes, rate, h.id)
	} else {
		_, err = p.net.StartParallel(now, from[:n], to[:n], bytes, h.id)
	}
	if err != nil {
		return fmt.Errorf("cluster: request %d: KV transfer from instance %d to %d: %w", h.id, h.p, h.d, err)
	}
	return s.wakeNet()
}

// wakeNet schedules the network's next event.
func (s *Sim) wakeNet() error {
	p := s.pd
	at, ok := p.net.NextEvent()
	if !ok {
		return nil
	}
	p.netGen++
	p.netAt = at
	return s.schedule(des.Event{At: at, Kind: evNet, Arg: p.netGen})
}

// netEvent collects finished transfers.
func (s *Sim) netEvent(gen int64, now int64) error {
	p := s.pd
	if gen != p.netGen {
		return nil // superseded by a later wake-up
	}
	var err error
	if p.done, err = p.net.Advance(now, p.done[:0]); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	for _, c := range p.done {
		h := p.hands.get(c.Tag)
		if h == nil {
			return fmt.Errorf("cluster: invariant violated: transfer of unknown request %d", c.Tag)
		}
		var err error
		switch h.st {
		case hPushing:
			err = s.pushArrived(h, now)
		case hReservedPrefill:
			h.holds.drop(holdStreaming)
			h.holds.set(holdStreamDone) // the prefill has not ended: wait for it
		case hTransfer:
			h.holds.drop(holdStreaming)
			h.holds.set(holdStreamDone)
			err = s.transferDone(h, now)
		default:
			err = fmt.Errorf("cluster: invariant violated: request %d: transfer completed in handoff state %s", h.id, h.st)
		}
		if err != nil {
			return err
		}
	}
	return s.wakeNet()
}

// transferDone: the KV is on the decode instance; the prefill side frees
// its copy and the request joins the decode batch.
func (s *Sim) transferDone(h *hand, now int64) error {
	if h.loadFail {
		h.loadFail = false
		return s.loadFailed(h, now)
	}
	if err := s.transition(h, hDecoding, h.d, now); err != nil {
		return err
	}
	if err := s.unpin(h, now); err != nil {
		return err
	}
	if err := s.dropOffloaded(h, now); err != nil {
		return err
	}
	if err := s.engines[h.d].TransferDone(h.dSlot, now); err != nil {
		return err
	}
	if err := s.kick(h.d, now); err != nil {
		return err
	}
	s.noteLoad(h.d)
	pi := h.p
	s.retire(h)
	return s.parkIfDrained(pi, now) // its last pinned KV handed off
}

// unpin releases the prefill instance's copy of the KV.
func (s *Sim) unpin(h *hand, now int64) error {
	if !h.holds.has(holdPinned) {
		return nil
	}
	h.holds.drop(holdPinned)
	if err := s.engines[h.p].ReleasePinned(h.pSlot); err != nil {
		return err
	}
	h.pSlot = -1
	s.trackPinned(h.p, now)
	return s.kick(h.p, now)
}

// pdStepEnd handles P/D outcomes of a finished step on instance i.
func (s *Sim) pdStepEnd(r *engine.StepResult, now int64) error {
	p := s.pd
	for k := range r.Prefilled {
		if err := s.prefilled(&r.Prefilled[k], now); err != nil {
			return err
		}
	}
	if s.retires() {
		return nil // no hand decodes: a finished request has none
	}
	for k := range r.Finished {
		h := p.hands.get(r.Finished[k].ID)
		if h == nil {
			continue // served without a handoff (mixed or local prefill)
		}
		if err := s.transition(h, hDone, h.d, now); err != nil {
			return err
		}
		p.hands.del(r.Finished[k].ID)
		p.freeHand(h)
	}
	return nil
}

// satAdd returns a+b for b >= 0, saturating at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}
