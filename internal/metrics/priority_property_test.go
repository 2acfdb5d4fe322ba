package metrics

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestPriorityClassesProperty: whenever the first request with a priority
// other than 0 comes (class 0 is then split off the summary's own
// distributions), every class's counts and statistics are those of
// distributions fed each class's requests from the start, warm-up
// requests excluded, with values spread over pend batches and bounds
// watched on the summary's metrics.
func TestPriorityClassesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := NewSummary()
		warm := rapid.Int64Range(0, 3).Draw(t, "warmup")
		s.SetWarmup(warm)
		s.SetTargets([]Target{{Metric: TTFT, Percentile: 90, MaxMs: 50}})
		type ref struct {
			reqs, done      int64
			ttft, tpot, e2e dist
		}
		refs := map[int32]*ref{}
		n := rapid.IntRange(0, 2*pendCap+3).Draw(t, "requests")
		zeroUntil := rapid.IntRange(0, n).Draw(t, "priority 0 until")
		for i := range n {
			prio := int32(0)
			if i >= zeroUntil {
				prio = rapid.Int32Range(-2, 2).Draw(t, "priority")
			}
			arrival := rapid.Int64Range(0, 1e9).Draw(t, "arrival")
			first := arrival + rapid.Int64Range(0, 5e9).Draw(t, "ttft")
			gen := rapid.IntRange(1, 300).Draw(t, "generated")
			last := first + int64(gen-1)*rapid.Int64Range(0, 1e8).Draw(t, "tpot")
			r := NewRecord(int64(i), arrival)
			r.Priority, r.Generated, r.OutputTokens = prio, gen, gen
			r.Queued, r.Scheduled, r.FirstToken, r.LastToken = arrival, arrival, first, last
			r.Outcome = []Outcome{Finished, Finished, Finished, Failed}[rapid.IntRange(0, 3).Draw(t, "outcome")]
			s.Add(&r)
			if r.ID < warm {
				continue
			}
			c := refs[prio]
			if c == nil {
				c = &ref{ttft: newDist(), tpot: newDist(), e2e: newDist()}
				refs[prio] = c
			}
			c.reqs++
			if r.Outcome == Finished {
				c.done++
				c.ttft.add(r.TTFT())
				c.tpot.add(r.TPOT())
				c.e2e.add(r.E2E())
			}
		}
		got := s.Finish(1e9).Priorities
		if len(refs) == 0 || len(refs) == 1 && refs[0] != nil { // every (measured) request had priority 0
			if got != nil {
				t.Fatalf("classes %+v for priority 0 only", got)
			}
			return
		}
		var want []PriorityResult
		for p, c := range refs {
			want = append(want, PriorityResult{Priority: p, Requests: c.reqs, Finished: c.done,
				TTFT: c.ttft.stat(), TPOT: c.tpot.stat(), E2E: c.e2e.stat()})
		}
		slices.SortFunc(want, func(a, b PriorityResult) int { return int(a.Priority - b.Priority) })
		if !slices.Equal(got, want) {
			t.Fatalf("classes\n%+v\nwant\n%+v", got, want)
		}
	})
}
