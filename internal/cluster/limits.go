package cluster

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// Limits bound a run deterministically: the same scenario stops at the same
// event on every machine. At a limit the run ends normally: requests in
// flight end failed with reason "limit", requests that had not arrived yet
// (the rest of the workload and of the sessions) end truncated.
type Limits struct {
	// MaxTime stops the run before the first event after this simulated
	// time, ns (0: no bound).
	MaxTime int64
	// MaxEvents stops the run after this many events (0: the automatic
	// budget, see AutoEventsBase).
	MaxEvents int64
}

// The automatic event budget is AutoEventsBase plus AutoEventsPerToken per
// prompt and output token of the requests seen so far. A legitimate run
// uses far fewer events than tokens (one engine step serves many tokens of
// many requests), so it never reaches the budget; a run that loops without
// serving tokens (a livelock) does, and ends with its requests counted.
const (
	AutoEventsBase     = 1_000_000
	AutoEventsPerToken = 64
)

// ErrInterrupted is returned by Run when the interrupt check (see
// SetInterrupt) reported true.
var ErrInterrupted = errors.New("cluster: run interrupted")

// interruptEvery is how many events pass between interrupt checks.
const interruptEvery = 1024

// liveReq is what a request in flight needs for its record at a limit.
type liveReq struct {
	arrival       int64
	input, output int
}

// SetLimits sets the run's limits; call before Run.
func (s *Sim) SetLimits(l Limits) { s.limits = l }

// SetInterrupt installs a check called every few thousand events; when it
// returns true Run stops and returns ErrInterrupted. The check is the
// caller's (e.g. a context's Done channel): the core reads no clock.
func (s *Sim) SetInterrupt(check func() bool) { s.interrupt = check }

// LimitReached says which limit ended the run ("" if none).
func (s *Sim) LimitReached() string { return s.limited }

// overLimit reports whether the event at time at must not be processed.
func (s *Sim) overLimit(at int64) bool {
	if s.limits.MaxTime > 0 && at > s.limits.MaxTime {
		s.limited = fmt.Sprintf("max_sim_time_s %g reached", float64(s.limits.MaxTime)/1e9)
		return true
	}
	budget := s.limits.MaxEvents
	if budget == 0 {
		budget = AutoEventsBase + AutoEventsPerToken*s.tokensSeen
	}
	if s.events >= budget {
		if s.limits.MaxEvents > 0 {
			s.limited = fmt.Sprintf("max_events %d reached", budget)
		} else {
			s.limited = fmt.Sprintf("automatic event budget %d reached (no progress? set limits.max_events to raise it)", budget)
		}
		return true
	}
	return false
}

// track notes an admitted request as in flight.
func (s *Sim) track(req *workload.Request, now int64) {
	if s.live == nil {
		s.live = map[int64]liveReq{}
	}
	s.live[req.ID] = liveReq{arrival: now, input: req.InputTokens, output: req.OutputTokens}
	s.tokensSeen += int64(req.InputTokens) + int64(req.OutputTokens)
}

// cutOff ends the run at time now, at a limit or at an eager stop: every
// request still in the system fails with reason, and every one still to
// come ends truncated, in a deterministic order.
func (s *Sim) cutOff(now int64, reason string) error {
	var notArrived []workload.Request
	// Sub-requests after the ones in flight, and those waiting out their
	// tool time, never arrived.
	heads := make([]int64, 0, len(s.sessions))
	for id := range s.sessions {
		heads = append(heads, id)
	}
	slices.Sort(heads)
	for _, id := range heads {
		notArrived = append(notArrived, s.sessions[id]...)
	}
	clear(s.sessions)
	free := make([]bool, len(s.pending))
	for _, slot := range s.freePend {
		free[slot] = true
	}
	for slot, req := range s.pending {
		if !free[slot] {
			notArrived = append(notArrived, req)
		}
	}
	// Requests in flight fail.
	ids := make([]int64, 0, len(s.live))
	for id := range s.live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	counts := s.liveCounts()
	for _, id := range ids {
		l := s.live[id]
		rec := metrics.NewRecord(id, l.arrival)
		rec.InputTokens, rec.OutputTokens = l.input, l.output
		c := counts[id]
		rec.Preemptions, rec.Reprefills, rec.Retries = c.preemptions, c.reprefills, c.retries
		rec.Outcome, rec.Reason = metrics.Failed, reason
		s.end(&rec, now)
	}
	slices.SortFunc(notArrived, func(a, b workload.Request) int { return compareInt(a.ID, b.ID) })
	for i := range notArrived {
		s.truncate(&notArrived[i], now)
	}
	// The rest of the workload never arrived.
	for {
		if s.hasNext {
			for i := range s.next.Requests {
				s.truncate(&s.next.Requests[i], now)
			}
			s.hasNext = false
		}
		if s.srcDone {
			return nil
		}
		entry, err := s.src.Next()
		if errors.Is(err, io.EOF) {
			s.srcDone = true
			return nil
		}
		if err != nil {
			return err
		}
		s.next, s.hasNext = entry, true
	}
}

// counts are the counters of a request in flight summed into the run's
// totals (Summary: preemptions, re-prefills, retries).
type counts struct{ preemptions, reprefills, retries int }

// liveCounts gathers the counters of every request held by an instance or
// a handoff. A request may have copies of its record in several places (a
// prefill instance's pinned KV, a decode instance's queue, the handoff);
// each copy is a snapshot of counts that only grow, so the largest is the
// latest.
func (s *Sim) liveCounts() map[int64]counts {
	m := make(map[int64]counts, len(s.live))
	add := func(r *metrics.Record) {
		c := m[r.ID]
		c.preemptions = max(c.preemptions, r.Preemptions)
		c.reprefills = max(c.reprefills, r.Reprefills)
		c.retries = max(c.retries, r.Retries)
		m[r.ID] = c
	}
	for _, e := range s.engines {
		e.EachRecord(add)
	}
	if s.pd != nil {
		for _, h := range s.pd.hands {
			add(&h.rec)
		}
	}
	return m
}

// truncate ends a request that never arrived.
func (s *Sim) truncate(req *workload.Request, now int64) {
	s.total++
	rec := metrics.NewRecord(req.ID, -1)
	rec.InputTokens, rec.OutputTokens = req.InputTokens, req.OutputTokens
	rec.Outcome, rec.Reason = metrics.Truncated, "limit: never arrived"
	s.end(&rec, now)
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
