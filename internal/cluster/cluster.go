package cluster

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/servesim/servesim/internal/des"
	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// Event kinds.
const (
	evArrival   int32 = iota // next entry of the workload source
	evStepEnd                // Target = instance index, Arg = batch id
	evFollowUp               // Arg = index into the pending session table
	evStageFree              // Target = instance index: its first pipeline stage is free
)

// InstanceState is a snapshot of one instance for time series.
type InstanceState struct {
	Running, Waiting int
	HandoffQueue     int // requests in the decode admission queue
	KVUsed           int // blocks in use (pinned included)
	KVCached         int // free blocks still holding reusable prefixes
	KVPinned         int // blocks pinned for a handoff
	KVCapacity       int // blocks
	LinkUtil         float64
}

// Observer receives what happens in a run. Implementations must not retain
// the pointers they are given.
type Observer interface {
	// Advance is called before the events at time now are processed; the
	// state seen through Sim.State is the state that held until now.
	Advance(now int64)
	// StepDone reports a finished engine step of instance inst.
	StepDone(inst int, r *engine.StepResult)
	// Terminal reports a request's final record, exactly once per request.
	Terminal(rec *metrics.Record)
}

// Sim is one simulation run.
type Sim struct {
	q       des.Queue
	engines []*engine.Engine
	src     workload.Source
	rel     workload.Releaser // src, if it reuses released plain entries
	router  Router
	obs     Observer

	next    workload.Entry
	hasNext bool
	srcDone bool

	// sessions: remaining sub-requests keyed by the id of the sub-request
	// in flight; pending holds sub-requests waiting out their tool time.
	sessions map[int64][]workload.Request
	pending  []workload.Request
	freePend []int32

	pd *pd // P/D coordinator; nil for colocated serving

	tiers *tierState // KV tiers below the GPUs (tiers.go); nil: none

	fe *feState // the served endpoint's front end (frontend.go); nil: none

	ph promptHashes // prompt hashes of the request being placed (prefixhash.go)
	// hashBS is, per instance, the block size of the prompt hashes it is
	// given (seedHashes), 0 without prefix caching: engine.Config copies
	// the whole configuration.
	hashBS []int

	// Data-parallel groups (dpgroup.go): groupOf[i] is engine i's group,
	// -1 when it steps on its own; nil when there are none.
	groups  []*dpGroup
	groupOf []int32

	// Closed-loop load: at most maxConc workload entries (a request, or a
	// whole session) in flight; an arrival due while all are taken waits
	// (blocked) until one ends, without reading further entries.
	maxConc  int
	inflight int
	blocked  bool
	// cutting: the run is being cut off (cutOff): requests that end now
	// release their concurrency slot but send no further arrival.
	cutting bool
	cl      closedLoop // warm-up and steady-state window (closedloop.go)

	candidates []int
	fit        fitBounds // admission's O(1) fit test (fit.go)
	total      int64     // requests seen
	terminal   int64     // requests ended
	lastEvent  int64
	checks     bool
	checkDebt  int // handoff visits the P/D check owes (pd_check.go)

	// Run limits (limits.go).
	limits     Limits
	interrupt  func() bool
	limited    string // which limit ended the run
	cut        bool   // a limit ended the run
	events     int64  // events processed
	tokensSeen int64  // prompt and output tokens of the requests admitted
	live       liveTable

	ft *faultState // the fault model (fault.go); nil: none
	// reArriving: the request being placed is sent again after a loss and
	// keeps its arrival reArrival.
	reArriving bool
	reArrival  int64

	aborting []int64 // aborts waiting for their request to leave a batch or a handoff (abort.go)

	// Steady runs (steady.go): on when the configuration allows them;
	// until is the time RunUntil was asked to reach.
	steady bool
	until  int64
}

// Engines returns the instances (read-only use).
func (s *Sim) Engines() []*engine.Engine { return s.engines }

// State returns a snapshot of instance i.
func (s *Sim) State(i int) InstanceState {
	e := s.engines[i]
	p := e.Pool()
	return InstanceState{Running: e.Running(), Waiting: e.Waiting(), HandoffQueue: e.HandoffQueue(),
		KVUsed: p.Used(), KVCached: p.CachedFree(), KVPinned: e.PinnedBlocks(), KVCapacity: p.Capacity(),
		LinkUtil: s.LinkUtilisation(i)}
}

// Now is the simulated time of the event being processed.
func (s *Sim) Now() int64 { return s.q.Now() }

// Progress returns how many requests have reached a terminal outcome and
// how many have been seen so far.
func (s *Sim) Progress() (terminal, seen int64) { return s.terminal, s.total }

// Run simulates until every request has ended and returns the time of the
// last event in ns. Errors are workload read errors (naming file and line)
// or internal invariant violations.
func (s *Sim) Run() (int64, error) {
	if err := s.pull(); err != nil {
		return 0, err
	}
	if _, err := s.RunUntil(math.MaxInt64); err != nil {
		return s.lastEvent, err
	}
	return s.lastEvent, s.Finish()
}

// Pull reads the next workload entry, if none is pending, and schedules its
// arrival (at its arrival time, or now if that has passed). Run does it
// itself; a driver that feeds a source in real time (whose Next returns
// workload.ErrNotYet until it has an entry) calls Pull after each entry it
// adds, then RunUntil.
func (s *Sim) Pull() error { return s.pull() }

// NextEvent returns the time of the next pending event (false when none is
// pending: the simulation is idle until Pull schedules an arrival). The
// event may turn out to be a moot timer that RunUntil skips.
func (s *Sim) NextEvent() (int64, bool) {
	next, ok := s.q.Peek()
	return next.At, ok
}

// Finish checks the state a run ends in: the invariants (when on) and that
// every request seen has ended. Run calls it after the last event.
func (s *Sim) Finish() error {
	if err := s.checkPDNow(); err != nil {
		return err
	}
	for _, e := range s.engines {
		// The engines amortise their checks too: walk the final state.
		if err := e.CheckNow(s.lastEvent); err != nil {
			return err
		}
	}
	if s.tiers != nil && s.checks {
		if err := s.tiers.h.Check(); err != nil {
			return fmt.Errorf("kv tiers: invariant violated at the end of the run: %w", err)
		}
	}
	if s.terminal != s.total {
		return fmt.Errorf("cluster: invariant violated: %d requests seen but %d ended (%s)", s.total, s.terminal, s.describe())
	}
	return nil
}

// pull reads the next workload entry and schedules its arrival.
func (s *Sim) pull() error {
	if s.srcDone || s.hasNext {
		return nil
	}
	entry, err := s.src.Next()
	if errors.Is(err, io.EOF) {
		s.srcDone = true
		return nil
	}
	if errors.Is(err, workload.ErrNotYet) {
		return nil // a real-time source: Pull again once it has an entry
	}
	if err != nil {
		return err
	}
	if len(entry.Requests) == 0 {
		return fmt.Errorf("cluster: workload entry without requests")
	}
	s.next, s.hasNext = entry, true
	at := entry.Requests[0].Arrival + s.cl.shift
	if at < s.q.Now() {
		at = s.q.Now()
	}
	return s.q.Push(des.Event{At: at, Kind: evArrival})
}

func (s *Sim) arrive(entry workload.Entry, now int64) error {
	s.inflight++
	s.clSent(now)
	if entry.Session != "" {
		for i := range entry.Requests {
			entry.Requests[i].Session = entry.Session
		}
	}
	// The entry's requests are the cluster's own (a source returns fresh
	// ones), so the first is admitted in place rather than copied.
	first := &entry.Requests[0]
	first.Arrival = now
	if first.AbortAt > 0 && entry.Session == "" {
		if err := s.AbortAt(first.ID, first.AbortAt); err != nil {
			return err
		}
	}
	if len(entry.Requests) > 1 {
		s.sessions[first.ID] = entry.Requests[1:]
		return s.send(first, now)
	}
	err := s.send(first, now)
	if s.rel != nil && entry.Session == "" {
		// Admission copies what it keeps of a request (the engine's slot,
		// the handoff's copy, the limits' entry), so a plain entry can go
		// back to its source for reuse.
		s.rel.Release(entry)
	}
	return err
}

// stale reports whether ev is a timer that no longer applies: a lease or
// retry timer of a request that left the state it was armed in, or a
// network wake-up superseded by a later one. A step end is stale only
// under the fault model: RunUntil relies on it and skips the call for a
// step end without one.
func (s *Sim) stale(ev des.Event) bool {
	if s.ft != nil {
		switch ev.Kind {
		case evLose, evRestart, evSlow, evLinkWin, evScale, evReady:
			return s.faultStale(ev)
		case evStepEnd:
			if s.ft.down[ev.Target] || ev.Arg <= s.ft.floor[ev.Target] {
				return true // a batch of a lost instance
			}
		}
	}
	if ev.Kind == evTier {
		return s.tierStale(ev)
	}
	if s.pd == nil {
		return false
	}
	switch ev.Kind {
	case evNet:
		return ev.Arg != s.pd.netGen
	case evLease, evRetry, evOffload:
		h := s.pd.hands.get(ev.Arg)
		return h == nil || h.gen != ev.Target || h.st != hQueued || !h.holds.has(holdPinned)
	}
	return false
}

// schedule pushes an event; the queue refuses times before now (which an
// overflowing sum also produces).
func (s *Sim) schedule(ev des.Event) error {
	if err := s.q.Push(ev); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}

// admit routes a request to an instance that can hold it, or ends it as
// failed when none can.
func (s *Sim) admit(req *workload.Request, now int64) error {
	s.total++
	s.track(req, now)
	return s.place(req, now)
}

// place routes a counted request to an instance (see admit).
func (s *Sim) place(req *workload.Request, now int64) error {
	if s.pd != nil {
		return s.pdArrive(req, now)
	}
	s.candidates = s.candidates[:0]
	reason := ""
	if f := s.bounds(); f.fitsAll(req) {
		s.candidates = append(s.candidates, f.all...)
	} else {
		for i, e := range s.engines {
			if why := e.Unfit(req); why != "" {
				if reason == "" {
					reason = why
				}
				continue
			}
			s.candidates = append(s.candidates, i)
		}
	}
	if len(s.candidates) == 0 {
		rec := failedRecord(req, now, "unfit: "+reason)
		return s.end(&rec, now)
	}
	if s.ft != nil && !s.liveCandidates() {
		rec := failedRecord(req, now, "instance lost: no live instance can serve the request")
		return s.end(&rec, now)
	}
	if s.groups != nil {
		s.balancedCandidates()
	}
	inst := s.candidates[0]
	s.ph.reset()
	if len(s.candidates) > 1 {
		inst = s.router.Route(req, s.candidates, view{s})
	}
	if s.groups != nil {
		if gi := s.groupOf[inst]; gi >= 0 && s.groups[gi].Balance {
			inst = s.pickRank(int(gi), now)
		}
	}
	slot := s.engines[inst].Add(req, now)
	if s.reArriving {
		s.engines[inst].Record(slot).Arrival = s.reArrival
	}
	s.seedHashes(inst, slot, req)
	return s.kick(inst, now)
}

// liveCandidates drops lost instances from s.candidates and reports
// whether any is left.
func (s *Sim) liveCandidates() bool {
	out := s.candidates[:0]
	for _, c := range s.candidates {
		if !s.ft.closed[c] {
			out = append(out, c)
		}
	}
	s.candidates = out
	return len(out) > 0
}

// kick starts a step on an instance that has work and can take another
// batch (with pipeline parallelism, several batches are in flight). A step
// whose end overflows the clock, or an engine's invariant violation, is
// a run error.
func (s *Sim) kick(inst int, now int64) error {
	if s.ft != nil && s.ft.down[inst] {
		return nil
	}
	if s.groups != nil && s.groupOf[inst] >= 0 {
		return s.kickGroup(int(s.groupOf[inst]), now)
	}
	st, ok, err := s.beginNext(inst, now)
	if err != nil || !ok {
		return err
	}
	return s.launched(inst, st, now)
}

// beginNext begins instance inst's next batch at now, if it is not busy
// and has work (BeginSteady: Begin, a lane-only batch on a short path).
func (s *Sim) beginNext(inst int, now int64) (engine.Step, bool, error) {
	e := s.engines[inst]
	if e.Busy() {
		return engine.Step{}, false, nil
	}
	return e.BeginSteady(now)
}

// launched queues the end of the batch instance inst just began at now
// (and, with pipeline parallelism, the time its first stage is free).
func (s *Sim) launched(inst int, st engine.Step, now int64) error {
	if s.pd != nil {
		if first := s.engines[inst].FirstScheduled(); len(first) > 0 {
			if err := s.prefillStarted(first, now); err != nil {
				return err
			}
		}
	}
	// Pushed without schedule's call: one per engine step.
	if err := s.q.Push(des.Event{At: st.End, Kind: evStepEnd, Target: int32(inst), Arg: st.ID}); err != nil {
		return launchError(inst, "step", err)
	}
	if st.Free < st.End {
		// Pipeline parallelism: the next batch may start once this one
		// has cleared the first stage.
		if err := s.q.Push(des.Event{At: st.Free, Kind: evStageFree, Target: int32(inst)}); err != nil {
			return launchError(inst, "pipeline stage", err)
		}
	}
	return nil
}

// launchError is launched's error for an event the queue refused, as
// schedule would wrap it.
func launchError(inst int, what string, err error) error {
	return fmt.Errorf("instance %d %s: cluster: %w", inst, what, err)
}

func (s *Sim) stepEnd(inst int, id int64, now int64) error {
	e := s.engines[inst]
	r, err := e.FinishSteady(id, now) // FinishBatch, a batch of lane members alone on a short path
	if err != nil {
		return err
	}
	s.cl.gen += int64(r.GenTokens)
	if s.fe != nil {
		s.feStepped(inst, r, now)
	} else if s.obs != nil {
		s.obs.StepDone(inst, r)
	}
	for i := range r.Finished {
		if err := s.end(r.Finished[i], now); err != nil {
			return err
		}
	}
	if s.pd != nil {
		if err := s.pdStepEnd(r, now); err != nil {
			return err
		}
	}
	if len(s.aborting) > 0 {
		if err := s.retryAborts(now); err != nil {
			return err
		}
	} else if s.steady {
		return s.kickSteady(inst, now) // nothing else to do after it (steadyOK)
	}
	if err := s.kick(inst, now); err != nil {
		return err
	}
	if s.pd != nil && s.pd.isDecode[inst] {
		// Forming the next batch released the slots and blocks of the
		// requests that just finished: admit handoffs into them. A
		// data-parallel group forms every rank when its last rank's step
		// ends, so each rank may have freed room.
		if err := s.reserveAfterStep(inst, now); err != nil {
			return err
		}
		if err := s.kick(inst, now); err != nil {
			return err
		}
	}
	if s.ft == nil { // no autoscaler drains an instance
		return nil
	}
	return s.parkIfDrained(inst, now)
}

// feStepped shows a finished step to the front end and then to the
// observer, with the client's gaps.
func (s *Sim) feStepped(inst int, r *engine.StepResult, now int64) {
	s.feStep(inst, r, now)
	if s.obs != nil {
		s.obs.StepDone(inst, r)
	}
	s.feRestore(r)
}

// end records a terminal request and releases its session successor.
func (s *Sim) end(rec *metrics.Record, now int64) error {
	if s.fe != nil && !rec.FrontEnd {
		if held, err := s.feHold(rec, now); held || err != nil {
			return err // ends when its client has the last chunk
		}
	}
	s.terminal++
	if s.ft != nil {
		if len(s.ft.retries) > 0 {
			delete(s.ft.retries, rec.ID)
		}
		if s.ft.scale != nil {
			s.noteTTFT(rec, now)
		}
	}
	if err := s.clEnded(rec.ID, rec.Outcome == metrics.Finished, now); err != nil {
		return err
	}
	s.live.del(rec.ID)
	s.ph.drop(rec.ID)
	if s.obs != nil {
		s.obs.Terminal(rec)
	}
	rest, ok := s.sessions[rec.ID]
	if !ok {
		return s.entryDone(now)
	}
	delete(s.sessions, rec.ID)
	next := rest[0]
	if len(rest) > 1 {
		s.sessions[next.ID] = rest[1:]
	}
	if rec.Outcome != metrics.Finished {
		// The session cannot go on: its remaining sub-requests fail too.
		s.total++
		failed := failedRecord(&next, now, fmt.Sprintf("session: sub-request %d did not finish", rec.ID))
		return s.end(&failed, now)
	}
	var slot int32
	if n := len(s.freePend); n > 0 {
		slot = s.freePend[n-1]
		s.freePend = s.freePend[:n-1]
		s.pending[slot] = next
	} else {
		s.pending = append(s.pending, next)
		slot = int32(len(s.pending) - 1)
	}
	at := now + next.Delay
	if next.Delay < 0 || at < now {
		// The tool time overflows the clock: the sub-request can never
		// arrive. It is counted as failed, and so is the rest.
		s.pending[slot] = workload.Request{}
		s.freePend = append(s.freePend, slot)
		s.total++
		failed := failedRecord(&next, now, fmt.Sprintf("session: tool time of %d ns after t=%d ns overflows the simulated clock", next.Delay, now))
		return s.end(&failed, now)
	}
	return s.schedule(des.Event{At: at, Kind: evFollowUp, Arg: int64(slot)})
}

// entryDone frees the concurrency slot of a workload entry whose last
// request ended, and sends an arrival that waited for it.
func (s *Sim) entryDone(now int64) error {
	s.inflight--
	if !s.blocked {
		s.clFreed(now)
	}
	if s.blocked && !s.cutting {
		s.blocked = false
		// As an event, not inline: the caller may be in the middle of an
		// instance's step end.
		return s.schedule(des.Event{At: now, Kind: evArrival})
	}
	return nil
}

// failedRecord is the terminal record of a request that was never served.
func failedRecord(req *workload.Request, now int64, reason string) metrics.Record {
	rec := metrics.NewRecord(req.ID, now)
	rec.Session, rec.InputTokens, rec.OutputTokens = req.Session, req.InputTokens, req.OutputTokens
	rec.Priority = req.Priority
	rec.Outcome, rec.Reason = metrics.Failed, reason
	return rec
}

// describe summarises every instance's state, for stall reports.
func (s *Sim) describe() string {
	var b strings.Builder
	for i, e := range s.engines {
		fmt.Fprintf(&b, "instance %d %s: running %d waiting %d handoff-queue %d reserved %d pinned %d free %d/%d; ",
			i, e.Config().Role, e.Running(), e.Waiting(), e.HandoffQueue(), e.Reserved(), e.PinnedBlocks(), e.Pool().Free(), e.Pool().Capacity())
	}
	if s.pd != nil {
		var counts [numHStates]int
		first := [numHStates]*hand{}
		for _, h := range s.pd.hands.all {
			counts[h.st]++
			if f := first[h.st]; f == nil || h.id < f.id {
				first[h.st] = h
			}
		}
		b.WriteString("handoffs by state:")
		for st, c := range counts {
			if c == 0 {
				continue
			}
			h := first[st]
			fmt.Fprintf(&b, " %s %d (first: request %d on prefill %d (%s), decode %d", hstate(st), c, h.id, h.p, s.engines[h.p].SlotState(h.pSlot), h.d)
			if h.d >= 0 {
				fmt.Fprintf(&b, " (%s)", s.engines[h.d].SlotState(h.dSlot))
			}
			b.WriteString(");")
		}
	}
	return b.String()
}
