package metrics

// Outcome is how a request ended. Every request ends in exactly one.
type Outcome uint8

// Outcomes.
const (
	Finished Outcome = iota + 1 // all output tokens produced
	Rejected                    // refused by admission control
	Failed                      // could not be served (reason says why)
	// Truncated: never arrived, because a run limit ended the run first.
	Truncated
)

// String returns the outcome's name as used in outputs.
func (o Outcome) String() string {
	switch o {
	case Finished:
		return "finished"
	case Rejected:
		return "rejected"
	case Failed:
		return "failed"
	case Truncated:
		return "truncated"
	}
	return "unknown"
}

// Record is the life of one request. Times are ns since the start of the run;
// a time that never happened is -1.
//
// The fields are ordered by use, so that a record starting on a cache line
// (as in an engine's request slot) is read in as few lines as it can be:
// its first two lines (128 bytes) hold all that a run's summary reads of a
// finished request (Summary.Add), the third what it reads besides of a
// request that went through a P/D handoff, the fourth what KV tiers and a
// front end add. A record is 240 bytes (TestRecordLayout).
type Record struct {
	ID              int64
	Priority        int32 // the request's scheduling priority (0 unless the workload gives one)
	PrefillInstance int32 // instance that computed the prompt (-1 if none)
	DecodeInstance  int32 // instance that produced the output (-1 if none)
	// The byte-sized fields sit together after the int32s, in what would
	// otherwise be padding.
	PrefixTier   int8    // see KV tiers, below
	Outcome      Outcome // how it ended (Reason, below, says why if not finished)
	FrontEnd     bool    // see front end, below
	InputTokens  int
	OutputTokens int   // requested output length
	Generated    int   // output tokens actually produced
	CachedTokens int   // prompt tokens served from the prefix cache at first admission
	Preemptions  int   // times it was preempted (recompute)
	Arrival      int64 // arrival at the cluster
	// Queued is when the serving engine picked the request up: engines
	// take new requests between steps, so this is the arrival, or the end
	// of the step in flight at arrival. vLLM records it as queued_ts.
	Queued     int64
	Scheduled  int64 // first time any of its tokens was in a batch
	FirstToken int64 // first output token emitted to the client
	LastToken  int64 // last output token emitted
	MaxITL     int64 // largest gap between consecutive output tokens
	// P/D handoff counts (the times are below): how often the prompt was
	// computed again (its KV lost, a pushed copy dropped or its lease
	// expired) and how often the prefilled request moved to another
	// decode queue after waiting in one.
	Reprefills int
	Retries    int
	// P/D handoff. Times are -1 and HandoffWait/CapacityWait are -1 when the
	// request had no handoff (colocated runs); NewRecord sets them so.
	PrefillEnd    int64 // prompt computed on the prefill instance
	Reserved      int64 // decode blocks reserved
	TransferStart int64
	TransferEnd   int64
	HandoffWait   int64 // ns from prefill end to decode reservation
	CapacityWait  int64 // ns held back because decode capacity was not available
	Session       string
	// KV tiers (0 without them): the time spent loading prefixes from a
	// tier below the GPU before computing, summed over its admissions,
	// and (PrefixTier, above) the tier its latest loaded prefix came from
	// (1 host, 2 disk).
	TierLoadNs int64
	Reason     string // why it was rejected or failed ("" when finished)
	// Front end (a served endpoint, docs/client.md): with it, Arrival is
	// when the client sent the request and FirstToken / LastToken are
	// when the client received the first and last streamed chunk; these
	// keep the engine-side times: when the request reached the engine
	// core (vLLM's arrival at the engine, before queued_ts) and when the
	// engine emitted its first and last token. -1 without a front end.
	// FrontEnd (above) is set when they apply.
	EngineArrival    int64
	EngineFirstToken int64
	EngineLastToken  int64
}

// ClientSide reports whether the record's Arrival, FirstToken and
// LastToken are client-side times (a front end was simulated).
func (r *Record) ClientSide() bool { return r.FrontEnd }

// EngineTTFT is the engine-side time to first token in ns: from the
// request reaching the engine to its first token leaving it (TTFT without
// a front end; -1 if no token was produced).
func (r *Record) EngineTTFT() int64 {
	if !r.ClientSide() {
		return r.TTFT()
	}
	if r.EngineFirstToken < 0 {
		return -1
	}
	return r.EngineFirstToken - r.EngineArrival
}

// EngineTPOT is TPOT from the engine's token times (TPOT without a front
// end).
func (r *Record) EngineTPOT() int64 {
	if !r.ClientSide() {
		return r.TPOT()
	}
	if r.Generated < 2 || r.EngineFirstToken < 0 {
		return -1
	}
	return (r.EngineLastToken - r.EngineFirstToken) / int64(r.Generated-1)
}

// TTFT is time to first token in ns (-1 if no token was produced).
func (r *Record) TTFT() int64 {
	if r.FirstToken < 0 {
		return -1
	}
	return r.FirstToken - r.Arrival
}

// TPOT is the mean time per output token after the first, in ns; -1 when
// fewer than two tokens were produced.
func (r *Record) TPOT() int64 {
	if r.Generated < 2 || r.FirstToken < 0 {
		return -1
	}
	return (r.LastToken - r.FirstToken) / int64(r.Generated-1)
}

// E2E is the end-to-end latency in ns (-1 if the request did not finish).
func (r *Record) E2E() int64 {
	if r.Outcome != Finished {
		return -1
	}
	return r.LastToken - r.Arrival
}

// QueueDelay is the time from arrival at the engine to first scheduling
// (-1 if never).
func (r *Record) QueueDelay() int64 {
	if r.Scheduled < 0 {
		return -1
	}
	if r.FrontEnd {
		return r.Scheduled - r.EngineArrival
	}
	return r.Scheduled - r.Arrival
}

// NewRecord returns a record for request id arriving at arrival (ns) with
// every time, instance and P/D duration set to -1 ("never"), counters zero.
// Engines should start from it so that untouched fields read as absent.
func NewRecord(id, arrival int64) Record {
	r := Record{
		ID:              id,
		PrefillInstance: -1,
		DecodeInstance:  -1,
		Arrival:         arrival,
		Queued:          -1,
		Scheduled:       -1,
		FirstToken:      -1,
		LastToken:       -1,
		MaxITL:          -1,
		PrefillEnd:      -1,
		Reserved:        -1,
		TransferStart:   -1,
		TransferEnd:     -1,
		HandoffWait:     -1,
		CapacityWait:    -1,
	}
	r.EngineArrival, r.EngineFirstToken, r.EngineLastToken = -1, -1, -1
	return r
}

// TransferTime is the KV transfer duration in ns (-1 if no transfer both
// started and ended).
func (r *Record) TransferTime() int64 {
	if r.TransferStart < 0 || r.TransferEnd < 0 {
		return -1
	}
	return r.TransferEnd - r.TransferStart
}

// Handoff reports whether the request was prefilled on one instance and
// decoded on another, i.e. went through a P/D handoff. Zero-valued P/D
// fields of a colocated record therefore never count as a handoff.
func (r *Record) Handoff() bool {
	return r.PrefillInstance >= 0 && r.DecodeInstance >= 0 &&
		r.PrefillInstance != r.DecodeInstance
}
