package link

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Unlimited is the bandwidth of an endpoint that never limits a flow. An
// endpoint of Unlimited bandwidth and zero latency is a zero-cost link:
// transfers between two such endpoints complete at their start time.
var Unlimited = math.Inf(1)

// EndpointID names an endpoint (one NIC) of a [Network]. IDs are dense,
// starting at 0, in the order of [Network.AddEndpoint] calls.
type EndpointID int32

// TransferID names a transfer started on a [Network]. IDs start at 0 and
// increase by one with each Start or StartParallel call.
type TransferID int64

// Completion reports a finished transfer.
type Completion struct {
	Transfer TransferID // the transfer, as returned by Start or StartParallel
	Tag      int64      // the caller's tag, as passed to Start or StartParallel
	Start    int64      // time the transfer was started, ns
	At       int64      // time its last flow completed, ns (At >= Start)
	Bytes    int64      // total bytes over all its flows
	Flows    int        // number of flows
}

// doneEpsilon is the number of remaining bytes below which a flow counts
// as complete.
const doneEpsilon = 1e-6

// never is the time of an event that will not happen.
const never = int64(math.MaxInt64)

// endpoint is one NIC.
type endpoint struct {
	bw      float64 // bytes per second, per direction; may be +Inf
	latency int64   // ns
}

// transfer is the bookkeeping of one transfer; flows point at it.
type transfer struct {
	id      TransferID
	tag     int64
	start   int64
	bytes   int64
	flows   int
	pending int // flows not yet complete
}

// flow is one sender-to-receiver stream.
type flow struct {
	tr       *transfer
	eg, in   int32   // resource indices: sender egress, receiver ingress
	bytes    float64 // total bytes
	activeAt int64   // end of the latency phase
	rateCap  float64 // largest rate the sender can feed, bytes/s (+Inf: none)

	// Active phase: remaining bytes at anchorT are anchorRem; the flow
	// moves rate bytes/s from anchorT on, and completes at finishAt.
	anchorRem float64
	anchorT   int64
	rate      float64
	finishAt  int64
}

// remaining returns the flow's remaining bytes at time t >= anchorT.
func (f *flow) remaining(t int64) float64 {
	r := f.anchorRem - f.rate*float64(t-f.anchorT)/1e9
	if r < 0 || math.IsNaN(r) {
		return 0
	}
	return r
}

// Network is the state of all endpoints and flows. The zero value is not
// usable; call [New].
type Network struct {
	eps []endpoint

	now     int64 // latest time passed to Start or Advance
	nextAt  int64 // earliest pending activation or active completion; never if none
	nextID  TransferID
	live    int     // transfers whose completion has not been returned by Advance
	pending []*flow // in latency phase, in start order
	active  []*flow // in data phase
	ready   []Completion
	free    []*transfer
	freeF   []*flow

	// Water-filling scratch and results, indexed by resource
	// (2*endpoint for egress, 2*endpoint+1 for ingress).
	capacity []float64
	caps     []float64
	counts   []int32
	used     []float64
	inUse    []int32 // finite resources with unfrozen flows
	off      []int32 // flows of resource r are adj[off[r]:fill[r]]
	fill     []int32
	touched  []int32 // resources of the active flows, by index
	adj      []*flow
	capped   []*flow // active flows with a rate cap, by cap

	// onFlowDone, if set, is called for every completing flow with the
	// flow and its remaining bytes at completion; tests use it.
	onFlowDone func(f *flow, residual float64)
	// onRecompute, if set, is called after every rate recomputation;
	// tests use it.
	onRecompute func()
	// noDisjoint sends every recomputation through progressive filling,
	// even when no two active flows share a resource (disjoint.go): the
	// reference the shortcut is checked against.
	noDisjoint bool
}

// ErrInvalid is the error, wrapped, of a call with invalid arguments (a
// bandwidth, latency or size out of range, an unknown endpoint, a time
// before Now). Such a call changes nothing.
var ErrInvalid = errors.New("link: invalid input")

// invalid returns an ErrInvalid error saying what was wrong.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// New returns an empty network at time 0.
func New() *Network {
	return &Network{nextAt: never}
}

// AddEndpoint adds a NIC of bandwidth bw bytes per second in each
// direction (> 0, possibly [Unlimited]) and latency latencyNs (>= 0), and
// returns its ID.
func (n *Network) AddEndpoint(bw float64, latencyNs int64) (EndpointID, error) {
	if !(bw > 0) { // also rejects NaN
		return 0, invalid("endpoint bandwidth must be > 0, got %v", bw)
	}
	if latencyNs < 0 {
		return 0, invalid("endpoint latency must be >= 0, got %d", latencyNs)
	}
	if len(n.eps) >= math.MaxInt32/2 {
		return 0, invalid("too many endpoints (%d)", len(n.eps))
	}
	id := EndpointID(len(n.eps))
	n.eps = append(n.eps, endpoint{bw: bw, latency: latencyNs})
	n.capacity = append(n.capacity, bw, bw)
	n.caps = append(n.caps, 0, 0)
	n.counts = append(n.counts, 0, 0)
	n.used = append(n.used, 0, 0)
	n.off = append(n.off, 0, 0)
	n.fill = append(n.fill, 0, 0)
	return id, nil
}

// Endpoints returns the number of endpoints.
func (n *Network) Endpoints() int { return len(n.eps) }

// Now returns the latest time passed to Start, StartParallel or Advance.
func (n *Network) Now() int64 { return n.now }

// Start starts a transfer of one flow of bytes (>= 0) from endpoint from
// to endpoint to at time now, and returns its ID. tag is reported back in
// its [Completion]. Events due at or before now are processed first (their
// completions are returned by the next Advance).
func (n *Network) Start(now int64, from, to EndpointID, bytes int64, tag int64) (TransferID, error) {
	if err := n.checkEndpoint(from); err != nil {
		return 0, err
	}
	if err := n.checkEndpoint(to); err != nil {
		return 0, err
	}
	if bytes < 0 {
		return 0, invalid("negative transfer size %d", bytes)
	}
	if err := n.advanceTo(now); err != nil {
		return 0, err
	}
	tr := n.newTransfer(now, tag, 1, bytes)
	id := tr.id // tr is recycled if the transfer completes right away
	n.addFlow(now, tr, from, to, bytes, Unlimited)
	if err := n.processTo(now); err != nil { // flows with zero latency become active now
		return id, err
	}
	return id, nil
}

// StartParallel starts a transfer of len(from) parallel flows at time now,
// flow i from endpoint from[i] to endpoint to[i], each of bytesPerFlow
// bytes (>= 0); it completes when all its flows have completed. This is a
// tensor-parallel KV transfer: rank i of the sending instance to rank i of
// the receiving one. from and to must have the same, non-zero length. The
// slices are not retained.
func (n *Network) StartParallel(now int64, from, to []EndpointID, bytesPerFlow int64, tag int64) (TransferID, error) {
	return n.StartParallelCapped(now, from, to, bytesPerFlow, Unlimited, tag)
}

// StartParallelCapped is StartParallel with every flow's rate capped at
// rateCap bytes per second (> 0, possibly [Unlimited]): a sender that
// produces its data no faster than that, such as KV streamed while the
// prompt is still being computed. A capped flow takes its max-min fair
// share of its NICs but never more than the cap; what it leaves goes to
// the other flows. Between two endpoints of [Unlimited] bandwidth a capped
// flow takes bytesPerFlow/rateCap seconds.
func (n *Network) StartParallelCapped(now int64, from, to []EndpointID, bytesPerFlow int64, rateCap float64, tag int64) (TransferID, error) {
	if len(from) == 0 || len(from) != len(to) {
		return 0, invalid("StartParallel needs equal, non-zero numbers of senders and receivers, got %d and %d", len(from), len(to))
	}
	for i := range from {
		if err := n.checkEndpoint(from[i]); err != nil {
			return 0, err
		}
		if err := n.checkEndpoint(to[i]); err != nil {
			return 0, err
		}
	}
	if bytesPerFlow < 0 {
		return 0, invalid("negative transfer size %d", bytesPerFlow)
	}
	if bytesPerFlow > 0 && int64(len(from)) > math.MaxInt64/bytesPerFlow {
		return 0, invalid("transfer size %d x %d flows overflows int64", bytesPerFlow, len(from))
	}
	if !(rateCap > 0) {
		return 0, invalid("rate cap must be > 0, got %v", rateCap)
	}
	if err := n.advanceTo(now); err != nil {
		return 0, err
	}
	tr := n.newTransfer(now, tag, len(from), bytesPerFlow*int64(len(from)))
	id := tr.id // tr is recycled if the transfer completes right away
	for i := range from {
		n.addFlow(now, tr, from[i], to[i], bytesPerFlow, rateCap)
	}
	if err := n.processTo(now); err != nil {
		return id, err
	}
	return id, nil
}

// NextEvent returns the earliest time at which the network must be
// advanced: a flow completes or leaves its latency phase (which changes the
// rates). ok is false when nothing is in flight. If completions are
// already due (for instance a zero-cost transfer just started), it returns
// Now(). The returned time is never earlier than Now().
func (n *Network) NextEvent() (at int64, ok bool) {
	if len(n.ready) > 0 {
		return n.now, true
	}
	if len(n.pending)+len(n.active) == 0 {
		return 0, false
	}
	return max(n.nextAt, n.now), true
}

// Advance processes all events up to and including now and appends to
// done the transfers that completed at or before now and were not
// reported yet, ordered by completion time, then TransferID. It returns
// the extended slice. It does not allocate when done has room. Advancing
// to a time at which nothing is due only moves Now() forward; advancing
// to a time before Now() is an error.
func (n *Network) Advance(now int64, done []Completion) ([]Completion, error) {
	if err := n.advanceTo(now); err != nil {
		return done, err
	}
	if len(n.ready) == 0 {
		return done, nil
	}
	slices.SortFunc(n.ready, func(a, b Completion) int {
		if c := cmp.Compare(a.At, b.At); c != 0 {
			return c
		}
		return cmp.Compare(a.Transfer, b.Transfer)
	})
	done = append(done, n.ready...)
	n.live -= len(n.ready)
	clear(n.ready)
	n.ready = n.ready[:0]
	return done, nil
}

// Utilisation returns the fraction of endpoint ep's egress and ingress
// bandwidth in use at Now() (0 for an [Unlimited] direction). Between
// events it is constant, so sampling it after each Start and Advance gives
// an exact step function. An unknown endpoint is an error.
func (n *Network) Utilisation(ep EndpointID) (egress, ingress float64, err error) {
	if err := n.checkEndpoint(ep); err != nil {
		return 0, 0, err
	}
	frac := func(r int) float64 {
		c := n.capacity[r]
		if math.IsInf(c, 1) {
			return 0
		}
		return n.used[r] / c
	}
	return frac(2 * int(ep)), frac(2*int(ep) + 1), nil
}

// Active returns the number of transfers started and not yet returned by
// Advance.
func (n *Network) Active() int { return n.live }

// ActiveFlows returns the number of flows in flight at Now(): in their
// latency phase or moving data.
func (n *Network) ActiveFlows() int { return len(n.pending) + len(n.active) }

// checkEndpoint refuses an endpoint the network does not have.
func (n *Network) checkEndpoint(ep EndpointID) error {
	if ep < 0 || int(ep) >= len(n.eps) {
		return invalid("unknown endpoint %d (have %d)", ep, len(n.eps))
	}
	return nil
}

func (n *Network) newTransfer(now, tag int64, flows int, bytes int64) *transfer {
	var tr *transfer
	if k := len(n.free); k > 0 {
		tr = n.free[k-1]
		n.free = n.free[:k-1]
	} else {
		tr = new(transfer)
	}
	*tr = transfer{id: n.nextID, tag: tag, start: now, bytes: bytes, flows: flows, pending: flows}
	n.nextID++
	n.live++
	return tr
}

func (n *Network) addFlow(now int64, tr *transfer, from, to EndpointID, bytes int64, rateCap float64) {
	var f *flow
	if k := len(n.freeF); k > 0 {
		f = n.freeF[k-1]
		n.freeF = n.freeF[:k-1]
	} else {
		f = new(flow)
	}
	lat := max(n.eps[from].latency, n.eps[to].latency)
	*f = flow{
		tr:       tr,
		eg:       2 * int32(from),
		in:       2*int32(to) + 1,
		bytes:    float64(bytes),
		rateCap:  rateCap,
		activeAt: satAdd(now, lat),
		finishAt: never,
	}
	n.pending = append(n.pending, f)
	n.nextAt = min(n.nextAt, f.activeAt)
}

// advanceTo processes every event at or before now, in time order; a
// time before Now() is an error.
func (n *Network) advanceTo(now int64) error {
	if now < n.now {
		return invalid("time went backwards: %d after %d", now, n.now)
	}
	return n.processTo(now)
}

// processTo processes every event at or before now (>= Now()), in time
// order. Its only error is an internal inconsistency (a bug).
func (n *Network) processTo(now int64) error {
	for n.nextAt <= now && (n.nextAt != never || len(n.pending)+len(n.active) > 0) {
		if err := n.step(n.nextAt); err != nil {
			return err
		}
	}
	n.now = now
	return nil
}

// step processes the events at time t (= n.nextAt): completions, then
// activations, then recomputes the rates.
func (n *Network) step(t int64) error {
	n.now = t
	// Completions.
	k := 0
	for _, f := range n.active {
		if f.finishAt <= t {
			n.finish(f, t, f.remaining(t))
			continue
		}
		if r := f.remaining(t); r <= doneEpsilon {
			n.finish(f, t, r)
			continue
		}
		n.active[k] = f
		k++
	}
	if k < len(n.active) {
		clear(n.active[k:])
		n.active = n.active[:k]
	}
	// Activations.
	k = 0
	for _, f := range n.pending {
		if f.activeAt > t {
			n.pending[k] = f
			k++
			continue
		}
		if f.bytes <= doneEpsilon || (math.IsInf(n.capacity[f.eg], 1) && math.IsInf(n.capacity[f.in], 1) && math.IsInf(f.rateCap, 1)) {
			n.finish(f, t, 0)
			continue
		}
		f.anchorRem, f.anchorT = f.bytes, t
		n.active = append(n.active, f)
	}
	if k < len(n.pending) {
		clear(n.pending[k:])
		n.pending = n.pending[:k]
	}

	if err := n.recompute(t); err != nil {
		return err
	}

	next := never
	for _, f := range n.pending {
		next = min(next, f.activeAt)
	}
	for _, f := range n.active {
		next = min(next, f.finishAt)
	}
	n.nextAt = next
	return nil
}

// finish retires flow f at time t, and its transfer if f was the last.
func (n *Network) finish(f *flow, t int64, residual float64) {
	if n.onFlowDone != nil {
		n.onFlowDone(f, residual)
	}
	tr := f.tr
	tr.pending--
	if tr.pending == 0 {
		n.ready = append(n.ready, Completion{
			Transfer: tr.id, Tag: tr.tag, Start: tr.start, At: t,
			Bytes: tr.bytes, Flows: tr.flows,
		})
		*tr = transfer{}
		n.free = append(n.free, tr)
	}
	*f = flow{}
	n.freeF = append(n.freeF, f)
}

// recompute sets the max-min fair rate and the completion time of every
// active flow at time t, by progressive filling. With R resources in use and
// F active flows it costs O(R*R + F): at most R rounds, each scanning the
// resources still in use and freezing the flows of one bottleneck. Only
// the resources of active flows are visited (plus a sort of them), not
// every endpoint of the network: a large cluster with a few transfers in
// flight pays for those few.
func (n *Network) recompute(t int64) error {
	// The resources the previous computation used go back to idle; every
	// flow froze then, so their counts are already 0.
	for _, r := range n.touched {
		n.used[r] = 0
	}
	n.touched = n.touched[:0]
	n.capped = n.capped[:0]
	if len(n.active) == 1 && !n.noDisjoint && n.rateOne(t) {
		n.finishTimes(t)
		return nil
	}
	for _, f := range n.active {
		f.anchorRem = f.remaining(t)
		f.anchorT = t
		f.rate = 0 // unfrozen
		for _, r := range [2]int32{f.eg, f.in} {
			if n.counts[r] == 0 {
				n.touched = append(n.touched, r)
			}
			n.counts[r]++
		}
		if !math.IsInf(f.rateCap, 1) {
			n.capped = append(n.capped, f)
		}
	}
	if len(n.touched) == 2*len(n.active) && !n.noDisjoint && n.rateDisjoint() {
		// No resource carries two flows (nor a flow twice).
		n.finishTimes(t)
		return nil
	}
	// Resources in index order: ties between bottlenecks go to the lowest
	// index, as the scan below expects.
	slices.Sort(n.touched)
	// Capped flows in increasing cap order: a cap is a bottleneck of its
	// own flow alone, taken before any resource whose fair share is larger.
	slices.SortStableFunc(n.capped, func(a, b *flow) int { return cmp.Compare(a.rateCap, b.rateCap) })
	nextCap := 0
	// Flows by resource (CSR over the touched resources: the flows of r
	// are adj[off[r]:fill[r]] once filled), and the finite resources in
	// use.
	off, fill := n.off, n.fill
	n.inUse = n.inUse[:0]
	pos := int32(0)
	for _, r := range n.touched {
		n.caps[r] = n.capacity[r]
		off[r], fill[r] = pos, pos
		pos += n.counts[r]
		if !math.IsInf(n.capacity[r], 1) {
			n.inUse = append(n.inUse, r)
		}
	}
	n.adj = slices.Grow(n.adj[:0], int(pos))[:pos]
	for _, f := range n.active {
		n.adj[fill[f.eg]] = f
		fill[f.eg]++
		n.adj[fill[f.in]] = f
		fill[f.in]++
	}

	unfrozen := len(n.active)
	prev := 0.0
	for unfrozen > 0 {
		// The bottleneck: the finite resource with the smallest fair share
		// of what is left (lowest index on ties). Every active flow has a
		// finite resource (flows with none complete at activation), so one
		// exists. Resources whose flows are all frozen leave the list.
		best, share := int32(-1), 0.0
		k := 0
		for _, r := range n.inUse {
			c := n.counts[r]
			if c == 0 {
				continue
			}
			n.inUse[k] = r
			k++
			s := n.caps[r] / float64(c)
			if best < 0 || s < share {
				best, share = r, s
			}
		}
		n.inUse = n.inUse[:k]
		for nextCap < len(n.capped) && n.capped[nextCap].rate > 0 {
			nextCap++ // frozen at a resource bottleneck below its cap
		}
		if nextCap < len(n.capped) && (best < 0 || n.capped[nextCap].rateCap <= share) {
			f := n.capped[nextCap]
			nextCap++
			f.rate = f.rateCap
			unfrozen--
			for _, r := range [2]int32{f.eg, f.in} {
				n.counts[r]--
				n.used[r] += f.rate
				n.caps[r] = max(0, n.caps[r]-f.rate)
			}
			continue
		}
		if best < 0 {
			return errors.New("link: internal error: active flow without a finite resource or cap")
		}
		// Shares never decrease in exact arithmetic; keep it so under
		// rounding, and keep them positive.
		share = max(share, prev)
		if !(share > 0) {
			share = math.SmallestNonzeroFloat64
		}
		prev = share
		for _, f := range n.adj[off[best]:fill[best]] {
			if f.rate > 0 {
				continue // frozen at another bottleneck
			}
			f.rate = share
			unfrozen--
			for _, r := range [2]int32{f.eg, f.in} {
				n.counts[r]--
				n.used[r] += share
				n.caps[r] = max(0, n.caps[r]-share)
			}
		}
	}
	clear(n.adj) // do not keep retired flows reachable
	n.finishTimes(t)
	return nil
}

// finishTimes sets every active flow's completion time from its rate, at
// the end of a recomputation at t.
func (n *Network) finishTimes(t int64) {
	clear(n.capped)
	for _, f := range n.active {
		f.finishAt = satAdd(t, ceilNs(f.anchorRem*1e9/f.rate))
	}
	if n.onRecompute != nil {
		n.onRecompute()
	}
}

// ceilNs rounds a non-negative duration in ns up to a whole number of ns,
// treating values within floating-point noise of an integer as that
// integer. It saturates at math.MaxInt64.
func ceilNs(x float64) int64 {
	if !(x > 0) { // also NaN
		return 0
	}
	if x >= 9e18 {
		return never
	}
	k := math.Round(x)
	if math.Abs(x-k) <= 1e-9+1e-12*x {
		return int64(k)
	}
	return int64(math.Ceil(x))
}

// satAdd returns a+b for b >= 0, saturating at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if b > never-a {
		return never
	}
	return a + b
}
