package cluster

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/workload"
)

// corruptAt is an observer that, before the first event at which at least
// `when` handoffs are in flight, corrupts the decode demand counter (read
// only by the reject policy, so a pull run goes on unchanged), noting the
// event count then and the most handoffs seen in flight.
type corruptAt struct {
	*collect
	sim      *Sim
	when     int
	planted  bool
	event    int64
	maxHands int
}

func (c *corruptAt) Advance(now int64) {
	n := c.sim.pd.hands.len()
	c.maxHands = max(c.maxHands, n)
	if !c.planted && n >= c.when {
		c.sim.pd.demand += 7
		c.planted, c.event = true, c.sim.events
	}
}

// TestAmortisedPDCheckCatchesCorruption: with hundreds of handoffs queued
// the P/D check runs only every few events, yet a counter corrupted
// mid-run ends the run with the violation, within the amortisation's bound
// of events; with few in flight the very event that follows reports it.
func TestAmortisedPDCheckCatchesCorruption(t *testing.T) {
	tests := []struct {
		name string
		when int // handoffs in flight when corrupted
	}{
		{"few in flight: every event checks", 5},
		{"hundreds queued: amortised check", 300},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var reqs []workload.Request
			for i := range 600 { // all at once: decode admits 8 at a time
				reqs = append(reqs, workload.Request{ID: int64(i), InputTokens: 64, OutputTokens: 50})
			}
			ps := pdSetup{prefill: 1, decode: 1, pBlocks: 8000, dBlocks: 200, seqs: 8, budget: 4096,
				cfg: PDConfig{Policy: Pull}, bw: 1e12, kvPerToken: 1, pred: linear{base: 1000, perTok: 10}}
			sim, c := ps.build(t, reqs)
			obs := &corruptAt{collect: c, sim: sim, when: tc.when}
			sim.obs = obs
			_, err := sim.Run()
			if !obs.planted {
				t.Fatalf("never %d handoffs in flight (at most %d)", tc.when, obs.maxHands)
			}
			if err == nil || !strings.Contains(err.Error(), "decode demand counter") {
				t.Fatalf("corrupted demand counter not reported: %v", err)
			}
			bound := int64(1) // events after the corrupted one until the report
			if obs.maxHands > checkAlways {
				bound = int64(obs.maxHands-checkAlways+checkVisits-1) / checkVisits
			}
			t.Logf("corrupted at event %d, at most %d handoffs in flight, reported %d events later (bound %d)", obs.event, obs.maxHands, sim.events-obs.event, bound)
			if late := sim.events - obs.event; late > bound {
				t.Fatalf("reported %d events after the corruption, beyond the bound of %d (%d handoffs in flight at most)", late, bound, obs.maxHands)
			}
		})
	}
}
