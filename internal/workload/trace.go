package workload

import (
	"fmt"
	"io"
	"math"
)

// maxTokens bounds input_toks and output_toks so that lengths fit in an
// int32 token position everywhere downstream.
const maxTokens = math.MaxInt32

const traceFields = `input_toks, output_toks, arrival_time_ns, input_tok_ids, output_tok_ids, spec_acceptance_rate, abort_time_ns, priority ` +
	`(plain line) or session_id, arrival_time_ns, priority, sub_requests (session line; ` +
	`sub-requests take input_toks, output_toks, tool_duration_ns, input_tok_ids, output_tok_ids, spec_acceptance_rate)`

// traceLine is the union of the plain and the session line. Pointers tell
// a missing field from a zero one.
type traceLine struct {
	InputToks     *int64   `json:"input_toks"`
	OutputToks    *int64   `json:"output_toks"`
	ArrivalTimeNs *int64   `json:"arrival_time_ns"`
	InputTokIDs   []int32  `json:"input_tok_ids"`
	OutputTokIDs  []int32  `json:"output_tok_ids"`
	SpecAccept    *float64 `json:"spec_acceptance_rate"`
	AbortTimeNs   *int64   `json:"abort_time_ns"`
	Priority      *int64   `json:"priority"`

	SessionID   *string       `json:"session_id"`
	SubRequests *[]traceSubRq `json:"sub_requests"`
}

type traceSubRq struct {
	InputToks      *int64   `json:"input_toks"`
	OutputToks     *int64   `json:"output_toks"`
	ToolDurationNs *int64   `json:"tool_duration_ns"`
	InputTokIDs    []int32  `json:"input_tok_ids"`
	OutputTokIDs   []int32  `json:"output_tok_ids"`
	SpecAccept     *float64 `json:"spec_acceptance_rate"`
}

// traceReader is the Source returned by NewTraceReader.
type traceReader struct {
	one         singles // backing of plain entries
	lines       *lineReader
	nextID      int64
	lastArrival int64
	err         error // sticky: once set, every Next returns it
	needAccept  bool  // spec_acceptance_rate is required (RequireSpecAcceptance)
}

// RequireSpecAcceptance makes the trace reader src refuse a request
// without spec_acceptance_rate (the engine takes speculative decoding's
// acceptance from the trace), looking through Scale and Take. It reports
// false when src is not a trace reader.
func RequireSpecAcceptance(src Source) bool {
	switch s := src.(type) {
	case *traceReader:
		s.needAccept = true
		return true
	case *scaled:
		return RequireSpecAcceptance(s.src)
	case *taken:
		return RequireSpecAcceptance(s.src)
	}
	return false
}

// NewTraceReader returns a Source that streams the JSONL trace in r; name
// (usually the file path) prefixes every error as "name:line: ...".
//
// Each non-blank line is one JSON object, either a plain request
//
//	{"input_toks": 2358, "output_toks": 531, "arrival_time_ns": 46926808,
//	 "input_tok_ids": [...], "output_tok_ids": [...]}
//
// or an agentic session (recognised by session_id or sub_requests)
//
//	{"session_id": "s1", "arrival_time_ns": 0, "sub_requests": [
//	  {"input_toks": 1472, "output_toks": 133, "tool_duration_ns": 127348767},
//	  {"input_toks": 1582, "output_toks": 125, "tool_duration_ns": 0}]}
//
// A plain line may add "abort_time_ns": the time its client went away (at
// or after its arrival; the request then ends aborted unless it finished
// first); servesim serve --record writes it for disconnected clients.
// Either line may add "priority", an integer (vLLM's request priority,
// 0 when absent; a session's applies to all its sub-requests).
//
// Sub-request k's tool_duration_ns is the tool time after sub-request k
// finishes, so it becomes Requests[k+1].Delay; the last sub-request's value
// is checked (>= 0) and otherwise ignored, and a missing tool_duration_ns
// is 0 (the LLMServingSim convention).
//
// The reader is strict: unknown or repeated fields, missing or
// non-positive token counts, negative times, negative token ids, token-id
// arrays whose length differs from the count, and arrivals earlier than
// the previous line's are errors. Token
// ids are optional; when absent InputIDs/OutputIDs are nil. Request ids are
// assigned from 0 in file order, a session's sub-requests taking
// consecutive ids. Blank lines are skipped. Memory stays flat: the reader
// keeps one line buffer and the previous arrival time, nothing else (so
// session ids are not checked for uniqueness).
//
// After the first error every call to Next returns that error.
func NewTraceReader(r io.Reader, name string) Source {
	return &traceReader{lines: newLineReader(r, name)}
}

// Next implements Source.
func (t *traceReader) Next() (Entry, error) {
	if t.err != nil {
		return Entry{}, t.err
	}
	e, err := t.next()
	if err != nil {
		t.err = err
	}
	return e, err
}

// Release implements Releaser: plain entries' storage is reused.
func (t *traceReader) Release(e Entry) { t.one.release(e) }

func (t *traceReader) next() (Entry, error) {
	for {
		line, err := t.lines.next()
		if err != nil {
			return Entry{}, err
		}
		if len(line) == 0 {
			continue
		}
		var tl traceLine
		if msg, err := decodeStrict(line, &tl, traceFields); err != nil {
			return Entry{}, t.lines.errorf(err, "%s", msg)
		}
		var e Entry
		if tl.SessionID != nil || tl.SubRequests != nil {
			e, err = t.session(&tl)
		} else {
			e, err = t.plain(&tl)
		}
		if err != nil {
			return Entry{}, err
		}
		t.lastArrival = e.Requests[0].Arrival
		t.nextID += int64(len(e.Requests))
		return e, nil
	}
}

// InputError marks a workload error caused by the workload's data or
// settings (not by the simulator): callers report it as bad input.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *InputError) Unwrap() error { return e.Err }

// MaxTimeNs bounds every time a workload states: arrival times, tool
// durations, and a session's arrival plus all its tool times (1e16 ns,
// about 115 days). Simulated runs add step times, leases and transfers on
// top; the bound keeps all of that far from int64 overflow.
const MaxTimeNs = 1e16

// arrival checks arrival_time_ns (present, >= 0, not before the previous
// line).
func (t *traceReader) arrival(p *int64) (int64, error) {
	switch {
	case p == nil:
		return 0, t.lines.errorf(nil, `arrival_time_ns is missing; add "arrival_time_ns": <ns since the start of the run>`)
	case *p < 0:
		return 0, t.lines.errorf(nil, "arrival_time_ns must be >= 0 (got %d); arrival times are ns since the start of the run", *p)
	case *p > MaxTimeNs:
		return 0, t.lines.errorf(nil, "arrival_time_ns %d is beyond the simulator's clock bound of %d ns (about 115 days); use a shorter trace", *p, int64(MaxTimeNs))
	case *p < t.lastArrival:
		return 0, t.lines.errorf(nil, "arrival_time_ns %d is earlier than the previous line's %d; sort the trace by arrival_time_ns",
			*p, t.lastArrival)
	}
	return *p, nil
}

// plain converts a plain request line.
func (t *traceReader) plain(tl *traceLine) (Entry, error) {
	arr, err := t.arrival(tl.ArrivalTimeNs)
	if err != nil {
		return Entry{}, err
	}
	r, err := t.request("", tl.InputToks, tl.OutputToks, tl.InputTokIDs, tl.OutputTokIDs, tl.SpecAccept)
	if err != nil {
		return Entry{}, err
	}
	r.ID = t.nextID
	r.Arrival = arr
	if r.Priority, err = t.priority(tl.Priority); err != nil {
		return Entry{}, err
	}
	if a := tl.AbortTimeNs; a != nil {
		if *a < arr || *a <= 0 || *a > MaxTimeNs {
			return Entry{}, t.lines.errorf(nil, "abort_time_ns %d must be > 0, at or after arrival_time_ns %d and at most %d; it is when the client went away, ns since the start of the run", *a, arr, int64(MaxTimeNs))
		}
		r.AbortAt = *a
	}
	return t.one.entry(r), nil
}

// session converts an agentic session line.
func (t *traceReader) session(tl *traceLine) (Entry, error) {
	for _, f := range []struct {
		name    string
		present bool
	}{
		{"input_toks", tl.InputToks != nil},
		{"output_toks", tl.OutputToks != nil},
		{"input_tok_ids", tl.InputTokIDs != nil},
		{"output_tok_ids", tl.OutputTokIDs != nil},
		{"spec_acceptance_rate", tl.SpecAccept != nil},
		{"abort_time_ns", tl.AbortTimeNs != nil},
	} {
		if f.present {
			return Entry{}, t.lines.errorf(nil, "%s is not allowed at the top of a session line; move it into the sub_requests objects", f.name)
		}
	}
	switch {
	case tl.SessionID == nil:
		return Entry{}, t.lines.errorf(nil, `session_id is missing on a line with sub_requests; add "session_id": "<name>"`)
	case *tl.SessionID == "":
		return Entry{}, t.lines.errorf(nil, "session_id is empty; give the session a non-empty name")
	case tl.SubRequests == nil:
		return Entry{}, t.lines.errorf(nil, `sub_requests is missing on a session line; add "sub_requests": [{"input_toks": ..., "output_toks": ...}]`)
	case len(*tl.SubRequests) == 0:
		return Entry{}, t.lines.errorf(nil, "sub_requests is empty; a session needs at least one sub-request")
	}
	arr, err := t.arrival(tl.ArrivalTimeNs)
	if err != nil {
		return Entry{}, err
	}
	prio, err := t.priority(tl.Priority)
	if err != nil {
		return Entry{}, err
	}
	subs := *tl.SubRequests
	reqs := make([]Request, len(subs))
	var delay int64
	total := arr // arrival plus every tool time so far: bounded by MaxTimeNs
	for k := range subs {
		s := &subs[k]
		path := fmt.Sprintf("sub_requests[%d].", k)
		r, err := t.request(path, s.InputToks, s.OutputToks, s.InputTokIDs, s.OutputTokIDs, s.SpecAccept)
		if err != nil {
			return Entry{}, err
		}
		if s.ToolDurationNs != nil && *s.ToolDurationNs < 0 {
			return Entry{}, t.lines.errorf(nil, "%stool_duration_ns must be >= 0 (got %d); it is the tool time in ns after this sub-request finishes",
				path, *s.ToolDurationNs)
		}
		if s.ToolDurationNs != nil && *s.ToolDurationNs > MaxTimeNs-total {
			return Entry{}, t.lines.errorf(nil, "%stool_duration_ns %d takes the session past the simulator's clock bound of %d ns (arrival plus tool times); use shorter tool times",
				path, *s.ToolDurationNs, int64(MaxTimeNs))
		}
		r.ID = t.nextID + int64(k)
		r.Priority = prio
		if k == 0 {
			r.Arrival = arr
		} else {
			r.Delay = delay
		}
		delay = 0
		if s.ToolDurationNs != nil {
			delay = *s.ToolDurationNs
			total += delay
		}
		reqs[k] = r
	}
	return Entry{Session: *tl.SessionID, Requests: reqs}, nil
}

// request checks token counts and ids; path prefixes field names for
// sub-requests.
func (t *traceReader) request(path string, in, out *int64, inIDs, outIDs []int32, accept *float64) (Request, error) {
	nIn, err := t.count(path+"input_toks", in, "prompt length")
	if err != nil {
		return Request{}, err
	}
	nOut, err := t.count(path+"output_toks", out, "number of tokens to generate")
	if err != nil {
		return Request{}, err
	}
	if inIDs != nil && len(inIDs) != nIn {
		return Request{}, t.lines.errorf(nil, "%sinput_tok_ids has %d ids but input_toks is %d; make input_toks equal the number of ids or drop input_tok_ids",
			path, len(inIDs), nIn)
	}
	if outIDs != nil && len(outIDs) != nOut {
		return Request{}, t.lines.errorf(nil, "%soutput_tok_ids has %d ids but output_toks is %d; make output_toks equal the number of ids or drop output_tok_ids",
			path, len(outIDs), nOut)
	}
	for _, ids := range []struct {
		field string
		ids   []int32
	}{{"input_tok_ids", inIDs}, {"output_tok_ids", outIDs}} {
		for k, id := range ids.ids {
			if id < 0 {
				return Request{}, t.lines.errorf(nil, "%s%s[%d] is %d; token ids are >= 0", path, ids.field, k, id)
			}
		}
	}
	alpha := 0.0
	switch {
	case accept != nil && !(*accept >= 0 && *accept < 1):
		return Request{}, t.lines.errorf(nil, "%sspec_acceptance_rate must be in [0, 1) (got %g); it is the probability that a proposed token is accepted given the previous ones were", path, *accept)
	case accept != nil:
		alpha = *accept
	case t.needAccept:
		return Request{}, t.lines.errorf(nil, `%sspec_acceptance_rate is missing; engine.speculative.acceptance: trace needs it on every request: add "spec_acceptance_rate": <α in [0, 1)> or set acceptance_rate in the scenario`, path)
	}
	return Request{InputTokens: nIn, OutputTokens: nOut, InputIDs: inIDs, OutputIDs: outIDs, SpecAcceptance: alpha}, nil
}

// priority checks the optional priority field (0 when absent): an
// integer in the int32 range.
func (t *traceReader) priority(p *int64) (int32, error) {
	if p == nil {
		return 0, nil
	}
	if *p < math.MinInt32 || *p > math.MaxInt32 {
		return 0, t.lines.errorf(nil, "priority %d is out of range [%d, %d]; it is the request's scheduling priority (smaller: served first under scheduling_policy priority)", *p, math.MinInt32, math.MaxInt32)
	}
	return int32(*p), nil
}

// count checks one token count: present and in [1, maxTokens].
func (t *traceReader) count(field string, p *int64, what string) (int, error) {
	switch {
	case p == nil:
		return 0, t.lines.errorf(nil, `%s is missing; add "%s": <%s, > 0>`, field, lastField(field), what)
	case *p <= 0:
		return 0, t.lines.errorf(nil, "%s must be > 0 (got %d); it is the %s", field, *p, what)
	case *p > maxTokens:
		return 0, t.lines.errorf(nil, "%s must be at most %d (got %d); it is the %s", field, maxTokens, *p, what)
	}
	return int(*p), nil
}

// lastField strips a "sub_requests[k]." prefix.
func lastField(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '.' {
			return path[i+1:]
		}
	}
	return path
}
