package workload

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

func collectTrace(t *testing.T, data string) ([]Entry, error) {
	t.Helper()
	return Collect(NewTraceReader(strings.NewReader(data), "t.jsonl"))
}

func TestTraceReaderValid(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []Entry
	}{
		{
			name: "empty",
			data: "",
		},
		{
			name: "blank lines only",
			data: "\n  \n\r\n",
		},
		{
			name: "plain with and without ids, CRLF, no final newline",
			data: `{"input_toks": 3, "output_toks": 2, "arrival_time_ns": 5, "input_tok_ids": [1,2,3], "output_tok_ids": [7,8]}` + "\r\n" +
				"\n" +
				`{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 5}`,
			want: []Entry{
				{Requests: []Request{{ID: 0, Arrival: 5, InputTokens: 3, OutputTokens: 2, InputIDs: []int32{1, 2, 3}, OutputIDs: []int32{7, 8}}}},
				{Requests: []Request{{ID: 1, Arrival: 5, InputTokens: 1, OutputTokens: 1}}},
			},
		},
		{
			name: "session between plain lines",
			data: `{"input_toks": 100, "output_toks": 50, "arrival_time_ns": 0}
{"session_id": "s0", "arrival_time_ns": 1000000, "sub_requests": [{"input_toks": 200, "output_toks": 100, "tool_duration_ns": 7}, {"input_toks": 2, "output_toks": 1, "input_tok_ids": [4, 5], "tool_duration_ns": 9}, {"input_toks": 3, "output_toks": 4}]}
{"input_toks": 150, "output_toks": 80, "arrival_time_ns": 2000000}`,
			want: []Entry{
				{Requests: []Request{{ID: 0, Arrival: 0, InputTokens: 100, OutputTokens: 50}}},
				{Session: "s0", Requests: []Request{
					{ID: 1, Arrival: 1000000, InputTokens: 200, OutputTokens: 100},
					{ID: 2, Delay: 7, InputTokens: 2, OutputTokens: 1, InputIDs: []int32{4, 5}},
					{ID: 3, Delay: 9, InputTokens: 3, OutputTokens: 4},
				}},
				{Requests: []Request{{ID: 4, Arrival: 2000000, InputTokens: 150, OutputTokens: 80}}},
			},
		},
		{
			name: "priorities on a plain line and a session line",
			data: `{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 0, "priority": -3}
{"session_id": "s", "arrival_time_ns": 1, "priority": 2, "sub_requests": [{"input_toks": 1, "output_toks": 1}, {"input_toks": 2, "output_toks": 1}]}
{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 2}`,
			want: []Entry{
				{Requests: []Request{{ID: 0, InputTokens: 1, OutputTokens: 1, Priority: -3}}},
				{Session: "s", Requests: []Request{
					{ID: 1, Arrival: 1, InputTokens: 1, OutputTokens: 1, Priority: 2},
					{ID: 2, InputTokens: 2, OutputTokens: 1, Priority: 2},
				}},
				{Requests: []Request{{ID: 3, Arrival: 2, InputTokens: 1, OutputTokens: 1}}},
			},
		},
		{
			name: "single-request session, tail tool time ignored, null ids",
			data: `{"session_id": "a", "arrival_time_ns": 3, "sub_requests": [{"input_toks": 5, "output_toks": 6, "tool_duration_ns": 99, "input_tok_ids": null}]}`,
			want: []Entry{{Session: "a", Requests: []Request{{ID: 0, Arrival: 3, InputTokens: 5, OutputTokens: 6}}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := collectTrace(t, tc.data)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestTraceReaderErrors(t *testing.T) {
	ok := `{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 10}` + "\n"
	tests := []struct {
		name string
		data string
		want string // exact prefix of the error
	}{
		{"malformed", `{"input_toks": 1,`, "t.jsonl:1: malformed JSON"},
		{"not an object", `[1, 2]`, "t.jsonl:1: malformed JSON: got a JSON array"},
		{"garbage", `hello`, "t.jsonl:1: malformed JSON at byte"},
		{"trailing data", `{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 0} {}`, "t.jsonl:1: extra data after the JSON object"},
		{"unknown field", `{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 0, "prompt": "hi"}`, `t.jsonl:1: unknown field "prompt"; allowed fields:`},
		{"unknown sub field", `{"session_id": "s", "arrival_time_ns": 0, "sub_requests": [{"input_toks": 1, "output_toks": 1, "tool": 3}]}`, `t.jsonl:1: unknown field "tool"`},
		{"wrong type", `{"input_toks": "12", "output_toks": 1, "arrival_time_ns": 0}`, "t.jsonl:1: field input_toks: got a JSON string, want an integer"},
		{"fractional", `{"input_toks": 1.5, "output_toks": 1, "arrival_time_ns": 0}`, "t.jsonl:1: field input_toks: got a JSON number 1.5"},
		{"token id out of int32", `{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 0, "input_tok_ids": [3000000000]}`, "t.jsonl:1: field input_tok_ids: got a JSON number 3000000000"},
		{"missing input", `{"output_toks": 1, "arrival_time_ns": 0}`, "t.jsonl:1: input_toks is missing;"},
		{"zero input", `{"input_toks": 0, "output_toks": 1, "arrival_time_ns": 0}`, "t.jsonl:1: input_toks must be > 0 (got 0);"},
		{"negative input", `{"input_toks": -4, "output_toks": 1, "arrival_time_ns": 0}`, "t.jsonl:1: input_toks must be > 0 (got -4);"},
		{"huge input", `{"input_toks": 3000000000, "output_toks": 1, "arrival_time_ns": 0}`, "t.jsonl:1: input_toks must be at most 2147483647"},
		{"missing output", `{"input_toks": 1, "arrival_time_ns": 0}`, "t.jsonl:1: output_toks is missing;"},
		{"zero output", `{"input_toks": 1, "output_toks": 0, "arrival_time_ns": 0}`, "t.jsonl:1: output_toks must be > 0 (got 0);"},
		{"negative output", `{"input_toks": 1, "output_toks": -1, "arrival_time_ns": 0}`, "t.jsonl:1: output_toks must be > 0 (got -1);"},
		{"missing arrival", `{"input_toks": 1, "output_toks": 1}`, "t.jsonl:1: arrival_time_ns is missing;"},
		{"priority out of int32", `{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 0, "priority": 2147483648}`, "t.jsonl:1: priority 2147483648 is out of range [-2147483648, 2147483647]"},
		{"priority fraction", `{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 0, "priority": 0.5}`, "t.jsonl:1: field priority: got a JSON number 0.5"},
		{"priority string", `{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 0, "priority": "high"}`, "t.jsonl:1: field priority: got a JSON string, want an integer"},
		{"priority in a sub-request", `{"session_id": "s", "arrival_time_ns": 0, "sub_requests": [{"input_toks": 1, "output_toks": 1, "priority": 1}]}`, `t.jsonl:1: unknown field "priority"`},
		{"null line", `null`, "t.jsonl:1: arrival_time_ns is missing;"},
		{"negative arrival", `{"input_toks": 1, "output_toks": 1, "arrival_time_ns": -1}`, "t.jsonl:1: arrival_time_ns must be >= 0 (got -1);"},
		{"input ids mismatch", `{"input_toks": 3, "output_toks": 1, "arrival_time_ns": 0, "input_tok_ids": [1, 2]}`, "t.jsonl:1: input_tok_ids has 2 ids but input_toks is 3;"},
		{"output ids mismatch", `{"input_toks": 1, "output_toks": 2, "arrival_time_ns": 0, "output_tok_ids": [1]}`, "t.jsonl:1: output_tok_ids has 1 ids but output_toks is 2;"},
		{"unsorted", ok + "\n" + `{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 9}`, "t.jsonl:3: arrival_time_ns 9 is earlier than the previous line's 10; sort the trace by arrival_time_ns"},
		{"error after good lines", ok + ok + `{"input_toks": 1, "arrival_time_ns": 10}`, "t.jsonl:3: output_toks is missing;"},
		{"session without id", `{"arrival_time_ns": 0, "sub_requests": [{"input_toks": 1, "output_toks": 1}]}`, "t.jsonl:1: session_id is missing"},
		{"session empty id", `{"session_id": "", "arrival_time_ns": 0, "sub_requests": [{"input_toks": 1, "output_toks": 1}]}`, "t.jsonl:1: session_id is empty"},
		{"session without subs", `{"session_id": "s", "arrival_time_ns": 0}`, "t.jsonl:1: sub_requests is missing"},
		{"session empty subs", `{"session_id": "s", "arrival_time_ns": 0, "sub_requests": []}`, "t.jsonl:1: sub_requests is empty"},
		{"session top-level toks", `{"session_id": "s", "input_toks": 4, "arrival_time_ns": 0, "sub_requests": [{"input_toks": 1, "output_toks": 1}]}`, "t.jsonl:1: input_toks is not allowed at the top of a session line"},
		{"session missing arrival", `{"session_id": "s", "sub_requests": [{"input_toks": 1, "output_toks": 1}]}`, "t.jsonl:1: arrival_time_ns is missing"},
		{"session zero sub input", `{"session_id": "s", "arrival_time_ns": 0, "sub_requests": [{"input_toks": 1, "output_toks": 1}, {"input_toks": 0, "output_toks": 1}]}`, "t.jsonl:1: sub_requests[1].input_toks must be > 0 (got 0)"},
		{"session missing sub output", `{"session_id": "s", "arrival_time_ns": 0, "sub_requests": [{"input_toks": 1}]}`, "t.jsonl:1: sub_requests[0].output_toks is missing; add \"output_toks\""},
		{"session tool time beyond the clock", `{"session_id": "s", "arrival_time_ns": 5, "sub_requests": [{"input_toks": 1, "output_toks": 1, "tool_duration_ns": 9223372036854775000}, {"input_toks": 1, "output_toks": 1}]}`, "t.jsonl:1: sub_requests[0].tool_duration_ns 9223372036854775000 takes the session past the simulator's clock bound"},
		{"session tool times adding up beyond the clock", `{"session_id": "s", "arrival_time_ns": 0, "sub_requests": [{"input_toks": 1, "output_toks": 1, "tool_duration_ns": 6000000000000000}, {"input_toks": 1, "output_toks": 1, "tool_duration_ns": 6000000000000000}, {"input_toks": 1, "output_toks": 1}]}`, "t.jsonl:1: sub_requests[1].tool_duration_ns"},
		{"arrival beyond the clock", `{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 10000000000000001}`, "t.jsonl:1: arrival_time_ns 10000000000000001 is beyond the simulator's clock bound"},
		{"session negative tool", `{"session_id": "s", "arrival_time_ns": 0, "sub_requests": [{"input_toks": 1, "output_toks": 1, "tool_duration_ns": -5}]}`, "t.jsonl:1: sub_requests[0].tool_duration_ns must be >= 0 (got -5)"},
		{"session ids mismatch", `{"session_id": "s", "arrival_time_ns": 0, "sub_requests": [{"input_toks": 2, "output_toks": 1, "input_tok_ids": [1]}]}`, "t.jsonl:1: sub_requests[0].input_tok_ids has 1 ids but input_toks is 2"},
		{"duplicate key", `{"input_toks": 1, "output_toks": 1, "input_toks": 2, "arrival_time_ns": 0}`, `t.jsonl:1: field "input_toks" is given twice in one object; keep one`},
		{"duplicate sub key", `{"session_id": "s", "arrival_time_ns": 0, "sub_requests": [{"input_toks": 1, "output_toks": 1}, {"output_toks": 1, "input_toks": 1, "output_toks" : 2}]}`, `t.jsonl:1: field "output_toks" is given twice in one object`},
		{"negative token id", `{"input_toks": 2, "output_toks": 1, "arrival_time_ns": 0, "input_tok_ids": [5, -1]}`, "t.jsonl:1: input_tok_ids[1] is -1; token ids are >= 0"},
		{"negative sub output id", `{"session_id": "s", "arrival_time_ns": 0, "sub_requests": [{"input_toks": 1, "output_toks": 1, "output_tok_ids": [-7]}]}`, "t.jsonl:1: sub_requests[0].output_tok_ids[0] is -7; token ids are >= 0"},
		{"session unsorted", ok + `{"session_id": "s", "arrival_time_ns": 3, "sub_requests": [{"input_toks": 1, "output_toks": 1}]}`, "t.jsonl:2: arrival_time_ns 3 is earlier than the previous line's 10; sort the trace by arrival_time_ns"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := collectTrace(t, tc.data)
			if err == nil {
				t.Fatalf("no error, want prefix %q", tc.want)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tc.want) {
				t.Errorf("error %q\nwant prefix %q", msg, tc.want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines: %q", msg)
			}
			if !strings.Contains(msg, "; ") {
				t.Errorf("error does not say how to fix it: %q", msg)
			}
			var le *LineError
			if !errors.As(err, &le) || le.Name != "t.jsonl" {
				t.Errorf("error %T is not a *LineError naming the file", err)
			}
		})
	}
}

func TestTraceReaderStickyError(t *testing.T) {
	src := NewTraceReader(strings.NewReader("{\n"+`{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 0}`), "x")
	_, err1 := src.Next()
	_, err2 := src.Next()
	if err1 == nil || err1 != err2 {
		t.Fatalf("errors not sticky: %v, %v", err1, err2)
	}
}

func TestTraceReaderLongLinesAndReadErrors(t *testing.T) {
	// A line far longer than the bufio buffer, delivered one byte at a time.
	const n = 200000
	var b strings.Builder
	b.WriteString(`{"input_toks": 200000, "output_toks": 1, "arrival_time_ns": 0, "input_tok_ids": [`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("7")
	}
	b.WriteString("]}\n")
	long := b.String()
	got, err := Collect(NewTraceReader(iotest.OneByteReader(strings.NewReader(long+long)), "long"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[1].Requests[0].InputIDs) != n || got[1].Requests[0].ID != 1 {
		t.Fatalf("bad long-line read: %d entries", len(got))
	}

	boom := errors.New("disk on fire")
	src := NewTraceReader(io.MultiReader(strings.NewReader(long), iotest.ErrReader(boom)), "io")
	if _, err := src.Next(); err != nil {
		t.Fatal(err)
	}
	_, err = src.Next()
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "io:2: read failed") {
		t.Fatalf("got %v, want wrapped read error on line 2", err)
	}
}

// genTrace is an io.Reader that produces n plain lines with token ids on
// the fly, so the test itself holds no trace.
type genTrace struct {
	n, i int
	buf  []byte
}

func (g *genTrace) Read(p []byte) (int, error) {
	if len(g.buf) == 0 {
		if g.i >= g.n {
			return 0, io.EOF
		}
		g.buf = fmt.Appendf(g.buf[:0], `{"input_toks": 64, "output_toks": 2, "arrival_time_ns": %d, "input_tok_ids": [%s]}`+"\n",
			g.i*1000, strings.TrimSuffix(strings.Repeat("12345,", 64), ","))
		g.i++
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

func TestTraceReaderFlatMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	const n = 50000
	src := NewTraceReader(&genTrace{n: n}, "gen")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	count := 0
	for {
		_, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		count++
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if count != n {
		t.Fatalf("%d entries, want %d", count, n)
	}
	if grow := int64(after.HeapAlloc) - int64(before.HeapAlloc); grow > 1<<20 {
		t.Errorf("heap grew by %d bytes over %d lines", grow, n)
	}
}
