package validate

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/workload"
)

// The fixture is the embedded RTXPRO6000-Llama-3.1-8B run written in
// vllm bench serve's --save-detailed layout with a known client side: each
// request sent 2 ms before the engine queued it and its first token seen
// 1 ms after the engine emitted it (a 3 ms client offset on TTFT and E2E);
// the gaps between tokens are the run's even split of last - first.
const benchFixture = "testdata/bench-serve-llama-3.1-8b.json.gz"

func readFixture(t *testing.T) *Bench {
	t.Helper()
	f, err := os.Open(benchFixture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := ReadBench(f, benchFixture)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every request of the fixture reads back as the engine-side record plus
// the client offset: TTFT and E2E 3 ms longer, TPOT the same.
func TestReadBenchMatchesEngineRecord(t *testing.T) {
	b := readFixture(t)
	f, err := measured(t, "RTXPRO6000-Llama-3.1-8B").Open("requests.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	eng, err := workload.ReadMeasured(f, "requests.jsonl")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Requests) != len(eng) || b.Failed != 0 || b.Model != "meta-llama/Llama-3.1-8B" {
		t.Fatalf("%d requests (%d failed, model %q), want %d", len(b.Requests), b.Failed, b.Model, len(eng))
	}
	byIndex := map[int]workload.MeasuredRequest{}
	for _, r := range eng {
		byIndex[r.Index] = r
	}
	for _, r := range b.Requests {
		e := byIndex[r.Index]
		if r.InputToks != e.InputToks || r.OutputToks != e.OutputToks {
			t.Fatalf("%s: tokens %d/%d, want %d/%d", r.RequestID, r.InputToks, r.OutputToks, e.InputToks, e.OutputToks)
		}
		// 1e-6 s rounding of the fixture, times the output length for E2E.
		if d := r.TTFT() - e.TTFT() - 0.003; math.Abs(d) > 2e-6 {
			t.Fatalf("%s: client TTFT - engine TTFT = %.7f s, want 0.003", r.RequestID, d+0.003)
		}
		if d := r.E2E() - e.E2E() - 0.003; math.Abs(d) > 1e-6*float64(r.OutputToks) {
			t.Fatalf("%s: client E2E - engine E2E off by %.7f s", r.RequestID, d)
		}
	}
}

// The client offset moves every simulated TTFT and E2E statistic by itself
// and leaves TPOT alone; with the 3 ms the fixture carries, the comparison
// stays within the bounds of the engine-side validation.
func TestRunBenchClientOffset(t *testing.T) {
	b := readFixture(t)
	s, err := config.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	s.Engine.MaxNumSeqs, s.Engine.MaxNumBatchedTokens = 128, 2048
	run := func(off float64) *Report {
		rep, err := RunBench(b, BenchOptions{Scenario: s, Name: "fixture", File: benchFixture, ClientOffsetMs: off})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	r0, r3 := run(0), run(3)
	// A client-side result records no scheduled time: no queue rows.
	if len(r3.QueueDelay) != 0 || strings.Contains(r3.String(), "queue") {
		t.Errorf("bench serve result compared queue delay: %+v", r3.QueueDelay)
	}
	t.Log("\n" + r3.String())
	for i := range r0.Stats {
		a, c := r0.Stats[i], r3.Stats[i]
		want := 3.0
		if a.Metric == "TPOT" {
			want = 0
		}
		if d := c.Simulated - a.Simulated; math.Abs(d-want) > 0.002 {
			t.Errorf("%s %s: offset moved the simulated value by %.3f ms, want %.0f", a.Metric, a.Stat, d, want)
		}
		if a.Measured != c.Measured {
			t.Errorf("%s %s: measured side changed with the offset", a.Metric, a.Stat)
		}
		if math.Abs(c.DiffPct) > 5 {
			t.Errorf("%s %s: %+.2f %% (the engine-side validation is within 6.5 %%)", c.Metric, c.Stat, c.DiffPct)
		}
	}
	if !strings.Contains(r3.String(), "client-side: 3.00 ms") {
		t.Errorf("report does not state the offset:\n%s", r3)
	}
	if _, err := RunBench(b, BenchOptions{Scenario: s, Name: "fixture", File: benchFixture, ClientOffsetMs: -1}); err == nil {
		t.Error("a negative offset was accepted")
	}
}

func TestReadBenchErrors(t *testing.T) {
	ok := `"input_lens":[10,20],"output_lens":[2,3],"ttfts":[0.1,0.2],"itls":[[0.01],[0.01,0.02]]`
	for _, c := range []struct{ name, json, want string }{
		{"not json", `{`, "not a vllm bench serve result"},
		{"summary only", `{"completed": 2}`, "no input_lens; save the result with vllm bench serve --save-result --save-detailed"},
		{"no start times", `{` + ok + `}`, "start_times has 0 entries, input_lens 2; this vLLM version does not save request start times"},
		{"short list", `{` + ok + `,"start_times":[0]}`, "start_times has 1 entries, input_lens 2"},
		{"bad ttft", `{"input_lens":[10],"output_lens":[2],"ttfts":[0],"itls":[[0.1]],"start_times":[1]}`, "request 0: start_times 1 and ttfts 0"},
		{"all failed", `{` + ok + `,"start_times":[0,1],"errors":["x","y"]}`, "all 2 requests failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadBench(strings.NewReader(c.json), "r.json")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "r.json: ") {
				t.Fatalf("error %v, want r.json: ...%q", err, c.want)
			}
		})
	}
	b, err := ReadBench(strings.NewReader(`{`+ok+`,"start_times":[5,6],"errors":["","timeout"]}`), "r.json")
	if err != nil || len(b.Requests) != 1 || b.Failed != 1 {
		t.Fatalf("one failure: %+v, %v", b, err)
	}
	if r := b.Requests[0]; r.QueuedTS != 5 || math.Abs(r.FirstTokenTS-5.1) > 1e-12 || math.Abs(r.LastTokenTS-5.11) > 1e-12 {
		t.Fatalf("request 0: %+v", r)
	}
}

// A validation names its step-latency source as a run does: a
// PyTorch-derived calibration is labelled, one fitted on the per-op
// performance database says so, and an uncalibrated accelerator borrows
// the RTX PRO 6000's with a warning (never silently).
func TestValidationNamesLatencySource(t *testing.T) {
	b := readFixture(t)
	for _, c := range []struct{ hw, latency, warning string }{
		{"A6000", "roofline, A6000 calibrated (embedded calibration); PyTorch-derived", ""},
		{"RTX4090", "roofline, borrowed calibration", "RTX4090 is not calibrated: efficiencies borrowed from RTXPRO6000"},
		{"H100", "roofline, H100 calibrated (embedded calibration); fitted on per-op kernel tables perfdb:h100_sxm/vllm/0.19.0", ""},
		{"", "profile RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/tp1", ""},
	} {
		s, err := config.LoadDefault()
		if err != nil {
			t.Fatal(err)
		}
		if c.hw != "" {
			s.Hardware, s.Instances, s.Predictor.Kind = c.hw, nil, "roofline"
			s.FillGroups()
		}
		rep, err := RunBench(b, BenchOptions{Scenario: s, Name: "fixture", File: benchFixture})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(rep.Latency, c.latency) || !strings.Contains(rep.String(), "step latency: "+c.latency) {
			t.Errorf("%s: latency %q, want it to start with %q", c.hw, rep.Latency, c.latency)
		}
		w := strings.Join(rep.Warnings, "; ")
		if (c.warning == "") != (w == "") || !strings.Contains(w, c.warning) || c.warning != "" && !strings.Contains(rep.String(), "warning: roofline: "+c.warning) {
			t.Errorf("%s: warnings %q, want %q", c.hw, w, c.warning)
		}
	}
}
