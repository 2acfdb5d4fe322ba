package workload

// Request is one inference request as the simulator consumes it.
type Request struct {
	// ID is unique within a run, assigned by the source in reading order
	// from 0 (a session's sub-requests take consecutive ids).
	ID int64
	// Session is the id of the session the request belongs to ("" for a
	// plain request); the cluster sets it from the entry.
	Session string
	// Arrival is the arrival time in ns since the start of the run. For a
	// session's sub-request k > 0 it is unknown until sub-request k-1
	// finishes and is left 0; Delay says how long after that it arrives.
	Arrival int64
	// Delay is, for a session's sub-request k > 0, the tool time in ns
	// between the finish of sub-request k-1 and this request's arrival.
	Delay int64
	// InputTokens and OutputTokens are the prompt and output lengths (> 0).
	InputTokens  int
	OutputTokens int
	// InputIDs and OutputIDs are optional token ids (nil when absent); when
	// present len(InputIDs) == InputTokens.
	InputIDs  []int32
	OutputIDs []int32
	// SpecAcceptance is the request's speculative-decoding acceptance
	// rate α (a trace's spec_acceptance_rate), used when the engine takes
	// acceptance from the trace (0 when the trace gives none: the reader
	// then requires it, see RequireSpecAcceptance).
	SpecAcceptance float64
	// AbortAt is, for a plain request, when its client goes away, ns since
	// the start of the run (a trace's abort_time_ns; 0: never): the request
	// ends failed with the reason "aborted by the client" unless it ended
	// before.
	AbortAt int64
	// Priority is the request's scheduling priority (vLLM's request
	// priority; a trace's priority field or workload.priorities): under
	// the engine's priority policy a smaller value is served first. 0 by
	// default.
	Priority int32
}

// Entry is one unit read from a source: a single request, or an agentic
// session whose sub-requests run one after another.
type Entry struct {
	// Session is the session id, or "" for a plain request.
	Session string
	// Requests holds one request for a plain line, or the session's
	// sub-requests in order; Requests[0].Arrival is the entry's arrival.
	Requests []Request
}

// Source streams entries in non-decreasing order of arrival. Next returns
// io.EOF after the last entry. Errors name the file and line.
// The returned entry's Requests belong to the caller, which may modify
// them: a Source never hands out or touches the same elements again,
// unless the caller gives them back (Releaser).
type Source interface {
	Next() (Entry, error)
}

// Counter is implemented by sources that can count the requests they
// would still return without building them (generated workloads), so that
// a run cut off by a limit counts the rest as truncated in time that does
// not grow with it.
type Counter interface {
	// Remaining returns the number of requests Next would still return,
	// and ok; the source is then exhausted (Next returns io.EOF). It
	// returns ok false, consuming nothing, when it cannot count them.
	Remaining() (n int64, ok bool)
}

// Remaining returns src's remaining request count when src is a Counter
// that can count them (see Counter).
func Remaining(src Source) (int64, bool) {
	if c, ok := src.(Counter); ok {
		return c.Remaining()
	}
	return 0, false
}

// Releaser is implemented by sources that can reuse the storage of plain
// entries. A caller that is done with a plain entry (one request, no
// session) and keeps no pointer into it may give it back with Release;
// the source may then hand the element out again, so a long run of plain
// requests allocates nothing per request. Releasing is optional.
type Releaser interface {
	Release(Entry)
}

// Release gives e back to src if src reuses entries, else does nothing.
func Release(src Source, e Entry) {
	if r, ok := src.(Releaser); ok {
		r.Release(e)
	}
}

// singles hands out the one-request slices of plain entries, carved from a
// shared backing array: a source of plain requests then allocates once per
// singlesChunk requests instead of once per request, and not at all once
// its consumer gives entries back (release). Each slice is its own
// element, handed out again only after it was released, with capacity 1,
// so the consumer owns it as if it had been allocated alone (an append
// copies).
type singles struct {
	buf  []Request
	free [][]Request // released one-request slices
}

const singlesChunk = 64

// entry returns a plain entry holding r.
func (s *singles) entry(r Request) Entry {
	if n := len(s.free); n > 0 {
		one := s.free[n-1]
		s.free = s.free[:n-1]
		one[0] = r
		return Entry{Requests: one}
	}
	if len(s.buf) == 0 {
		s.buf = make([]Request, singlesChunk)
	}
	s.buf[0] = r
	e := Entry{Requests: s.buf[:1:1]}
	s.buf = s.buf[1:]
	return e
}

// release takes back a plain entry's element for reuse; other entries are
// left alone. The element is cleared so that it keeps no token ids alive.
func (s *singles) release(e Entry) {
	if e.Session != "" || len(e.Requests) != 1 || cap(e.Requests) != 1 {
		return
	}
	e.Requests[0] = Request{}
	s.free = append(s.free, e.Requests)
}
