package validate

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/workload"
)

// Hand-computed: measured {0, 0, 0, 4} ms against simulated {0, 0, 1, 5}
// ms. Means 1 and 1.5 (+0.5 ms, +50 %); p50 (index 1.5) 0 and 0.5: the
// measured value is below 1 ms, so no percent; p90 (index 2.7) 2.8 and
// 3.8 (+1 ms, +35.714 %).
func TestQueueRowsHandComputed(t *testing.T) {
	rows := queueRows([]float64{0, 0, 0, 4}, []float64{0, 0, 1, 5})
	pct := func(v float64) *float64 { return &v }
	want := []QueueRow{
		{"mean", 1, 1.5, 0.5, pct(50)},
		{"p50", 0, 0.5, 0.5, nil},
		{"p90", 2.8, 3.8, 1, pct(35.714)},
	}
	for i, w := range want {
		g := rows[i]
		if g.Stat != w.Stat || g.Measured != w.Measured || g.Simulated != w.Simulated || g.DiffMs != w.DiffMs || (g.DiffPct == nil) != (w.DiffPct == nil) || g.DiffPct != nil && *g.DiffPct != *w.DiffPct {
			t.Errorf("row %d: %+v (pct %v), want %+v (pct %v)", i, g, deref(g.DiffPct), w, deref(w.DiffPct))
		}
	}
	rep := &Report{Stats: []Row{{Metric: "TTFT", Stat: "mean", Measured: 1, Simulated: 1}}, QueueDelay: rows}
	out := rep.String()
	for _, line := range []string{
		"max |diff| 0.00 % (over the 1 statistics above)",
		"queue  p50             0.00           0.50       n/a      +0.50",
		"queue  p90             2.80           3.80    +35.71      +1.00",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("report lacks %q:\n%s", line, out)
		}
	}
	js, err := json.Marshal(rows[1])
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"stat":"p50","measured":0,"simulated":0.5,"diff_ms":0.5,"diff_pct":null}`; string(js) != want {
		t.Errorf("json %s, want %s", js, want)
	}
}

// checkQueueDelay recomputes the measured queue-delay statistics of a run
// straight from its requests.jsonl (scheduled_ts - queued_ts, mean and
// numpy-linear percentiles) and checks the report's rows against them and
// that they stay out of max |diff|.
func checkQueueDelay(t *testing.T, rep *Report, run string) {
	t.Helper()
	f, err := measured(t, run).Open("requests.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := workload.ReadMeasured(f, "requests.jsonl")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	q := make([]float64, len(reqs))
	sum := 0.0
	for i, r := range reqs {
		q[i] = (r.ScheduledTS - r.QueuedTS) * 1e3
		sum += q[i]
	}
	slices.Sort(q)
	pctl := func(p float64) float64 {
		x := p / 100 * float64(len(q)-1)
		lo := int(math.Floor(x))
		if lo+1 >= len(q) {
			return q[len(q)-1]
		}
		return q[lo] + (x-float64(lo))*(q[lo+1]-q[lo])
	}
	want := []float64{sum / float64(len(q)), pctl(50), pctl(90), pctl(95), pctl(99)}
	if len(rep.QueueDelay) != 5 {
		t.Fatalf("%d queue-delay rows, want 5", len(rep.QueueDelay))
	}
	for i, r := range rep.QueueDelay {
		if math.Abs(r.Measured-want[i]) > 0.0006 {
			t.Errorf("queue %s: measured %.3f ms, recomputed %.3f", r.Stat, r.Measured, want[i])
		}
		if r.Simulated < 0 || math.Abs(r.DiffMs-(r.Simulated-r.Measured)) > 0.0011 {
			t.Errorf("queue %s: simulated %.3f, diff %.3f ms", r.Stat, r.Simulated, r.DiffMs)
		}
		if (r.DiffPct == nil) != (r.Measured < QueueNearZeroMs) {
			t.Errorf("queue %s: measured %.3f ms, diff %% %v", r.Stat, r.Measured, deref(r.DiffPct))
		}
	}
	worst := 0.0
	for _, r := range rep.Stats {
		worst = math.Max(worst, math.Abs(r.DiffPct))
	}
	if rep.MaxAbsDiffPct != worst {
		t.Errorf("max |diff| %.3f %%, worst of the 15 statistics %.3f %%", rep.MaxAbsDiffPct, worst)
	}
}
