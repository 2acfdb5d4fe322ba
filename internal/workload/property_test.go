package workload

import (
	"encoding/json"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"

	_ "github.com/servesim/servesim/internal/testseed"
	"pgregory.net/rapid"
)

// genEntries draws a sorted list of plain and session entries with ids
// assigned as the trace reader assigns them.
func genEntries(t *rapid.T) []Entry {
	n := rapid.IntRange(0, 20).Draw(t, "n")
	var out []Entry
	var id, arrival int64
	genReq := func(label string) Request {
		r := Request{
			InputTokens:  rapid.IntRange(1, 40).Draw(t, label+"in"),
			OutputTokens: rapid.IntRange(1, 40).Draw(t, label+"out"),
		}
		if rapid.Bool().Draw(t, label+"ids") {
			r.InputIDs = rapid.SliceOfN(rapid.Int32Range(0, math.MaxInt32), r.InputTokens, r.InputTokens).Draw(t, label+"inIDs")
			r.OutputIDs = rapid.SliceOfN(rapid.Int32Range(0, math.MaxInt32), r.OutputTokens, r.OutputTokens).Draw(t, label+"outIDs")
		}
		return r
	}
	for range n {
		arrival += rapid.Int64Range(0, 1e12).Draw(t, "gap")
		e := Entry{}
		subs := 1
		if rapid.Bool().Draw(t, "session") {
			e.Session = rapid.StringMatching(`[a-z0-9_-]{1,8}`).Draw(t, "sid")
			subs = rapid.IntRange(1, 4).Draw(t, "subs")
		}
		for k := range subs {
			r := genReq("r")
			r.ID = id
			id++
			if k == 0 {
				r.Arrival = arrival
			} else {
				r.Delay = rapid.Int64Range(0, 1e10).Draw(t, "delay")
			}
			e.Requests = append(e.Requests, r)
		}
		out = append(out, e)
	}
	return out
}

// encodeEntries writes entries in the trace format.
func encodeEntries(t *rapid.T, entries []Entry) string {
	var b strings.Builder
	sub := func(r Request, tool int64, session bool) map[string]any {
		m := map[string]any{"input_toks": r.InputTokens, "output_toks": r.OutputTokens}
		if r.InputIDs != nil {
			m["input_tok_ids"] = r.InputIDs
			m["output_tok_ids"] = r.OutputIDs
		}
		if session {
			m["tool_duration_ns"] = tool
		}
		return m
	}
	for _, e := range entries {
		var m map[string]any
		if e.Session == "" {
			m = sub(e.Requests[0], 0, false)
			m["arrival_time_ns"] = e.Requests[0].Arrival
		} else {
			var subs []map[string]any
			for k, r := range e.Requests {
				var tool int64
				if k+1 < len(e.Requests) {
					tool = e.Requests[k+1].Delay
				}
				subs = append(subs, sub(r, tool, true))
			}
			m = map[string]any{"session_id": e.Session, "arrival_time_ns": e.Requests[0].Arrival, "sub_requests": subs}
		}
		line, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteString("\n")
	}
	return b.String()
}

func TestTraceRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		want := genEntries(t)
		data := encodeEntries(t, want)
		got, err := Collect(NewTraceReader(strings.NewReader(data), "rt"))
		if err != nil {
			t.Fatalf("read back: %v\n%s", err, data)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip differs:\ngot  %+v\nwant %+v", got, want)
		}
	})
}

func genLengthDist(t *rapid.T, label string) LengthDist {
	d := LengthDist{Max: rapid.SampledFrom([]int{0, 50, 5000}).Draw(t, label+"max")}
	d.Min = rapid.IntRange(0, 40).Draw(t, label+"min")
	switch rapid.IntRange(0, 4).Draw(t, label+"kind") {
	case 0:
		d.Kind, d.Mean = Fixed, float64(rapid.IntRange(1, 10000).Draw(t, label+"mean"))
	case 1:
		d.Kind = Uniform
		if d.Max == 0 {
			d.Max = 100
		}
	case 2:
		d.Kind, d.Mean, d.Sigma = Normal, rapid.Float64Range(0.5, 5000).Draw(t, label+"mean"), rapid.Float64Range(0, 3000).Draw(t, label+"sigma")
	case 3:
		d.Kind, d.Mean, d.Sigma = LogNormal, rapid.Float64Range(0.5, 5000).Draw(t, label+"mean"), rapid.Float64Range(0, 3).Draw(t, label+"sigma")
	default:
		d.Kind = Empirical
		d.Values = rapid.SliceOfN(rapid.IntRange(1, 10000), 1, 5).Draw(t, label+"values")
		if rapid.Bool().Draw(t, label+"weighted") {
			d.Weights = rapid.SliceOfN(rapid.Float64Range(0.01, 10), len(d.Values), len(d.Values)).Draw(t, label+"weights")
		}
	}
	return d
}

func TestSyntheticProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := Synthetic{
			Requests: rapid.IntRange(1, 300).Draw(t, "requests"),
			Arrival: ArrivalProcess{
				Kind: rapid.SampledFrom([]ArrivalKind{Poisson, Gamma, Constant}).Draw(t, "akind"),
				Rate: rapid.Float64Range(0.01, 1e4).Draw(t, "rate"),
			},
			Input:  genLengthDist(t, "in"),
			Output: genLengthDist(t, "out"),
		}
		if cfg.Arrival.Kind == Gamma {
			cfg.Arrival.CV = rapid.Float64Range(0.05, 20).Draw(t, "cv")
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("generated config invalid: %v", err)
		}
		seed := rapid.Uint64().Draw(t, "seed")
		read := func() []Entry {
			src, err := NewSynthetic(cfg, seed)
			if err != nil {
				t.Fatal(err)
			}
			es, err := Collect(src)
			if err != nil {
				t.Fatal(err)
			}
			return es
		}
		es := read()
		if len(es) != cfg.Requests {
			t.Fatalf("%d entries, want %d", len(es), cfg.Requests)
		}
		inRange := func(v int, d LengthDist) bool {
			hi := math.MaxInt32
			if d.Max > 0 {
				hi = d.Max
			}
			return v >= max(1, d.Min) && v <= hi
		}
		var last int64
		for i, e := range es {
			r := e.Requests[0]
			if r.ID != int64(i) || r.Arrival < last || (i == 0 && r.Arrival != 0) {
				t.Fatalf("request %d: id %d arrival %d after %d", i, r.ID, r.Arrival, last)
			}
			if !inRange(r.InputTokens, cfg.Input) || !inRange(r.OutputTokens, cfg.Output) {
				t.Fatalf("request %d lengths %d/%d outside bounds", i, r.InputTokens, r.OutputTokens)
			}
			last = r.Arrival
		}
		if !reflect.DeepEqual(es, read()) {
			t.Fatal("not deterministic")
		}
	})
}

func TestScaleProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		want := genEntries(t)
		factor := rapid.Float64Range(0.001, 1000).Draw(t, "factor")
		got, err := Collect(Scale(NewTraceReader(strings.NewReader(encodeEntries(t, want)), "s"), factor))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d entries, want %d", len(got), len(want))
		}
		var last int64
		for i := range got {
			for k, r := range got[i].Requests {
				w := want[i].Requests[k]
				if r.Arrival != int64(math.Round(float64(w.Arrival)*factor)) || r.Delay != w.Delay {
					t.Fatalf("entry %d.%d: arrival %d delay %d from %d/%d", i, k, r.Arrival, r.Delay, w.Arrival, w.Delay)
				}
			}
			if a := got[i].Requests[0].Arrival; a < last {
				t.Fatal("scaled arrivals out of order")
			} else {
				last = a
			}
		}
	})
}

// TestAllDueAtZeroProperty: every entry arrives at 0, in the same order,
// with its sub-requests' delays, token counts and ids unchanged, and a
// plain request's abort time at the same distance after its arrival.
func TestAllDueAtZeroProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		want := genEntries(t)
		got, err := Collect(AllDueAtZero(NewTraceReader(strings.NewReader(encodeEntries(t, want)), "s")))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d entries, want %d", len(got), len(want))
		}
		for i := range got {
			for k, r := range got[i].Requests {
				w := want[i].Requests[k]
				if k == 0 {
					if r.Arrival != 0 {
						t.Fatalf("entry %d arrives at %d, want 0", i, r.Arrival)
					}
					if w.AbortAt > 0 && r.AbortAt != max(w.AbortAt-w.Arrival, 1) {
						t.Fatalf("entry %d: abort %d after arrival %d became %d", i, w.AbortAt, w.Arrival, r.AbortAt)
					}
					w.Arrival, w.AbortAt = r.Arrival, r.AbortAt
				}
				if !reflect.DeepEqual(r, w) {
					t.Fatalf("entry %d.%d changed beyond its arrival: %+v from %+v", i, k, r, w)
				}
			}
		}
	})
}

func TestScaleTakeErrors(t *testing.T) {
	src, err := NewSynthetic(ShareGPTLike(10, 1), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := Scale(src, f).Next(); err == nil {
			t.Errorf("factor %v accepted", f)
		}
	}
	es, err := Collect(Take(Scale(src, 2), 3))
	if err != nil || len(es) != 3 || es[1].Requests[0].ID != 1 {
		t.Fatalf("Take(3) = %d entries, %v", len(es), err)
	}
	big := NewTraceReader(strings.NewReader(`{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 9000000000000000000}`), "b")
	if _, err := Scale(big, 10).Next(); err == nil || err == io.EOF {
		t.Errorf("overflow not reported: %v", err)
	}
}
