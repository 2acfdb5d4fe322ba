package cluster

import (
	"reflect"
	"testing"

	"github.com/servesim/servesim/internal/kv"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// TestNewHandRecycled checks that a recycled hand comes out of newHand
// exactly as a hand built whole would (newHand sets only the fields that
// start non-zero, relying on freeHand to clear the rest).
func TestNewHandRecycled(t *testing.T) {
	tests := []struct {
		name string
		req  workload.Request
		now  int64
	}{
		{"plain", workload.Request{ID: 7, InputTokens: 100, OutputTokens: 20, Arrival: 5}, 5},
		{"session and priority", workload.Request{ID: 9, Session: "s1", InputTokens: 3, OutputTokens: 1, Priority: -2, InputIDs: []int32{1, 2, 3}}, 11},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := hand{req: tc.req, st: hNew, since: tc.now, d: -1, pSlot: -1, dSlot: -1, prefillEnd: -1}
			want.rec = metrics.NewRecord(tc.req.ID, tc.now)
			want.rec.Session, want.rec.InputTokens, want.rec.OutputTokens = tc.req.Session, tc.req.InputTokens, tc.req.OutputTokens
			want.rec.Priority = tc.req.Priority

			var p pd
			used := p.newHand(&workload.Request{ID: 1, Session: "old", InputTokens: 50}, 1)
			// A hand at the end of its life: every kind of field set.
			used.owned = []kv.BlockID{4}
			used.st, used.d, used.p, used.gen, used.bytes, used.loadFail, used.demand = hDone, 3, 2, 4, 1<<20, true, 9
			used.rec.Reprefills, used.rec.Reason = 2, "x"
			p.freeHand(used)
			got := p.newHand(&tc.req, tc.now)
			if got != used {
				t.Fatal("newHand did not reuse the freed hand")
			}
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("recycled hand\n%+v\nwant\n%+v", *got, want)
			}
			if fresh := (&pd{}).newHand(&tc.req, tc.now); !reflect.DeepEqual(*fresh, want) {
				t.Errorf("new hand\n%+v\nwant\n%+v", *fresh, want)
			}
		})
	}
}
