package metrics

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// testRecords covers a colocated finished request, a P/D finished request,
// a rejected one (every time -1, reason needing quoting) and a single-token
// request.
func testRecords() []Record {
	colo := NewRecord(0, 1_000_000) // arrives at 1 ms
	colo.PrefillInstance, colo.DecodeInstance = 0, 0
	colo.InputTokens, colo.OutputTokens, colo.Generated, colo.CachedTokens = 100, 4, 4, 16
	colo.Queued = 1_200_000
	colo.Scheduled = 1_500_000
	colo.FirstToken = 21_000_499 // TTFT 20.000499 ms -> 20.000
	colo.LastToken = 51_000_000  // TPOT (51-21.000499)/3 ms
	colo.MaxITL = 12_345_678
	colo.Outcome = Finished

	pd := NewRecord(1, 2_000_000)
	pd.Session = `s"1`
	pd.PrefillInstance, pd.DecodeInstance = 0, 3
	pd.InputTokens, pd.OutputTokens, pd.Generated = 2048, 2, 2
	pd.Scheduled = 2_000_000
	pd.PrefillEnd = 40_000_000
	pd.Reserved = 45_000_000
	pd.TransferStart = 45_000_000
	pd.TransferEnd = 47_500_500
	pd.HandoffWait = 5_000_000
	pd.CapacityWait = 4_000_000
	pd.FirstToken = 60_000_000
	pd.LastToken = 70_000_000
	pd.MaxITL = 10_000_000
	pd.Reprefills, pd.Retries, pd.Preemptions = 1, 2, 3
	pd.Outcome = Finished

	rej := NewRecord(2, 3_000_000)
	rej.InputTokens, rej.OutputTokens = 50000, 10
	rej.Outcome = Rejected
	rej.Reason = "queue too long, predicted 3s"

	one := NewRecord(3, 0)
	one.PrefillInstance, one.DecodeInstance = 1, 1
	one.InputTokens, one.OutputTokens, one.Generated = 10, 1, 1
	one.Scheduled, one.FirstToken, one.LastToken = 0, 5_000_000, 5_000_000
	one.MaxITL = 0
	one.Outcome = Finished
	return []Record{colo, pd, rej, one}
}

const wantCSV = `id,session,prefill_instance,decode_instance,input_tokens,output_tokens,generated,cached_tokens,arrival_ms,queued_ms,scheduled_ms,first_token_ms,last_token_ms,queue_delay_ms,ttft_ms,tpot_ms,max_itl_ms,e2e_ms,preemptions,prefill_end_ms,reserved_ms,transfer_start_ms,transfer_end_ms,handoff_wait_ms,decode_capacity_wait_ms,transfer_ms,reprefills,retries,outcome,reason
0,,0,0,100,4,4,16,1.000,1.200,1.500,21.000,51.000,0.500,20.000,10.000,12.346,50.000,0,,,,,,,,0,0,finished,
1,"s""1",0,3,2048,2,2,0,2.000,,2.000,60.000,70.000,0.000,58.000,10.000,10.000,68.000,3,40.000,45.000,45.000,47.501,5.000,4.000,2.501,1,2,finished,
2,,,,50000,10,0,0,3.000,,,,,,,,,,0,,,,,,,,0,0,rejected,"queue too long, predicted 3s"
3,,1,1,10,1,1,0,0.000,,0.000,5.000,5.000,0.000,5.000,,,5.000,0,,,,,,,,0,0,finished,
`

// recordWriter is what the CSV and JSONL writers share.
type recordWriter interface {
	Write(*Record) error
	Flush() error
}

// writeRecords writes recs with the writer newWriter makes and returns
// what it wrote.
func writeRecords(t *testing.T, recs []Record, newWriter func(io.Writer) recordWriter) string {
	t.Helper()
	var buf bytes.Buffer
	w := newWriter(&buf)
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestCSVWriter(t *testing.T) {
	out := writeRecords(t, testRecords(), func(w io.Writer) recordWriter { return NewCSVWriter(w) })
	if out != wantCSV {
		t.Errorf("CSV mismatch\n got:\n%s\nwant:\n%s", out, wantCSV)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if rows[2][1] != `s"1` || rows[3][len(Columns)-1] != "queue too long, predicted 3s" {
		t.Errorf("quoted fields did not round-trip: %q %q", rows[2][1], rows[3][len(Columns)-1])
	}
}

func TestCSVWriterEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := NewCSVWriter(&buf).Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), strings.Join(Columns, ",")+"\n"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
}

func TestJSONLWriter(t *testing.T) {
	recs := testRecords()
	out := writeRecords(t, recs, func(w io.Writer) recordWriter { return NewJSONLWriter(w) })
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(recs) {
		t.Fatalf("got %d lines, want %d", len(lines), len(recs))
	}
	wantFirst := `{"id":0,"session":"","prefill_instance":0,"decode_instance":0,"input_tokens":100,"output_tokens":4,"generated":4,"cached_tokens":16,"arrival_ms":1.000,"queued_ms":1.200,"scheduled_ms":1.500,"first_token_ms":21.000,"last_token_ms":51.000,"queue_delay_ms":0.500,"ttft_ms":20.000,"tpot_ms":10.000,"max_itl_ms":12.346,"e2e_ms":50.000,"preemptions":0,"prefill_end_ms":null,"reserved_ms":null,"transfer_start_ms":null,"transfer_end_ms":null,"handoff_wait_ms":null,"decode_capacity_wait_ms":null,"transfer_ms":null,"reprefills":0,"retries":0,"outcome":"finished","reason":""}`
	if lines[0] != wantFirst {
		t.Errorf("line 0\n got %s\nwant %s", lines[0], wantFirst)
	}
	for i, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i, err, line)
		}
		if len(m) != len(Columns) {
			t.Errorf("line %d has %d keys, want %d", i, len(m), len(Columns))
		}
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[2]), &m); err != nil {
		t.Fatal(err)
	}
	if m["ttft_ms"] != nil || m["decode_instance"] != nil || m["reason"] != "queue too long, predicted 3s" {
		t.Errorf("rejected record: %v", m)
	}
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil {
		t.Fatal(err)
	}
	if m["session"] != `s"1` || m["transfer_ms"] != 2.501 {
		t.Errorf("P/D record: session %v transfer %v", m["session"], m["transfer_ms"])
	}
}

func TestFormatHelpers(t *testing.T) {
	ms := []struct {
		ns   int64
		want string
	}{
		{0, "0.000"}, {499, "0.000"}, {500, "0.001"}, {1_000_000, "1.000"},
		{123_456_789, "123.457"}, {-1_500_000, "-1.500"}, {999_999_500, "1000.000"},
	}
	for _, c := range ms {
		if got := string(appendMs(nil, c.ns)); got != c.want {
			t.Errorf("appendMs(%d) = %s, want %s", c.ns, got, c.want)
		}
	}
	secs := []struct {
		ns   int64
		want string
	}{
		{1e9, "1.0"}, {0, "0.0"}, {250_000_000, "0.25"}, {12_000_000_001, "12.000000001"},
	}
	for _, c := range secs {
		if got := string(appendSeconds(nil, c.ns)); got != c.want {
			t.Errorf("appendSeconds(%d) = %s, want %s", c.ns, got, c.want)
		}
	}
	strs := []string{"plain", `q"b\s`, "tab\tnl\nctl\x01", "héllo", "bad\xffutf8"}
	for _, s := range strs {
		b := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("appendJSONString(%q) = %s: %v", s, b, err)
			continue
		}
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var w string
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Errorf("appendJSONString(%q) decodes to %q, want %q", s, got, w)
		}
	}
}
