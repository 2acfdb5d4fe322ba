package engine

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/workload"
)

// TestAmortisedCheckCatchesCorruption: with more request slots than
// checkAlways the slot walk runs only every few checks, yet a counter
// corrupted mid-run is still reported, within the amortisation's bound of
// checks; with few slots it is reported by the very next check; and
// CheckNow reports one left in the final state.
func TestAmortisedCheckCatchesCorruption(t *testing.T) {
	tests := []struct {
		name     string
		requests int
	}{
		{"few slots: every check walks", 20},
		{"queued requests: amortised walk", 600},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(0, testConfig(), fixedStep{base: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.requests {
				r := workload.Request{ID: int64(i), InputTokens: 40, OutputTokens: 30}
				e.Add(&r, 0)
			}
			n := len(e.slots)
			if n != tc.requests {
				t.Fatalf("%d slots for %d queued requests", n, tc.requests)
			}
			bound := 1 // checks until the report, counting the first after the corruption
			if n > checkAlways {
				bound = (n - checkAlways + checkVisits - 1) / checkVisits
			}
			now := int64(0)
			step := func() int { // one step; returns the checks it ran (Begin, FinishBatch)
				d, ok := begin(e, now)
				if !ok {
					t.Fatalf("no batch at t=%d", now)
				}
				if e.err != nil {
					return 1
				}
				now += d
				finish(e, now)
				return 2
			}
			for range 5 {
				step()
			}
			if err := e.err; err != nil {
				t.Fatalf("uncorrupted run fails its check: %v", err)
			}
			e.pinned += 3 // no pinned request: the counter is now wrong
			checks := 0
			for e.err == nil && checks <= bound {
				checks += step()
			}
			err = e.err
			if err == nil || !strings.Contains(err.Error(), "pinned count is 3") {
				t.Fatalf("corrupted pinned count not reported within %d checks (%d run): %v", bound, checks, err)
			}
			if checks > bound {
				t.Fatalf("reported after %d checks, beyond the bound of %d", checks, bound)
			}

			// The same corruption left in the final state is caught by
			// CheckNow even when the amortised walk is not due.
			f, err := New(0, testConfig(), fixedStep{base: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.requests {
				r := workload.Request{ID: int64(i), InputTokens: 40, OutputTokens: 30}
				f.Add(&r, 0)
			}
			e, now = f, 0
			step()
			f.pinned += 3
			f.checkDebt = 0
			if err := f.CheckNow(now); err == nil || !strings.Contains(err.Error(), "at the end of the run") || f.err == nil {
				t.Fatalf("CheckNow did not report the corrupted final state: %v", err)
			}
		})
	}
}
