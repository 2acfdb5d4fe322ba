package workload

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// MeasuredRequest is one line of a measured vLLM run's requests.jsonl.
// Timestamps are seconds: ArrivalTime on the epoch clock, the others on the
// engine's monotonic clock (QueuedTS is the arrival on that clock).
type MeasuredRequest struct {
	// RequestID is vLLM's request id, e.g. "bench-17".
	RequestID string `json:"request_id"`
	// Index is the trailing integer of RequestID (17 for "bench-17"): the
	// request's position in the workload file the run replayed.
	Index int `json:"-"`
	// InputToks and OutputToks are the prompt and output lengths.
	InputToks  int `json:"input_toks"`
	OutputToks int `json:"output_toks"`
	// ArrivalTime is the client's submit time (epoch seconds).
	ArrivalTime float64 `json:"arrival_time"`
	// QueuedTS, ScheduledTS, FirstTokenTS and LastTokenTS are engine
	// timestamps (monotonic seconds).
	QueuedTS     float64 `json:"queued_ts"`
	ScheduledTS  float64 `json:"scheduled_ts"`
	FirstTokenTS float64 `json:"first_token_ts"`
	LastTokenTS  float64 `json:"last_token_ts"`
}

// TTFT is the time to first token in seconds: FirstTokenTS - QueuedTS.
func (m MeasuredRequest) TTFT() float64 { return m.FirstTokenTS - m.QueuedTS }

// TPOT is the time per output token after the first, in seconds:
// (LastTokenTS - FirstTokenTS) / (OutputToks - 1). ok is false when
// OutputToks <= 1, where TPOT is undefined.
func (m MeasuredRequest) TPOT() (tpot float64, ok bool) {
	if m.OutputToks <= 1 {
		return 0, false
	}
	return (m.LastTokenTS - m.FirstTokenTS) / float64(m.OutputToks-1), true
}

// E2E is the end-to-end latency in seconds: LastTokenTS - QueuedTS.
func (m MeasuredRequest) E2E() float64 { return m.LastTokenTS - m.QueuedTS }

// QueueDelay is the time from arrival to first scheduling in seconds:
// ScheduledTS - QueuedTS.
func (m MeasuredRequest) QueueDelay() float64 { return m.ScheduledTS - m.QueuedTS }

// measuredLine uses pointers to tell missing fields from zero ones.
type measuredLine struct {
	RequestID    *string  `json:"request_id"`
	InputToks    *int64   `json:"input_toks"`
	OutputToks   *int64   `json:"output_toks"`
	ArrivalTime  *float64 `json:"arrival_time"`
	QueuedTS     *float64 `json:"queued_ts"`
	ScheduledTS  *float64 `json:"scheduled_ts"`
	FirstTokenTS *float64 `json:"first_token_ts"`
	LastTokenTS  *float64 `json:"last_token_ts"`
}

const measuredFields = "request_id, input_toks, output_toks, arrival_time, queued_ts, scheduled_ts, first_token_ts, last_token_ts"

// ReadMeasured reads a measured run's requests.jsonl (all fields required,
// unknown fields rejected, blank lines skipped). It checks token counts
// (> 0), that timestamps are finite and ordered queued <= scheduled <=
// first token <= last token, and that request ids end in distinct
// "-<index>" numbers. Requests are returned in file order. Errors read
// "name:line: what is wrong; how to fix".
func ReadMeasured(r io.Reader, name string) ([]MeasuredRequest, error) {
	lines := newLineReader(r, name)
	var out []MeasuredRequest
	seen := map[int]int{} // index -> line
	for {
		line, err := lines.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			continue
		}
		var ml measuredLine
		if msg, err := decodeStrict(line, &ml, measuredFields); err != nil {
			return nil, lines.errorf(err, "%s", msg)
		}
		m, err := convertMeasured(lines, &ml)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[m.Index]; dup {
			return nil, lines.errorf(nil, "request_id %q repeats index %d of line %d; every request needs its own -<index>",
				m.RequestID, m.Index, prev)
		}
		seen[m.Index] = lines.line
		out = append(out, m)
	}
}

func convertMeasured(lines *lineReader, ml *measuredLine) (MeasuredRequest, error) {
	if ml.RequestID == nil {
		return MeasuredRequest{}, lines.errorf(nil, `request_id is missing; add "request_id": "bench-<index>"`)
	}
	idx, ok := trailingIndex(*ml.RequestID)
	if !ok {
		return MeasuredRequest{}, lines.errorf(nil, `request_id %q does not end in "-<index>"; name requests like "bench-17"`, *ml.RequestID)
	}
	m := MeasuredRequest{RequestID: *ml.RequestID, Index: idx}
	for _, c := range []struct {
		name string
		p    *int64
		dst  *int
	}{
		{"input_toks", ml.InputToks, &m.InputToks},
		{"output_toks", ml.OutputToks, &m.OutputToks},
	} {
		switch {
		case c.p == nil:
			return MeasuredRequest{}, lines.errorf(nil, `%s is missing; add "%s": <count > 0>`, c.name, c.name)
		case *c.p <= 0 || *c.p > maxTokens:
			return MeasuredRequest{}, lines.errorf(nil, "%s must be in [1, %d] (got %d); fix the token count", c.name, maxTokens, *c.p)
		}
		*c.dst = int(*c.p)
	}
	for _, c := range []struct {
		name string
		p    *float64
		dst  *float64
	}{
		{"arrival_time", ml.ArrivalTime, &m.ArrivalTime},
		{"queued_ts", ml.QueuedTS, &m.QueuedTS},
		{"scheduled_ts", ml.ScheduledTS, &m.ScheduledTS},
		{"first_token_ts", ml.FirstTokenTS, &m.FirstTokenTS},
		{"last_token_ts", ml.LastTokenTS, &m.LastTokenTS},
	} {
		if c.p == nil {
			return MeasuredRequest{}, lines.errorf(nil, `%s is missing; add "%s": <seconds>`, c.name, c.name)
		}
		*c.dst = *c.p
	}
	order := []struct {
		name string
		v    float64
	}{
		{"queued_ts", m.QueuedTS}, {"scheduled_ts", m.ScheduledTS},
		{"first_token_ts", m.FirstTokenTS}, {"last_token_ts", m.LastTokenTS},
	}
	for i := 1; i < len(order); i++ {
		if order[i].v < order[i-1].v {
			return MeasuredRequest{}, lines.errorf(nil, "%s %v is earlier than %s %v; timestamps must be queued <= scheduled <= first token <= last token",
				order[i].name, order[i].v, order[i-1].name, order[i-1].v)
		}
	}
	return m, nil
}

// trailingIndex parses the integer after the last '-' of id.
func trailingIndex(id string) (int, bool) {
	i := strings.LastIndexByte(id, '-')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(id[i+1:])
	if err != nil || n < 0 || id[i+1] == '+' {
		return 0, false
	}
	return n, true
}

// MeasuredSource replays a measured run with its arrival times: each
// request arrives at QueuedTS - min(QueuedTS) seconds, converted to ns and
// rounded. Requests are ordered by Index, then stably sorted by arrival,
// and Request.ID is the measured Index (so results join with the measured
// run by "bench-<ID>"; IDs are then not necessarily in arrival order).
//
// ids, when non-nil, supplies token ids for the request with a given
// Index (typically from the workload file the run replayed, see
// TokenIDsByID); it may return nil slices. Lengths that differ from the
// measured token counts are an error, as are duplicate indices. reqs is
// not modified.
func MeasuredSource(reqs []MeasuredRequest, ids func(index int) (in, out []int32)) (Source, error) {
	sorted := slices.Clone(reqs)
	slices.SortStableFunc(sorted, func(a, b MeasuredRequest) int { return a.Index - b.Index })
	minQ := math.Inf(1)
	for i, m := range sorted {
		if i > 0 && m.Index == sorted[i-1].Index {
			return nil, fmt.Errorf("workload: measured requests %q and %q share index %d; every request needs its own -<index>",
				sorted[i-1].RequestID, m.RequestID, m.Index)
		}
		if math.IsNaN(m.QueuedTS) || math.IsInf(m.QueuedTS, 0) {
			return nil, fmt.Errorf("workload: measured request %q: queued_ts is not finite (%v); fix the measured data", m.RequestID, m.QueuedTS)
		}
		minQ = min(minQ, m.QueuedTS)
	}
	out := make([]Request, len(sorted))
	for i, m := range sorted {
		if m.InputToks <= 0 || m.OutputToks <= 0 {
			return nil, fmt.Errorf("workload: measured request %q: token counts must be > 0 (got input %d, output %d)",
				m.RequestID, m.InputToks, m.OutputToks)
		}
		arr := math.Round((m.QueuedTS - minQ) * 1e9)
		if !(arr <= MaxTimeNs) {
			return nil, &InputError{fmt.Errorf("workload: measured request %q: arrival %.0f ns is beyond the simulator's clock bound of %d ns; fix queued_ts", m.RequestID, arr, int64(MaxTimeNs))}
		}
		r := Request{ID: int64(m.Index), Arrival: int64(arr), InputTokens: m.InputToks, OutputTokens: m.OutputToks}
		if ids != nil {
			r.InputIDs, r.OutputIDs = ids(m.Index)
			if r.InputIDs != nil && len(r.InputIDs) != r.InputTokens {
				return nil, fmt.Errorf("workload: measured request %q has input_toks %d but its token ids number %d; replay it with the workload file the run used",
					m.RequestID, r.InputTokens, len(r.InputIDs))
			}
			if r.OutputIDs != nil && len(r.OutputIDs) != r.OutputTokens {
				return nil, fmt.Errorf("workload: measured request %q has output_toks %d but its output token ids number %d; replay it with the workload file the run used",
					m.RequestID, r.OutputTokens, len(r.OutputIDs))
			}
		}
		out[i] = r
	}
	slices.SortStableFunc(out, func(a, b Request) int {
		switch {
		case a.Arrival < b.Arrival:
			return -1
		case a.Arrival > b.Arrival:
			return 1
		}
		return 0
	})
	return &sliceSource{reqs: out}, nil
}

// sliceSource yields one plain entry per request of a slice.
type sliceSource struct {
	reqs []Request
	next int
	one  singles
}

// Next implements Source.
func (s *sliceSource) Next() (Entry, error) {
	if s.next >= len(s.reqs) {
		return Entry{}, io.EOF
	}
	r := s.reqs[s.next]
	s.next++
	return s.one.entry(r), nil
}

// Release implements Releaser: plain entries' storage is reused.
func (s *sliceSource) Release(e Entry) { s.one.release(e) }

// TokenIDsByID reads src to the end and returns a lookup of the token ids
// of each request by Request.ID (nil slices for unknown ids or requests
// without ids), for MeasuredSource. It holds the whole trace in memory;
// use it for small replay traces only.
func TokenIDsByID(src Source) (func(id int) (in, out []int32), error) {
	type pair struct{ in, out []int32 }
	byID := map[int64]pair{}
	for {
		e, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		for _, r := range e.Requests {
			byID[r.ID] = pair{r.InputIDs, r.OutputIDs}
		}
	}
	return func(id int) ([]int32, []int32) {
		p := byID[int64(id)]
		return p.in, p.out
	}, nil
}
