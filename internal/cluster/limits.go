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

// interruptEvery is how many events pass between interrupt checks (a power
// of two: RunUntil tests the event count with a mask).
const interruptEvery = 1024

// UnreadObserver is implemented by observers that take the number of
// requests a run cut off at a limit never read from its workload, as a
// count: they end truncated without a record each (a generated workload
// counts them without generating them, workload.Counter). With an
// observer that does not implement it, those requests are generated and
// reported one by one (Terminal).
type UnreadObserver interface {
	Observer
	TruncatedUnread(n int64)
}

// liveReq is what a request in flight needs for its record at a limit.
type liveReq struct {
	arrival       int64
	input, output int
	session       string
	priority      int32
}

// LimitReached says which limit ended the run ("" if none).
func (s *Sim) LimitReached() string { return s.limited }

// pastLimit reports whether the event at time at must not be processed
// (inlined: it is checked before every event); noteLimit then says which
// limit ended the run.
func (s *Sim) pastLimit(at int64) bool {
	return s.limits.MaxTime > 0 && at > s.limits.MaxTime || s.events >= s.eventBudget()
}

// eventBudget is the number of events the run may process.
func (s *Sim) eventBudget() int64 {
	if s.limits.MaxEvents != 0 {
		return s.limits.MaxEvents
	}
	return AutoEventsBase + AutoEventsPerToken*s.tokensSeen
}

// noteLimit records which limit stops the event at time at, which
// pastLimit reported.
func (s *Sim) noteLimit(at int64) {
	switch budget := s.eventBudget(); {
	case s.limits.MaxTime > 0 && at > s.limits.MaxTime:
		s.limited = fmt.Sprintf("max_sim_time_s %g reached", float64(s.limits.MaxTime)/1e9)
	case s.limits.MaxEvents > 0:
		s.limited = fmt.Sprintf("max_events %d reached", budget)
	default:
		s.limited = fmt.Sprintf("automatic event budget %d reached (no progress? set limits.max_events to raise it)", budget)
	}
}

// track notes an admitted request as in flight.
func (s *Sim) track(req *workload.Request, now int64) {
	*s.live.add(req.ID) = liveReq{arrival: now, input: req.InputTokens, output: req.OutputTokens, session: req.Session, priority: req.Priority}
	s.tokensSeen += int64(req.InputTokens) + int64(req.OutputTokens)
}

// cutOff ends the run at time now, at a limit or at an eager stop: every
// request still in the system fails with reason, and every one still to
// come ends truncated, in a deterministic order.
func (s *Sim) cutOff(now int64, reason string) error {
	// The entry held back by the concurrency limit (s.next) is counted
	// truncated below; no arrival is sent for it (now may be before the
	// clock, the time of the last event processed).
	s.cutting = true
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
	ids := make([]int64, 0, s.live.len())
	for id := range s.live.all {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	recs := s.liveRecords()
	for _, id := range ids {
		rec, ok := recs[id]
		if !ok {
			// Not yet on any instance: only what the cluster knows.
			l := s.live.get(id)
			rec = metrics.NewRecord(id, l.arrival)
			rec.Session, rec.InputTokens, rec.OutputTokens = l.session, l.input, l.output
			rec.Priority = l.priority
		}
		rec.Outcome, rec.Reason = metrics.Failed, reason
		if err := s.end(&rec, now); err != nil {
			return err
		}
	}
	slices.SortFunc(notArrived, func(a, b workload.Request) int { return compareInt(a.ID, b.ID) })
	for i := range notArrived {
		if err := s.truncate(&notArrived[i], now); err != nil {
			return err
		}
	}
	// The rest of the workload never arrived: counted at once when the
	// source can count it and the observer take a count, else read entry
	// by entry (a trace), with the interrupt check polled meanwhile.
	bulk, _ := s.obs.(UnreadObserver)
	for read := 1; ; read++ {
		if s.hasNext {
			for i := range s.next.Requests {
				if err := s.truncate(&s.next.Requests[i], now); err != nil {
					return err
				}
			}
			s.hasNext = false
		}
		if s.srcDone {
			return nil
		}
		if bulk != nil {
			if n, ok := workload.Remaining(s.src); ok {
				s.srcDone = true
				s.total += n
				s.terminal += n
				bulk.TruncatedUnread(n)
				return nil
			}
		}
		if s.interrupt != nil && read%interruptEvery == 0 && s.interrupt() {
			return ErrInterrupted
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

// liveRecords gathers the record of every request held by an instance or
// a handoff, as far as it got. A request may have copies of its record in
// several places (a prefill instance's pinned KV, a decode instance's
// queue, the handoff); each copy is a snapshot taken from the one before,
// whose times are set once or only grow, and whose counters only grow, so
// the request's record is the field-wise latest of its copies.
func (s *Sim) liveRecords() map[int64]metrics.Record {
	m := make(map[int64]metrics.Record, s.live.len())
	add := func(r *metrics.Record) {
		l, ok := s.live.lookup(r.ID)
		if !ok {
			return
		}
		if c, ok := m[r.ID]; ok {
			m[r.ID] = latest(c, *r)
			return
		}
		rec := *r
		rec.Arrival = l.arrival // the arrival at the cluster
		m[r.ID] = rec
	}
	for _, e := range s.engines {
		e.EachRecord(add)
	}
	if s.pd != nil {
		for _, h := range s.pd.hands.all {
			add(&h.rec)
		}
	}
	return m
}

// latest merges two copies of one request's record: every time, instance
// and counter the later of the two (-1, "never", is earliest).
func latest(a, b metrics.Record) metrics.Record {
	if a.Session == "" {
		a.Session = b.Session
	}
	for _, p := range [...][2]*int64{
		{&a.Queued, &b.Queued}, {&a.Scheduled, &b.Scheduled}, {&a.FirstToken, &b.FirstToken},
		{&a.LastToken, &b.LastToken}, {&a.MaxITL, &b.MaxITL}, {&a.TierLoadNs, &b.TierLoadNs},
		{&a.PrefillEnd, &b.PrefillEnd}, {&a.Reserved, &b.Reserved}, {&a.TransferStart, &b.TransferStart},
		{&a.TransferEnd, &b.TransferEnd}, {&a.HandoffWait, &b.HandoffWait}, {&a.CapacityWait, &b.CapacityWait},
	} {
		*p[0] = max(*p[0], *p[1])
	}
	for _, p := range [...][2]*int{
		{&a.Generated, &b.Generated}, {&a.CachedTokens, &b.CachedTokens}, {&a.Preemptions, &b.Preemptions},
		{&a.Reprefills, &b.Reprefills}, {&a.Retries, &b.Retries},
	} {
		*p[0] = max(*p[0], *p[1])
	}
	a.PrefillInstance = max(a.PrefillInstance, b.PrefillInstance)
	a.DecodeInstance = max(a.DecodeInstance, b.DecodeInstance)
	a.PrefixTier = max(a.PrefixTier, b.PrefixTier)
	return a
}

// truncate ends a request that never arrived.
func (s *Sim) truncate(req *workload.Request, now int64) error {
	s.total++
	rec := metrics.NewRecord(req.ID, -1)
	rec.InputTokens, rec.OutputTokens = req.InputTokens, req.OutputTokens
	rec.Priority = req.Priority
	rec.Outcome, rec.Reason = metrics.Truncated, "limit: never arrived"
	return s.end(&rec, now)
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
