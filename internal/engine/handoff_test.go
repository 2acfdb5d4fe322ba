package engine

import (
	"testing"

	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// TestHandoffFitsAgreesWithUnfit: the allocation-free fit test placement
// uses says the same as HandoffUnfit, which accounts for the decode
// headroom as Reserve does.
func TestHandoffFitsAgreesWithUnfit(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		e := drawDecodeEngine(rt)
		cfg := e.cfg
		r := workload.Request{InputTokens: rapid.IntRange(1, 4000).Draw(rt, "in"), OutputTokens: rapid.IntRange(1, 2000).Draw(rt, "out")}
		if rapid.Bool().Draw(rt, "nearCapacity") {
			// Around the pool's size, where the lookahead decides.
			room := cfg.NumBlocks * cfg.BlockSize
			r.InputTokens = rapid.IntRange(1, max(1, room/2)).Draw(rt, "inNear")
			r.OutputTokens = max(1, room-r.InputTokens+rapid.IntRange(-12, 2).Draw(rt, "outDelta"))
		}
		why := e.HandoffUnfit(&r)
		if fits := e.HandoffFits(&r); fits != (why == "") {
			rt.Fatalf("HandoffFits %v but HandoffUnfit %q", fits, why)
		}
		need := cdiv(r.InputTokens+cfg.ReservedDecodeTokens, cfg.BlockSize)
		if why == "" && need > cfg.NumBlocks {
			rt.Fatalf("fits, but the reservation needs %d of %d blocks", need, cfg.NumBlocks)
		}
	})
}

// TestStateNames: every engine state prints as a distinct name.
func TestStateNames(t *testing.T) {
	seen := map[string]bool{}
	for st := stFree; st <= stReady; st++ {
		n := st.String()
		if seen[n] || n == "" {
			t.Errorf("state %d prints %q", uint8(st), n)
		}
		seen[n] = true
	}
}
