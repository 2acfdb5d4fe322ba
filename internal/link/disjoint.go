package link

import "math"

// rateDisjoint is progressive filling's result when no two active flows
// share a resource, the common case of a few transfers in flight between
// distinct nodes: each flow's rate is the smaller of its own bottleneck,
// the smallest capacity among its finite resources, and its cap.
//
// Progressive filling reaches the same numbers: a resource of one flow
// offers its whole capacity (capacity/1, exact), a flow is frozen either
// at its cap, when the cap is at most the smallest share still offered,
// or at its own bottleneck, and freezing a flow changes nothing another
// flow's resources offer; the bottlenecks are taken in increasing order,
// so the floor keeping shares from decreasing never lifts one, and a
// share that is not positive becomes the smallest positive number there
// as here. Each resource's use is its one flow's rate.
// (TestDisjointMatchesFilling compares the two on random networks.) It
// reports false, changing nothing, for a flow with neither a finite
// resource nor a cap, which progressive filling refuses.
func (n *Network) rateDisjoint() bool {
	for _, f := range n.active {
		if math.IsInf(n.capacity[f.eg], 1) && math.IsInf(n.capacity[f.in], 1) && math.IsInf(f.rateCap, 1) {
			return false
		}
	}
	for _, f := range n.active {
		share := math.Inf(1)
		for _, r := range [2]int32{f.eg, f.in} {
			if c := n.capacity[r]; !math.IsInf(c, 1) {
				share = min(share, c)
			}
		}
		rate := cappedRate(f.rateCap, share)
		f.rate = rate
		for _, r := range [2]int32{f.eg, f.in} {
			n.counts[r] = 0
			n.used[r] = rate
		}
	}
	return true
}

// rateOne is recompute's bookkeeping and rateDisjoint for a single active
// flow (whose egress and ingress are distinct resources), without their
// loops: the commonest recomputation when transfers rarely overlap. It
// reports false, having only re-anchored the flow, for a flow with
// neither a finite resource nor a cap, which progressive filling refuses.
func (n *Network) rateOne(t int64) bool {
	f := n.active[0]
	f.anchorRem = f.remaining(t)
	f.anchorT = t
	ceg, cin := n.capacity[f.eg], n.capacity[f.in]
	if math.IsInf(ceg, 1) && math.IsInf(cin, 1) && math.IsInf(f.rateCap, 1) {
		f.rate = 0
		return false
	}
	n.touched = append(n.touched, f.eg, f.in)
	share := math.Inf(1)
	if !math.IsInf(ceg, 1) {
		share = ceg
	}
	if !math.IsInf(cin, 1) {
		share = min(share, cin)
	}
	rate := cappedRate(f.rateCap, share)
	f.rate = rate
	n.used[f.eg], n.used[f.in] = rate, rate
	return true
}

// cappedRate is the rate of a flow whose bottleneck share is share and
// whose own cap is rateCap: the cap when it is below the share, else the
// share, kept above zero so that the flow still finishes.
func cappedRate(rateCap, share float64) float64 {
	if rateCap <= share { // capped below the bottleneck
		return rateCap
	}
	if !(share > 0) {
		return math.SmallestNonzeroFloat64
	}
	return share
}
