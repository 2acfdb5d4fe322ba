package validate

import (
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/perf"
)

func TestStepClass(t *testing.T) {
	for _, c := range []struct {
		b    perf.Batch
		want string
	}{
		{perf.Batch{NumDecode: 1}, "decode, 1-16 requests"},
		{perf.Batch{NumDecode: 16}, "decode, 1-16 requests"},
		{perf.Batch{NumDecode: 17}, "decode, 17-64 requests"},
		{perf.Batch{NumDecode: 128}, "decode, 65-128 requests"},
		{perf.Batch{NumDecode: 129}, "decode, 129+ requests"},
		{perf.Batch{PrefillTokens: 512, PrefillSeqs: 1}, "prefill"},
		{perf.Batch{PrefillTokens: 512, PrefillSeqs: 1, PrefillKV: 2048}, "prefill after history"},
		{perf.Batch{PrefillTokens: 512, PrefillSeqs: 1, NumDecode: 3}, "mixed"},
		{perf.Batch{PrefillTokens: 512, PrefillSeqs: 1, PrefillKV: 16, NumDecode: 3}, "mixed after history"},
		{perf.Batch{PadTokens: 8}, ""},
	} {
		if got := stepClass(&c.b); got != c.want {
			t.Errorf("%+v: class %q, want %q", c.b, got, c.want)
		}
	}
}

// TestStepAggByHand: two decode steps of 10 and 30 ms against 8 and
// 40 ms: sums 40 and 48 ms (-16.7 %), per step +25 % and -25 %.
func TestStepAggByHand(t *testing.T) {
	a := &stepAgg{own: map[string]float64{}, other: map[string]float64{}, diffs: map[string][]float64{}}
	a.add(&perf.Batch{NumDecode: 2}, 10e6, 8e6)
	a.add(&perf.Batch{NumDecode: 3}, 30e6, 40e6)
	a.add(&perf.Batch{}, 5e6, 5e6) // no tokens: not a step of any class
	rows := a.rows()
	if len(rows) != 1 {
		t.Fatalf("rows %+v, want one class", rows)
	}
	r := rows[0]
	if r.Class != "decode, 1-16 requests" || r.Steps != 2 || r.OwnMs != 40 || r.OtherMs != 48 ||
		math.Abs(r.SumDiffPct+16.667) > 0.001 || r.P10DiffPct != -25 || r.P90DiffPct != 25 {
		t.Errorf("row %+v", r)
	}
}

// TestStepsVs replays the measured Llama-3.1-8B run with its steps also
// timed by a second predictor: against itself every step agrees exactly,
// and against the perfdb predictor the pure-decode steps stay close while
// the mixed steps, whose linear layers run at prefill sizes, are slower
// from the database (docs/perfdb.md).
func TestStepsVs(t *testing.T) {
	if testing.Short() {
		t.Skip("two replays of a measured run")
	}
	same, err := Run(Options{Measured: measured(t, "RTXPRO6000-Llama-3.1-8B"), Name: "llama", StepsVs: "profile"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range same.Steps {
		n += r.Steps
		if r.SumDiffPct != 0 || r.P10DiffPct != 0 || r.P90DiffPct != 0 || r.OwnMs != r.OtherMs {
			t.Errorf("profile against itself: %+v", r)
		}
	}
	if n < 1000 || !strings.Contains(same.String(), "profile vs profile") {
		t.Errorf("%d steps compared; report:\n%s", n, same)
	}
	db, err := Run(Options{Measured: measured(t, "RTXPRO6000-Llama-3.1-8B"), Name: "llama", Predictor: "perfdb", StepsVs: "profile"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range db.Steps {
		switch {
		case strings.HasPrefix(r.Class, "decode") && math.Abs(r.SumDiffPct) > 5:
			t.Errorf("perfdb decode steps %+v: want within 5 %% of the profile's", r)
		case r.Class == "mixed" && !(r.MedianDiffPct > 5):
			t.Errorf("perfdb mixed steps %+v: want slower than the profile's", r)
		}
	}
	if _, err := Run(Options{Measured: measured(t, "RTXPRO6000-Llama-3.1-8B"), Name: "llama", StepsVs: "nope"}); err == nil || !strings.Contains(err.Error(), "--steps-vs") {
		t.Errorf("bad --steps-vs: err %v", err)
	}
}
