package metrics

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	_ "github.com/servesim/servesim/internal/testseed" // fixed rapid seed
)

// TestDistSpillProperty: whatever mix of single values and runs a dist
// records, and wherever its 32-bit counts spill into its 64-bit ones
// (forced here at random points by lowering spillAt), its histogram, count,
// sum, min and max are those of a reference HdrHistogram and plain sums.
func TestDistSpillProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d, h := newDist(), newHist()
		var n, sum int64
		lo, hi := int64(-1), int64(-1)
		steps := rapid.IntRange(1, 2*pendCap+3).Draw(t, "steps")
		spillP := rapid.IntRange(0, 1000).Draw(t, "spill per mille")
		for range steps {
			ns := rapid.OneOf(rapid.Int64Range(0, 5e9), rapid.Int64Range(0, 1e17), rapid.Int64Range(-3, 3)).Draw(t, "ns")
			count := int64(1)
			if rapid.IntRange(0, 3).Draw(t, "run") == 0 {
				count = rapid.Int64Range(0, 300).Draw(t, "count")
			}
			if rapid.IntRange(0, 999).Draw(t, "spill") < spillP {
				d.spillAt = 0 // the next flush spills
			}
			if count == 1 {
				d.add(ns)
			} else {
				d.addN(ns, count)
			}
			if ns < 0 || count <= 0 {
				continue
			}
			if err := h.RecordValues(toUs(ns), count); err != nil {
				t.Fatal(err)
			}
			n, sum = n+count, sum+ns*count
			if lo < 0 || ns < lo {
				lo = ns
			}
			hi = max(hi, ns)
		}
		if d.n != n || d.sum != sum || (n > 0 && (d.min != lo || d.max != hi)) {
			t.Fatalf("n %d sum %d min %d max %d, want %d %d %d %d", d.n, d.sum, d.min, d.max, n, sum, lo, hi)
		}
		got := d.hist()
		if !slices.Equal(got.Export().Counts, h.Export().Counts) || got.TotalCount() != h.TotalCount() {
			t.Fatalf("counts differ: total %d, want %d", got.TotalCount(), h.TotalCount())
		}
	})
}
