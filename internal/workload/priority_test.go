package workload

import (
	"io"
	"math"
	"strings"
	"testing"
)

// TestWithPrioritiesMix draws 20,000 entries from a 1:3 mix and checks the
// shares against the weights (within 4 standard deviations), that a
// session's sub-requests share its priority, that the draw is seeded
// (same seed, same priorities) and that counts pass through.
func TestWithPrioritiesMix(t *testing.T) {
	mix := []PriorityClass{{Priority: 0, Weight: 1}, {Priority: 7, Weight: 3}}
	if err := ValidatePriorities(mix, "p"); err != nil {
		t.Fatal(err)
	}
	const n = 20000
	draw := func(seed uint64) []int32 {
		syn := Synthetic{Requests: n, Arrival: ArrivalProcess{Kind: Constant, Rate: 10},
			Input: LengthDist{Kind: Fixed, Mean: 5}, Output: LengthDist{Kind: Fixed, Mean: 5}}
		src, err := NewSynthetic(syn, seed)
		if err != nil {
			t.Fatal(err)
		}
		src = WithPriorities(src, mix, seed)
		var out []int32
		for {
			e, err := src.Next()
			if err == io.EOF {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, e.Requests[0].Priority)
			Release(src, e)
		}
	}
	a := draw(1)
	zeros := 0
	for _, p := range a {
		switch p {
		case 0:
			zeros++
		case 7:
		default:
			t.Fatalf("priority %d not in the mix", p)
		}
	}
	sd := math.Sqrt(n * 0.25 * 0.75)
	if d := math.Abs(float64(zeros) - n*0.25); d > 4*sd {
		t.Errorf("%d of %d at priority 0, want %v ± %.0f", zeros, n, n*0.25, 4*sd)
	}
	b := draw(1)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("entry %d: priority %d then %d for the same seed", i, a[i], b[i])
		}
	}

	trace := `{"session_id": "s", "arrival_time_ns": 0, "priority": 3, "sub_requests": [{"input_toks": 1, "output_toks": 1}, {"input_toks": 1, "output_toks": 1}]}` + "\n"
	src := WithPriorities(NewTraceReader(strings.NewReader(trace), "t"), []PriorityClass{{Priority: -5, Weight: 1}}, 1)
	e, err := src.Next()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range e.Requests {
		if r.Priority != -5 {
			t.Errorf("sub-request %d priority %d, want the mix's -5 (replacing the trace's 3)", r.ID, r.Priority)
		}
	}

	syn := Synthetic{Requests: 9, Arrival: ArrivalProcess{Kind: Burst}, Input: LengthDist{Kind: Fixed, Mean: 1}, Output: LengthDist{Kind: Fixed, Mean: 1}}
	gen, err := NewSynthetic(syn, 1)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := Remaining(WithPriorities(gen, mix, 1)); !ok || k != 9 {
		t.Errorf("Remaining %d %v, want 9 true", k, ok)
	}
}
