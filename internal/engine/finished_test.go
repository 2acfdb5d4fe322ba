package engine

import (
	"testing"

	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// TestFinishedRecordsStayUntilTakeIn: a step's Finished records, which
// point into the finished requests' slots, are final (finished, every
// output token generated, the last one at the step's end) and stay
// unchanged through the next batch's formation, which frees those slots,
// with or without async scheduling; each request finishes once.
func TestFinishedRecordsStayUntilTakeIn(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := testConfig()
		cfg.AsyncScheduling = rapid.Bool().Draw(rt, "async")
		e, err := New(0, cfg, fixedStep{base: 1000, perTok: 10})
		if err != nil {
			rt.Fatal(err)
		}
		n := rapid.IntRange(1, 12).Draw(rt, "requests")
		for i := range n {
			r := workload.Request{ID: int64(i), InputTokens: rapid.IntRange(1, 80).Draw(rt, "input"),
				OutputTokens: rapid.IntRange(1, 12).Draw(rt, "output")}
			e.Add(&r, 0)
		}
		seen := map[int64]bool{}
		var (
			last []*metrics.Record // the previous step's Finished
			kept []metrics.Record  // copies of them
		)
		now := int64(0)
		for steps := 0; ; steps++ {
			st, ok, err := e.Begin(now)
			if err != nil {
				rt.Fatal(err)
			}
			for i, rec := range last {
				if *rec != kept[i] {
					rt.Fatalf("t=%d: request %d's finished record changed as the next batch formed:\n%+v\nwas\n%+v", now, kept[i].ID, *rec, kept[i])
				}
			}
			if !ok {
				break
			}
			now = st.End
			r, err := e.FinishBatch(st.ID, now)
			if err != nil {
				rt.Fatal(err)
			}
			last, kept = r.Finished, kept[:0]
			for _, rec := range r.Finished {
				if rec.Outcome != metrics.Finished || rec.Generated != rec.OutputTokens || rec.LastToken != now || seen[rec.ID] {
					rt.Fatalf("t=%d: finished record %+v (seen before: %v)", now, *rec, seen[rec.ID])
				}
				seen[rec.ID] = true
				kept = append(kept, *rec)
			}
			if steps > 10000 {
				rt.Fatal("no progress")
			}
		}
		if len(seen) != n {
			rt.Fatalf("%d of %d requests finished", len(seen), n)
		}
	})
}
