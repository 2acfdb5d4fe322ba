package runner

import (
	"math"
	"testing"

	"github.com/servesim/servesim/internal/metrics"
)

// TestWarmupAndSteadyWindow: four closed-loop clients, the first four
// requests warm-up requests. The measured requests are sent only once
// every warm-up request has ended, the warm-up is in no count, the time
// base starts at its end, and the steady window runs from then (all four
// clients busy at once) to the first completion after the last request
// was sent (a client left with nothing to send).
func TestWarmupAndSteadyWindow(t *testing.T) {
	for _, fe := range []string{"", "frontend: {}"} {
		t.Run(fe, func(t *testing.T) {
			b := buildYAML(t, "warm.yaml", `
workload:
  max_concurrency: 4
  warmup_requests: 4
  synthetic:
    requests: 40
    arrival: {kind: burst}
    input: {kind: uniform, min: 100, max: 800}
    output: {kind: uniform, min: 10, max: 60}
`+fe+"\n")
			recs := map[int64]metrics.Record{}
			res, err := Run(b, Options{OnRecord: func(r *metrics.Record) { recs[r.ID] = *r }})
			if err != nil {
				t.Fatal(err)
			}
			if res.WarmupRequests != 4 || res.RequestsTotal != 36 || res.Finished != 36 {
				t.Fatalf("warm-up %d, total %d, finished %d; want 4, 36, 36", res.WarmupRequests, res.RequestsTotal, res.Finished)
			}
			var warmEnd, lastSend, end int64
			for id := int64(0); id < 4; id++ {
				warmEnd = max(warmEnd, recs[id].LastToken)
			}
			for id := int64(4); id < 40; id++ {
				r := recs[id]
				if r.Arrival < warmEnd {
					t.Fatalf("request %d sent at %d, before the warm-up ended at %d", id, r.Arrival, warmEnd)
				}
				lastSend = max(lastSend, r.Arrival)
				end = max(end, r.LastToken)
			}
			if got, want := res.SimTimeS, float64(end-warmEnd)/1e9; math.Abs(got-want) > 1e-9 {
				t.Fatalf("time base %v s, want %v (last completion - warm-up end)", got, want)
			}
			// The window closes at the first completion that finds nothing
			// to send: the second one at the last send's time (the first
			// sent the last request), else the first one after it.
			close, atLast := int64(math.MaxInt64), 0
			for id := int64(4); id < 40; id++ {
				if l := recs[id].LastToken; l > lastSend && l < close {
					close = l
				} else if l == lastSend {
					atLast++
				}
			}
			if atLast > 1 {
				close = lastSend
			}
			st := res.Steady
			if st == nil || st.Clients != 4 || st.StartS != 0 || math.Abs(st.EndS-float64(close-warmEnd)/1e9) > 1e-9 {
				t.Fatalf("steady window %+v, want 0 to %v s", st, float64(close-warmEnd)/1e9)
			}
		})
	}
}
