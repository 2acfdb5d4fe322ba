package engine

import (
	"testing"

	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// TestFitLimitsAgreeWithUnfit: the token bounds a caller compares against
// say exactly what Unfit and HandoffUnfit say, on the boundary too.
func TestFitLimitsAgreeWithUnfit(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		e := drawDecodeEngine(rt)
		lim, plim := e.FitTokens(), e.HandoffPromptTokens()
		// Draw around the bounds as often as anywhere else.
		in := rapid.OneOf(rapid.IntRange(1, 8000), rapid.IntRange(max(1, plim-2), max(1, plim+2))).Draw(rt, "in")
		out := rapid.OneOf(rapid.IntRange(1, 4000), rapid.IntRange(max(1, lim-in-2), max(1, lim-in+2))).Draw(rt, "out")
		r := workload.Request{InputTokens: in, OutputTokens: out}
		if fit := in+out <= lim; fit != (e.Unfit(&r) == "") {
			rt.Fatalf("FitTokens %d says fit=%v for %d+%d tokens, Unfit says %q", lim, fit, in, out, e.Unfit(&r))
		}
		if fit := in+out <= lim && in <= plim; fit != (e.HandoffUnfit(&r) == "") {
			rt.Fatalf("FitTokens %d, HandoffPromptTokens %d say fit=%v for %d+%d tokens, HandoffUnfit says %q", lim, plim, fit, in, out, e.HandoffUnfit(&r))
		}
	})
}

// TestFitTokensByHand: 64 blocks of 16 tokens hold 1,024 tokens, unless
// max_model_len is lower; 200 reserved decode tokens leave a 824-token
// prompt. With K = 4 speculative tokens the last verification step holds
// the last token's position, its 4 proposals and 4 lookahead slots, so
// prompt + output - 1 + 8 <= 1,024: 1,017 tokens.
func TestFitTokensByHand(t *testing.T) {
	for _, c := range []struct{ maxLen, reserved, k, fit, prompt int }{
		{0, 0, 0, 1024, 1024},
		{1000, 0, 0, 1000, 1024},
		{2000, 200, 0, 1024, 824},
		{0, 0, 4, 1017, 1024},
		{1010, 0, 4, 1010, 1024},
	} {
		cfg := Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 4096, BlockSize: 16, NumBlocks: 64, ChunkedPrefill: true,
			MaxModelLen: c.maxLen, ReservedDecodeTokens: c.reserved}
		if c.k > 0 {
			cfg.Spec = Speculative{K: c.k, Accept: Rates(IIDAcceptance(0.5, c.k)), Seed: 1}
		}
		e, err := New(0, cfg, fixedStep{base: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.FitTokens(); got != c.fit {
			t.Errorf("max_model_len %d: FitTokens %d, want %d", c.maxLen, got, c.fit)
		}
		if got := e.HandoffPromptTokens(); got != c.prompt {
			t.Errorf("reserved %d: HandoffPromptTokens %d, want %d", c.reserved, got, c.prompt)
		}
	}
}

// drawDecodeEngine draws a small decode engine for the fit tests: block
// size, pool, decode headroom, an optional max_model_len and an optional
// speculative lookahead (whose slots of the last verification count too).
func drawDecodeEngine(rt *rapid.T) *Engine {
	cfg := Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 4096, BlockSize: rapid.SampledFrom([]int{1, 16, 32}).Draw(rt, "bs"),
		NumBlocks: rapid.IntRange(1, 200).Draw(rt, "blocks"), ChunkedPrefill: true, Role: Decode,
		ReservedDecodeTokens: rapid.IntRange(0, 1000).Draw(rt, "headroom")}
	if rapid.Bool().Draw(rt, "maxLen") {
		cfg.MaxModelLen = rapid.IntRange(1, 4000).Draw(rt, "maxModelLen")
	}
	if k := rapid.IntRange(0, 5).Draw(rt, "specK"); k > 0 {
		cfg.Spec = Speculative{K: k, Accept: Rates(IIDAcceptance(0.5, k)), Seed: 1}
	}
	if rapid.Bool().Draw(rt, "hybrid") {
		cfg.Local = LocalKV{Groups: rapid.IntRange(1, 6).Draw(rt, "groups"), Window: rapid.IntRange(1, 9000).Draw(rt, "window"), Chunked: rapid.Bool().Draw(rt, "chunked")}
		if probe, err := New(0, cfg, fixedStep{base: 1}); err == nil {
			cfg.NumBlocks += cfg.Local.Groups * probe.localPeak()
		}
	}
	e, err := New(0, cfg, fixedStep{base: 1})
	if err != nil {
		rt.Fatal(err)
	}
	return e
}
