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
type Source interface {
	Next() (Entry, error)
}
