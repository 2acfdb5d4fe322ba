package runner

import (
	"fmt"
	"slices"
	"testing"

	"github.com/servesim/servesim/internal/metrics"
)

// TestClosedLoopConcurrency: a burst of requests under max_concurrency N
// runs as N clients do. At most N requests are ever in flight; the first N
// are sent at 0 and every later one exactly when an earlier one ended
// (so, saturated, exactly N are in flight right after each send); with
// N = 1 each request is sent when the previous one ended.
func TestClosedLoopConcurrency(t *testing.T) {
	for _, c := range []struct{ n, requests int }{{1, 6}, {4, 24}, {16, 40}} {
		t.Run(fmt.Sprint(c.n), func(t *testing.T) {
			y := fmt.Sprintf(`
workload:
  max_concurrency: %d
  synthetic:
    requests: %d
    arrival: {kind: burst}
    input: {kind: uniform, min: 200, max: 2000}
    output: {kind: uniform, min: 20, max: 200}
check_invariants: true
`, c.n, c.requests)
			b := buildYAML(t, "closed.yaml", y)
			recs := map[int64]metrics.Record{}
			if _, err := Run(b, Options{OnRecord: func(r *metrics.Record) { recs[r.ID] = *r }}); err != nil {
				t.Fatal(err)
			}
			if len(recs) != c.requests {
				t.Fatalf("%d records, want %d", len(recs), c.requests)
			}
			var ends []int64
			for _, r := range recs {
				if r.Outcome != metrics.Finished {
					t.Fatalf("request %d %s: %s", r.ID, r.Outcome, r.Reason)
				}
				ends = append(ends, r.LastToken)
			}
			for id := int64(0); id < int64(c.requests); id++ {
				r := recs[id]
				if id < int64(c.n) {
					if r.Arrival != 0 {
						t.Fatalf("request %d sent at %d, want 0", id, r.Arrival)
					}
				} else if !slices.Contains(ends, r.Arrival) {
					t.Fatalf("request %d sent at %d, when no request ended", id, r.Arrival)
				}
				if c.n == 1 && id > 0 && r.Arrival != recs[id-1].LastToken {
					t.Fatalf("request %d sent at %d, previous ended at %d", id, r.Arrival, recs[id-1].LastToken)
				}
				// In flight just after this send: sent at or before it and
				// not yet ended.
				inflight := 0
				for _, o := range recs {
					if o.Arrival <= r.Arrival && o.LastToken > r.Arrival {
						inflight++
					}
				}
				if inflight > c.n || (id >= int64(c.n) && inflight != c.n) {
					t.Fatalf("%d requests in flight after request %d was sent, limit %d", inflight, id, c.n)
				}
			}
		})
	}
}
