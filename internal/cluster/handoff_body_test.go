package cluster

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// TestDetachedBodiesChangeNothing: a decoding hand giving its body back
// (detachBody) changes no record, also of the requests in flight when a
// run is cut off at a limit, whose records liveRecords gathers from every
// copy. Random P/D runs under every policy and placement, some cut off,
// end every request with the same record (and the same error) with and
// without it.
func TestDetachedBodiesChangeNothing(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ps := pdSetup{prefill: rapid.IntRange(1, 3).Draw(rt, "prefill"), decode: rapid.IntRange(1, 3).Draw(rt, "decode"),
			pBlocks: rapid.SampledFrom([]int{40, 300, 2000}).Draw(rt, "pBlocks"), dBlocks: rapid.SampledFrom([]int{40, 300, 2000}).Draw(rt, "dBlocks"),
			seqs: rapid.IntRange(1, 16).Draw(rt, "seqs"), budget: rapid.SampledFrom([]int{64, 256, 1024}).Draw(rt, "budget"),
			cfg: PDConfig{
				Policy:              PolicyName(rapid.IntRange(0, 4).Draw(rt, "policy")),
				Placement:           Placement(rapid.IntRange(0, 3).Draw(rt, "placement")),
				Lease:               int64(rapid.IntRange(1, 300).Draw(rt, "leaseMs")) * 1e6,
				RetryAfter:          int64(rapid.IntRange(1, 300).Draw(rt, "retryMs")) * 1e6,
				MaxPrefillQueue:     int64(rapid.IntRange(0, 500).Draw(rt, "maxQueueMs")) * 1e6,
				MaxDecodeKVFraction: rapid.Float64Range(0, 2).Draw(rt, "kvFrac"),
				MaxReprefills:       rapid.IntRange(0, 3).Draw(rt, "maxReprefills"),
			},
			bw: rapid.SampledFrom([]float64{math.Inf(1), 1e9, 25e9}).Draw(rt, "bw"), kvPerToken: 4096,
			pred: linear{base: 1e6, perTok: 2000, perKV: 5}}
		var reqs []workload.Request
		at := int64(0)
		for id := range rapid.IntRange(1, 40).Draw(rt, "n") {
			at += int64(rapid.IntRange(0, 100).Draw(rt, "gapMs")) * 1e6
			in := rapid.IntRange(1, 1500).Draw(rt, "in")
			reqs = append(reqs, workload.Request{ID: int64(id), Arrival: at, InputTokens: in, OutputTokens: rapid.IntRange(1, 200).Draw(rt, "out")})
		}
		maxEvents := int64(rapid.SampledFrom([]int{0, 0, 50, 300, 2000}).Draw(rt, "maxEvents"))
		run := func(keep bool) (map[int64]metrics.Record, string) {
			sim, c := ps.build(rt, reqs)
			sim.pd.keepBodies = keep
			sim.limits = Limits{MaxEvents: maxEvents}
			msg := ""
			if _, err := sim.Run(); err != nil {
				msg = err.Error()
			}
			return c.recs, msg
		}
		got, gotErr := run(false)
		want, wantErr := run(true)
		if gotErr != wantErr {
			rt.Fatalf("error %q, with every body kept %q", gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			for id, w := range want {
				if g := got[id]; !reflect.DeepEqual(g, w) {
					rt.Fatalf("request %d:\n%+v\nwith every body kept\n%+v", id, g, w)
				}
			}
			rt.Fatalf("%d records, with every body kept %d", len(got), len(want))
		}
	})
}

// TestHandIsOneLine: a hand, its core and body pointer, fills one cache
// line; the request lives in the body, which is 512 bytes (line-aligned
// by its size class) with the request on whole lines.
func TestHandIsOneLine(t *testing.T) {
	if n := unsafe.Sizeof(hand{}); n != 64 {
		t.Fatalf("a hand is %d bytes, want 64", n)
	}
	var b handBody
	if n, off := unsafe.Sizeof(b), unsafe.Offsetof(b.req); n != 512 || off%64 != 0 {
		t.Fatalf("a hand body is %d bytes with its request at offset %d, want 512 bytes and a line boundary", n, off)
	}
}

// TestSpentHandKeepsItsID: a decoding hand on the shared spent body (no
// request there) is still named by its own id in the stall report and
// passes the table check under it.
func TestSpentHandKeepsItsID(t *testing.T) {
	ps := pdSetup{prefill: 1, decode: 1, pBlocks: 100, dBlocks: 100, seqs: 4, budget: 256, bw: 1e9, kvPerToken: 1, pred: linear{base: 1}}
	sim, _ := ps.build(t, nil)
	h := testHand(workload.Request{ID: 9, InputTokens: 64, OutputTokens: 4}, handCore{st: hDecoding, p: 0, d: 1, pSlot: -1, dSlot: -1})
	h.handBody = sim.pd.spent
	sim.pd.hands.put(9, h)
	if got := sim.describe(); !strings.Contains(got, "decoding 1 (first: request 9 ") {
		t.Errorf("stall report does not name request 9:\n%s", got)
	}
	if err := sim.checkHand(9, h); err != nil {
		t.Errorf("spent hand fails the check: %v", err)
	}
}
