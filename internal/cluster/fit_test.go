package cluster

import (
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// TestFitBoundsAgreeWithEngines: on clusters of instances with different
// pools, max_model_len and decode headroom, each O(1) admission test says
// "every instance fits" exactly when asking every engine says so, so the
// fast paths of admit, pdUnfit and placeDecode give the candidates the
// per-instance loops give.
func TestFitBoundsAgreeWithEngines(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(rt, "instances")
		var engines []*engine.Engine
		for i := range n {
			cfg := engine.Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 512, BlockSize: rapid.SampledFrom([]int{1, 16}).Draw(rt, "bs"),
				NumBlocks: rapid.IntRange(1, 300).Draw(rt, "blocks"), ChunkedPrefill: true,
				Role: engine.Role(rapid.IntRange(0, 2).Draw(rt, "role"))}
			if rapid.Bool().Draw(rt, "maxLenSet") {
				cfg.MaxModelLen = rapid.IntRange(1, 3000).Draw(rt, "maxLen")
			}
			if cfg.Role == engine.Decode {
				cfg.ReservedDecodeTokens = rapid.IntRange(0, 500).Draw(rt, "headroom")
			}
			e, err := engine.New(i, cfg, linear{base: 1})
			if err != nil {
				rt.Fatal(err)
			}
			engines = append(engines, e)
		}
		s, err := New(Config{Engines: engines, Source: &sliceSrc{}})
		if err != nil {
			rt.Fatal(err)
		}
		f := s.bounds()
		for range 20 {
			r := workload.Request{InputTokens: rapid.IntRange(1, 5000).Draw(rt, "in"), OutputTokens: rapid.IntRange(1, 2000).Draw(rt, "out")}
			all, dec, pre := true, true, true
			for _, e := range engines {
				all = all && e.Unfit(&r) == ""
				switch e.Config().Role {
				case engine.Decode:
					dec = dec && e.HandoffFits(&r)
				case engine.Prefill:
					prompt := r
					prompt.OutputTokens = 1
					pre = pre && e.Unfit(&prompt) == ""
				default:
					pre = pre && e.Unfit(&r) == ""
				}
			}
			if got := f.fitsAll(&r); got != all {
				rt.Fatalf("%d+%d tokens: fitsAll %v, engines say %v", r.InputTokens, r.OutputTokens, got, all)
			}
			if got := f.fitsAllDecode(&r); got != dec {
				rt.Fatalf("%d+%d tokens: fitsAllDecode %v, engines say %v", r.InputTokens, r.OutputTokens, got, dec)
			}
			if got := f.fitsAllPrefill(&r); got != pre {
				rt.Fatalf("%d+%d tokens: fitsAllPrefill %v, engines say %v", r.InputTokens, r.OutputTokens, got, pre)
			}
		}
	})
}
