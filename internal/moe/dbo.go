package moe

import "math"

// Overlapped is a step of stepNs (the slowest rank's whole step, its MoE
// with the all-to-all of gathered tokens included) run as vLLM's dual-batch
// overlap: two micro-batches of half the tokens each, the compute of one
// running while the other's dispatch and combine are in flight.
//
// Per MoE layer a micro-batch computes c/2, where c is the step's compute
// per layer, c = (stepNs − L·a)/L with a the layer's all-to-all at the
// full batch, and then communicates a_u, the all-to-all of half the tokens
// (whose fixed cost does not halve). The two micro-batches alternate on
// one compute stream and one communication stream, layer after layer: a
// micro-batch's compute waits for the stream and for its own previous
// communication, its communication for the stream and its compute. The
// result is when the last communication ends. Without a dispatch (one
// rank), or when the step has no all-to-all, it returns stepNs.
func (m *Model) Overlapped(stepNs int64, gathered int) int64 {
	if m.cfg.Dispatch == nil || gathered < 2 || stepNs <= 0 {
		return stepNs
	}
	layers := float64(m.cfg.Layers)
	a := float64(m.cfg.Dispatch.LayerNs(gathered, m.lastBusiest))
	half := m.cfg.Dispatch.LayerNs(gathered/2, m.lastBusiest/2)
	if a <= 0 || a >= math.MaxInt64/4 || half >= math.MaxInt64/4 {
		return stepNs
	}
	c := max(float64(stepNs)-layers*a, 0) / layers
	return clamp(TwoBatchNs(m.cfg.Layers, c/2, float64(half)))
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
	ns := m.LayerNs(gathered, busiest)
	if m.cfg.Dispatch != nil {
		ns += float64(m.cfg.Dispatch.LayerNs(gathered, busiest))
	}
	return clamp(ns)
}
