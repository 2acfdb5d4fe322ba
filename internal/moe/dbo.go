package moe

import "math"

// Overlapped is a step of stepNs (the slowest rank's whole step, its MoE
// with the all-to-all of gathered tokens included) run as vLLM's dual-batch
// overlap: two micro-batches of half the tokens each, the compute of one
// running while the other's dispatch and combine are in flight.
//
// halfNs is the slowest rank's time for one micro-batch alone, its MoE
// at half the gathered tokens with their all-to-all (HalfMoENs): that
// micro-batch's compute per MoE layer is c_u = (halfNs − L·a_u)/L, with
// a_u the layer's all-to-all of half the tokens. A memory-bound decode
// reads its weights again for each micro-batch, so 2·c_u exceeds the
// whole step's compute per layer; and the all-to-all's fixed cost does
// not halve. The two micro-batches alternate on one compute stream and one
// communication stream, layer after layer (TwoBatchNs). The result may
// exceed stepNs: small micro-batches can lose. Without a dispatch (one
// rank), it returns stepNs.
func (m *Model) Overlapped(stepNs, halfNs int64, gathered int) int64 {
	if m.cfg.Dispatch == nil || gathered < 2 || stepNs <= 0 {
		return stepNs
	}
	layers := float64(m.cfg.Layers)
	half := m.chunked(gathered/2, m.lastBusiest/2, m.commNs)
	if half >= math.MaxInt64/4 || halfNs >= math.MaxInt64/4 {
		return stepNs
	}
	c := max(float64(halfNs)-layers*half, 0) / layers
	return clamp(TwoBatchNs(m.cfg.Layers, c, half))
}

// HalfMoENs is the MoE time of one micro-batch of a dual-batch-overlapped
// step of gathered tokens: every layer at half the tokens and half the
// step's mean busiest load (no new draw), its all-to-all included.
func (m *Model) HalfMoENs(gathered int) int64 {
	g := gathered / 2
	if g <= 0 {
		return 0
	}
	return clamp(float64(m.cfg.Layers) * m.chunked(g, m.lastBusiest/2, m.blockNs))
}

// TwoBatchNs is the time of two micro-batches through layers layers, each
// layer computing comp then communicating comm per micro-batch, on one
// compute and one communication stream (the schedule of Overlapped).
func TwoBatchNs(layers int, comp, comm float64) float64 {
	var compFree, commFree float64
	var done [2]float64 // each micro-batch's last communication end
	for l := 0; l < layers; l++ {
		for u := range done {
			start := max(compFree, done[u])
			compFree = start + comp
			s := max(commFree, compFree)
			commFree = s + comm
			done[u] = commFree
		}
	}
	return max(compFree, commFree)
}

// BalancedLayerNs is one MoE layer at gathered tokens under a perfectly
// balanced load (each rank receives gathered·k/ep pairs), its dispatch and
// combine included, without drawing loads: the MoE block of a one-layer
// proposer (an MTP module) run beside the group's steps.
func (m *Model) BalancedLayerNs(gathered int) int64 {
	if gathered <= 0 {
		return 0
	}
	busiest := float64(gathered) * float64(m.cfg.TopK) / float64(m.cfg.EP)
	return clamp(m.chunked(gathered, busiest, m.blockNs))
}
