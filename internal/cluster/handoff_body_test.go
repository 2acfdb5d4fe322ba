package cluster

import (
	"math"
	"reflect"
	"testing"
	"unsafe"

	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// TestRetiredHandsChangeNothing: a decoding request giving its hand back
// (retire) changes no record, also of the requests its client abandons
// (an abort then finds no handoff) and of the requests in flight when a
// run is cut off at a limit, whose records liveRecords gathers from every
// copy. Random P/D runs under every policy and placement, some with
// aborts, some cut off, end every request with the same record (and the
// same error) with and without it; the invariant checks (a retired
// request's ready decode slot among them) run throughout.
func TestRetiredHandsChangeNothing(t *testing.T) {
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
			r := workload.Request{ID: int64(id), Arrival: at, InputTokens: in, OutputTokens: rapid.IntRange(1, 200).Draw(rt, "out")}
			if rapid.IntRange(0, 3).Draw(rt, "abort") == 0 {
				r.AbortAt = at + int64(rapid.IntRange(0, 500).Draw(rt, "abortAfterMs"))*1e6 + 1
			}
			reqs = append(reqs, r)
		}
		maxEvents := int64(rapid.SampledFrom([]int{0, 0, 50, 300, 2000}).Draw(rt, "maxEvents"))
		run := func(keep bool) (map[int64]metrics.Record, string) {
			sim, c := ps.build(rt, reqs)
			sim.pd.keepHands = keep
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
			rt.Fatalf("error %q, with every hand kept %q", gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			for id, w := range want {
				if g := got[id]; !reflect.DeepEqual(g, w) {
					rt.Fatalf("request %d:\n%+v\nwith every hand kept\n%+v", id, g, w)
				}
			}
			rt.Fatalf("%d records, with every hand kept %d", len(got), len(want))
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

// TestRetireLeavesNoDecodingHand: midway through a pull run with
// requests decoding, a run that retires hands holds none in state
// decoding, one that keeps them (keepHands) does, and both end the same.
func TestRetireLeavesNoDecodingHand(t *testing.T) {
	var reqs []workload.Request
	for i := range 8 {
		reqs = append(reqs, workload.Request{ID: int64(i), Arrival: int64(i) * 1e6, InputTokens: 200, OutputTokens: 400})
	}
	ps := pdSetup{prefill: 1, decode: 2, pBlocks: 400, dBlocks: 400, seqs: 8, budget: 1024,
		cfg: PDConfig{Policy: Pull}, bw: 25e9, kvPerToken: 4096, pred: linear{base: 1e6, perTok: 2000, perKV: 5}}
	for _, keep := range []bool{false, true} {
		sim, c := ps.build(t, reqs)
		sim.pd.keepHands = keep
		if err := sim.Pull(); err != nil {
			t.Fatal(err)
		}
		if _, err := sim.RunUntil(200e6); err != nil {
			t.Fatal(err)
		}
		decoding := 0
		for _, h := range sim.pd.hands.all {
			if h.st == hDecoding {
				decoding++
			}
		}
		if keep != (decoding > 0) {
			t.Errorf("keepHands %v: %d hands decoding midway: %s", keep, decoding, sim.describe())
		}
		if _, err := sim.RunUntil(math.MaxInt64); err != nil {
			t.Fatal(err)
		}
		if err := sim.Finish(); err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			if got := c.recs[r.ID]; got.Outcome != metrics.Finished || got.Generated != r.OutputTokens {
				t.Errorf("keepHands %v: request %d ended %v with %d tokens", keep, r.ID, got.Outcome, got.Generated)
			}
		}
	}
}
