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

// Policy names a prefill -> decode handoff protocol.
type Policy uint8

// Handoff policies (see DESIGN §4 and README "P/D disaggregation").
const (
	// Pull keeps the KV pinned on the prefill instance while the request
	// waits in the decode instance's admission queue; the decode side
	// reserves blocks and a slot, pulls the KV, and the prefill side frees
	// it when the transfer ends.
	Pull Policy = iota
	// Reserve has the decode instance reserve blocks (plus headroom) before
	// the prefill starts; the transfer streams layer by layer alongside the
	// prefill, so only the last layer's share remains at prefill end.
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
	// behaviour; when it does not fit, the run stops with a report.
	Eager
)

// Policies lists the policy names in order.
var Policies = []string{"pull", "reserve", "reject", "push", "eager"}

// ParsePolicy returns the policy of a name.
func ParsePolicy(s string) (Policy, error) {
	for i, n := range Policies {
		if n == s {
			return Policy(i), nil
		}
	}
	return 0, fmt.Errorf("unknown handoff policy %q (valid: pull, reserve, reject, push, eager)", s)
}

// String returns the policy's name.
func (p Policy) String() string { return Policies[p] }

// Placement names how a decode instance is chosen for a handoff.
type Placement uint8

// Decode placements.
const (
	RoundRobinPlacement  Placement = iota // cycle through decode instances
	LeastLoadedPlacement                  // fewest running + reserved + queued
	MostFreeKVPlacement                   // most free KV blocks after queued demand
	RetryPlacement                        // most-free-kv, then move after retry_after
)

// Placements lists the placement names in order.
var Placements = []string{"round-robin", "least-loaded", "most-free-kv", "retry"}

// ParsePlacement returns the placement of a name.
func ParsePlacement(s string) (Placement, error) {
	for i, n := range Placements {
		if n == s {
			return Placement(i), nil
		}
	}
	return 0, fmt.Errorf("unknown decode placement %q (valid: round-robin, least-loaded, most-free-kv, retry)", s)
}

// PDConfig configures disaggregated serving. Durations are ns.
type PDConfig struct {
	Policy    Policy
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
}

// Node is how an instance attaches to the KV network.
type Node struct {
	Endpoints []link.EndpointID // one per tensor-parallel rank
	// KVBytesPerToken is the KV size of one token on one rank.
	KVBytesPerToken int64
	// Layers is the number of transformer layers (for layer streaming).
	Layers int
	// PrefillTokensPerSec estimates the instance's prefill throughput (for
	// the reject policy's queueing prediction).
	PrefillTokensPerSec float64
}

// hstate is where a request stands in its handoff.
type hstate uint8

const (
	hPrefill    hstate = iota // queued or computing on the prefill instance
	hQueued                   // in a decode admission queue
	hTransfer                 // decode blocks reserved, KV on the link
	hDecoding                 // on the decode instance
	hPreReserve               // reserve policy: waiting for a reservation before prefill
	hPushing                  // push policy: KV moving into the receive buffer or host
)

// hand is the handoff state of one request in P/D mode.
type hand struct {
	req        workload.Request
	rec        metrics.Record // as of the prefill instance
	st         hstate
	p, d       int   // instances
	pSlot      int32 // slot on the prefill instance (pinned KV)
	dSlot      int32 // slot on the decode instance
	prefillEnd int64
	queuedAt   int64 // when it joined the current decode queue
	gen        int32 // invalidates stale lease and retry events
	pinned     bool  // KV pinned on the prefill instance
	bufBlocks  int   // push: receive-buffer blocks held on d
	spilled    bool  // push: KV in d's host memory
	bytes      int64 // transfer bytes per stream
}

// pd is the P/D coordinator state of a Sim.
type pd struct {
	cfg      PDConfig
	nodes    []Node
	net      *link.Network
	netGen   int64
	netAt    int64
	done     []link.Completion
	hands    map[int64]*hand
	prefill  []int // instances that compute prompts (prefill or mixed)
	decode   []int
	rr       int
	resv     []engine.Reservation
	bufFree  []int // push: free receive-buffer blocks per instance
	pinPeak  []int
	pinSum   []float64 // time integral of pinned blocks (block*ns)
	pinLast  []int64
	pinNow   []int
	stopped  *StopReport
	copyHost int64
}

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
	evNet   int32 = 10 + iota // the KV network has an event due (Arg = generation)
	evLease                   // Arg = request id, Target = generation
	evRetry                   // Arg = request id, Target = generation
	evHost                    // push spill copied back to the device: Arg = request id
)

// EnablePD turns the simulation into a disaggregated one: nodes describe
// every instance's network attachment (index-aligned with the engines).
func (s *Sim) EnablePD(cfg PDConfig, nodes []Node, net *link.Network) error {
	if len(nodes) != len(s.engines) {
		return fmt.Errorf("cluster: %d network nodes for %d instances", len(nodes), len(s.engines))
	}
	p := &pd{cfg: cfg, nodes: nodes, net: net, hands: map[int64]*hand{}}
	n := len(s.engines)
	p.pinPeak, p.pinSum, p.pinLast, p.pinNow = make([]int, n), make([]float64, n), make([]int64, n), make([]int, n)
	for i, e := range s.engines {
		switch e.Config().Role {
		case engine.Decode:
			p.decode = append(p.decode, i)
		default:
			p.prefill = append(p.prefill, i)
		}
	}
	if len(p.decode) == 0 {
		return fmt.Errorf("cluster: P/D mode needs at least one decode instance")
	}
	if len(p.prefill) == 0 {
		return fmt.Errorf("cluster: P/D mode needs at least one prefill instance")
	}
	if cfg.Policy == Push {
		p.bufFree = make([]int, n)
		copy(p.bufFree, cfg.PushBufferBlocks)
	}
	s.pd = p
	return nil
}

// PinnedStats returns, per instance, the peak and time-averaged number of
// KV blocks pinned for handoffs over the run.
func (s *Sim) PinnedStats() (peak []int, mean []float64) {
	if s.pd == nil {
		return nil, nil
	}
	p := s.pd
	end := s.lastEvent
	mean = make([]float64, len(p.pinPeak))
	for i := range mean {
		sum := p.pinSum[i] + float64(p.pinNow[i])*float64(end-p.pinLast[i])
		if end > 0 {
			mean[i] = sum / float64(end)
		}
	}
	return append([]int(nil), p.pinPeak...), mean
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
		eg, in := s.pd.net.Utilisation(ep)
		u += math.Max(eg, in)
	}
	return u / float64(len(eps))
}

// trackPinned updates the pinned-KV statistics of instance i.
func (s *Sim) trackPinned(i int, now int64) {
	p := s.pd
	cur := s.engines[i].PinnedBlocks()
	p.pinSum[i] += float64(p.pinNow[i]) * float64(now-p.pinLast[i])
	p.pinLast[i], p.pinNow[i] = now, cur
	if cur > p.pinPeak[i] {
		p.pinPeak[i] = cur
	}
}

// pdUnfit returns why a request can never be served in P/D mode.
func (s *Sim) pdUnfit(req *workload.Request) string {
	p := s.pd
	fitsD := false
	reason := ""
	for _, d := range p.decode {
		if why := s.engines[d].Unfit(req); why == "" {
			fitsD = true
			break
		} else if reason == "" {
			reason = why
		}
	}
	if !fitsD {
		return reason
	}
	prompt := *req
	prompt.OutputTokens = 1
	for _, i := range p.prefill {
		if s.engines[i].Unfit(&prompt) == "" {
			return ""
		}
	}
	return s.engines[p.prefill[0]].Unfit(&prompt)
}

// pdArrive places a request in P/D mode.
func (s *Sim) pdArrive(req *workload.Request, now int64) {
	p := s.pd
	if why := s.pdUnfit(req); why != "" {
		rec := failedRecord(req, now, "unfit: "+why)
		s.end(&rec, now)
		return
	}
	h := &hand{req: *req, pSlot: -1, dSlot: -1}
	h.rec = metrics.NewRecord(req.ID, now)
	h.rec.InputTokens, h.rec.OutputTokens = req.InputTokens, req.OutputTokens
	h.p = s.routePrefill(req)
	if p.cfg.Policy == Reject {
		if why := s.rejectReason(h, now); why != "" {
			rec := h.rec
			rec.Outcome, rec.Reason = metrics.Rejected, why
			s.end(&rec, now)
			return
		}
	}
	if p.cfg.LocalPrefillBelow > 0 && p.cfg.Policy != Reserve {
		d := s.placeDecode(h, -1)
		e := s.engines[d]
		if req.InputTokens-e.PrefixHitTokens(req) < p.cfg.LocalPrefillBelow && e.Unfit(req) == "" {
			e.AddRecord(req, h.rec, now)
			s.kick(d, now)
			return
		}
	}
	p.hands[req.ID] = h
	if p.cfg.Policy == Reserve {
		h.d = s.placeDecode(h, -1)
		h.st = hPreReserve
		h.dSlot = s.engines[h.d].Enqueue(&h.req, h.rec, now)
		h.queuedAt = now
		s.reserve(h.d, now)
		return
	}
	s.startPrefill(h, now)
}

func (s *Sim) startPrefill(h *hand, now int64) {
	h.st = hPrefill
	h.pSlot = s.engines[h.p].AddRecord(&h.req, h.rec, now)
	s.kick(h.p, now)
}

// routePrefill picks the prefill instance among the prefill-capable ones.
func (s *Sim) routePrefill(req *workload.Request) int {
	p := s.pd
	if len(p.prefill) == 1 {
		return p.prefill[0]
	}
	return s.router.Route(req, p.prefill, s)
}

// placeDecode chooses a decode instance, avoiding exclude (-1: none).
func (s *Sim) placeDecode(h *hand, exclude int) int {
	p := s.pd
	cands := p.decode
	best, bestScore := -1, math.Inf(-1)
	switch p.cfg.Placement {
	case RoundRobinPlacement:
		for range cands {
			d := cands[p.rr%len(cands)]
			p.rr++
			if d != exclude || len(cands) == 1 {
				return d
			}
		}
	case LeastLoadedPlacement:
		for _, d := range cands {
			if d == exclude && len(cands) > 1 {
				continue
			}
			e := s.engines[d]
			score := -float64(e.Running() + e.Reserved() + e.HandoffQueue())
			if score > bestScore {
				best, bestScore = d, score
			}
		}
	default: // most free KV, net of queued demand
		for _, d := range cands {
			if d == exclude && len(cands) > 1 {
				continue
			}
			e := s.engines[d]
			score := float64(e.Pool().Free()) - float64(s.queuedBlocks(d))
			if score > bestScore {
				best, bestScore = d, score
			}
		}
	}
	return best
}

// queuedBlocks is the prompt blocks of requests queued at decode instance d.
func (s *Sim) queuedBlocks(d int) int {
	// The engine does not expose per-request sizes of its queue; estimate
	// from the queue length and the instance's block size is not exact, so
	// use the tracked hands (bounded by in-flight requests).
	n := 0
	bs := s.engines[d].Config().BlockSize
	for _, h := range s.pd.hands {
		if h.d == d && (h.st == hQueued || h.st == hPreReserve) {
			n += (h.req.InputTokens + bs - 1) / bs
		}
	}
	return n
}

// prefilled handles a prompt computed on a prefill instance.
func (s *Sim) prefilled(pi int, f *engine.Prefilled, now int64) error {
	p := s.pd
	h := p.hands[f.Record.ID]
	if h == nil || h.st != hPrefill {
		return fmt.Errorf("cluster: invariant violated: prefilled request %d has no prefill handoff state", f.Record.ID)
	}
	h.rec = f.Record
	h.prefillEnd = now
	h.pinned = true
	s.trackPinned(pi, now)
	switch p.cfg.Policy {
	case Reserve:
		// Blocks were reserved on d before the prefill; only the last
		// layer's share of the KV is still to stream.
		r := s.engines[h.d].Record(h.dSlot)
		s.mergePrefill(r, h)
		s.startTransfer(h, now, h.bytes/int64(max(1, p.nodes[h.p].Layers)))
		return nil
	case Push:
		return s.push(h, now)
	}
	h.d = s.placeDecode(h, -1)
	s.enqueueDecode(h, now)
	if p.cfg.Policy == Eager {
		e := s.engines[h.d]
		res, needed, free, ok := e.ForceReserve(h.dSlot, now)
		if !ok {
			terminal, _ := s.Progress()
			p.stopped = &StopReport{Request: h.req.ID, Instance: h.d, Needed: needed, Free: free, At: now, Completed: terminal}
			return p.stopped
		}
		s.reserved(h, res, now)
		return nil
	}
	s.reserve(h.d, now)
	return nil
}

// mergePrefill copies the prefill-side fields into the decode record.
func (s *Sim) mergePrefill(r *metrics.Record, h *hand) {
	r.PrefillInstance = h.rec.PrefillInstance
	r.Scheduled = h.rec.Scheduled
	r.Queued = h.rec.Queued
	r.CachedTokens = h.rec.CachedTokens
	r.Preemptions += h.rec.Preemptions
	r.PrefillEnd = h.rec.PrefillEnd
}

// enqueueDecode puts a prefilled request in decode instance h.d's queue.
func (s *Sim) enqueueDecode(h *hand, now int64) {
	p := s.pd
	h.st = hQueued
	h.queuedAt = now
	h.dSlot = s.engines[h.d].Enqueue(&h.req, h.rec, now)
	h.gen++
	if !p.cfg.Heartbeat && p.cfg.Lease > 0 && h.pinned {
		_ = s.q.Push(des.Event{At: h.prefillEnd + p.cfg.Lease, Kind: evLease, Arg: h.req.ID, Target: h.gen})
	}
	if p.cfg.Placement == RetryPlacement && p.cfg.RetryAfter > 0 && len(p.decode) > 1 {
		_ = s.q.Push(des.Event{At: now + p.cfg.RetryAfter, Kind: evRetry, Arg: h.req.ID, Target: h.gen})
	}
}

// reserve admits what decode instance d can take now.
func (s *Sim) reserve(d int, now int64) {
	p := s.pd
	e := s.engines[d]
	p.resv = e.Reserve(now, p.cfg.SkipAhead, p.resv[:0])
	for _, res := range p.resv {
		h := p.hands[res.ID]
		if h.st == hPreReserve {
			// Reserve policy: the decode side is ready; prefill may start.
			r := e.Record(res.Slot)
			r.CapacityWait = now - h.queuedAt
			h.bytes = s.transferBytes(h, res.TransferBlocks)
			s.startPrefill(h, now)
			continue
		}
		s.reserved(h, res, now)
	}
}

// transferBytes is the per-stream size of moving blocks KV blocks.
func (s *Sim) transferBytes(h *hand, blocks int) int64 {
	node := s.pd.nodes[h.p]
	bs := s.engines[h.d].Config().BlockSize
	return int64(blocks) * int64(bs) * node.KVBytesPerToken
}

// reserved starts the transfer of a request whose decode blocks are held.
func (s *Sim) reserved(h *hand, res engine.Reservation, now int64) {
	p := s.pd
	r := s.engines[h.d].Record(res.Slot)
	s.mergePrefill(r, h)
	r.HandoffWait = now - h.prefillEnd
	r.CapacityWait = now - h.prefillEnd
	if h.spilled {
		// Push overflow: the KV waits in the decode host's memory and is
		// copied to the device over PCIe.
		h.st = hTransfer
		bytes := h.bytes * int64(len(p.nodes[h.d].Endpoints))
		dur := int64(0)
		if p.cfg.HostBandwidth > 0 {
			dur = int64(math.Ceil(float64(bytes) / p.cfg.HostBandwidth * 1e9))
		}
		r.TransferStart = now
		_ = s.q.Push(des.Event{At: now + dur, Kind: evHost, Arg: h.req.ID})
		return
	}
	if h.bufBlocks > 0 {
		// Push: the KV is already in the receive buffer on this device.
		p.bufFree[h.d] += h.bufBlocks
		h.bufBlocks = 0
		h.st = hTransfer
		r.TransferStart = now
		s.transferDone(h, now)
		return
	}
	s.startTransfer(h, now, s.transferBytes(h, res.TransferBlocks))
}

// startTransfer puts the KV of h on the link, bytes per stream.
func (s *Sim) startTransfer(h *hand, now int64, bytes int64) {
	p := s.pd
	h.st = hTransfer
	if h.d >= 0 && h.dSlot >= 0 {
		s.engines[h.d].Record(h.dSlot).TransferStart = now
	}
	from, to := p.nodes[h.p].Endpoints, p.nodes[h.d].Endpoints
	n := min(len(from), len(to))
	p.net.StartParallel(now, from[:n], to[:n], bytes, h.req.ID)
	s.wakeNet()
}

// wakeNet schedules the network's next event.
func (s *Sim) wakeNet() {
	p := s.pd
	at, ok := p.net.NextEvent()
	if !ok {
		return
	}
	p.netGen++
	p.netAt = at
	_ = s.q.Push(des.Event{At: at, Kind: evNet, Arg: p.netGen})
}

// netEvent collects finished transfers.
func (s *Sim) netEvent(gen int64, now int64) error {
	p := s.pd
	if gen != p.netGen {
		return nil // superseded by a later wake-up
	}
	p.done = p.net.Advance(now, p.done[:0])
	for _, c := range p.done {
		h := p.hands[c.Tag]
		if h == nil {
			return fmt.Errorf("cluster: invariant violated: transfer of unknown request %d", c.Tag)
		}
		if h.st == hPushing {
			s.pushArrived(h, now)
			continue
		}
		s.transferDone(h, now)
	}
	s.wakeNet()
	return nil
}

// transferDone: the KV is on the decode instance; the prefill side frees it.
func (s *Sim) transferDone(h *hand, now int64) {
	s.unpin(h, now)
	h.st = hDecoding
	s.engines[h.d].TransferDone(h.dSlot, now)
	s.kick(h.d, now)
}

// unpin releases the prefill instance's copy of the KV.
func (s *Sim) unpin(h *hand, now int64) {
	if !h.pinned {
		return
	}
	h.pinned = false
	s.engines[h.p].ReleasePinned(h.pSlot)
	s.trackPinned(h.p, now)
	s.kick(h.p, now)
}

// pdStepEnd handles P/D outcomes of a finished step on instance i.
func (s *Sim) pdStepEnd(i int, r *engine.StepResult, now int64) error {
	p := s.pd
	for k := range r.Prefilled {
		if err := s.prefilled(i, &r.Prefilled[k], now); err != nil {
			return err
		}
	}
	for k := range r.Finished {
		delete(p.hands, r.Finished[k].ID)
	}
	return nil
}
