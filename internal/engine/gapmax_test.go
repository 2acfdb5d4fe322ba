package engine

import (
	"testing"

	"pgregory.net/rapid"
)

// TestGapMaxMatchesScan: after every batch, gapMax's answer for every t in
// the window is the maximum of a scan over the gaps since t, ties, zero
// gaps and long decreasing runs included.
func TestGapMaxMatchesScan(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var g gapMax
		var gaps []int64 // gaps[i] is batch i+1's
		steps := rapid.IntRange(1, 400).Draw(rt, "steps")
		mode := rapid.IntRange(0, 2).Draw(rt, "mode")
		for tick := int64(1); tick <= int64(steps); tick++ {
			var gap int64
			switch mode {
			case 0: // small values: many ties
				gap = int64(rapid.IntRange(0, 3).Draw(rt, "gap"))
			case 1: // decreasing runs
				gap = int64(1000 - tick%97)
			default:
				gap = int64(rapid.IntRange(0, 1<<40).Draw(rt, "gap"))
			}
			gaps = append(gaps, gap)
			g.push(tick, gap)
			for q := max(0, tick-laneWindow+1); q <= tick; q++ {
				want := int64(-1)
				for j := q + 1; j <= tick; j++ {
					want = max(want, gaps[j-1])
				}
				if got := g.since(q, tick); got != want {
					rt.Fatalf("tick %d: since(%d) = %d, want %d", tick, q, got, want)
				}
			}
		}
	})
}
