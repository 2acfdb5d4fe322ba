package config

import "fmt"

// Swap space bounds (engine.swap_space).
const (
	// DefaultSwapSpaceGiB is vLLM v0's default swap_space per GPU.
	DefaultSwapSpaceGiB = 4
	// maxSwapSpaceGiB bounds engine.swap_space (host memory per GPU).
	maxSwapSpaceGiB = 1 << 14
)

// SwapSpaceGiB is the swap space per GPU of an engine with preemption
// mode swap (0 with recompute).
func (e Engine) SwapSpaceGiB() float64 {
	if e.PreemptionMode != PreemptSwap {
		return 0
	}
	if e.SwapSpace > 0 {
		return e.SwapSpace
	}
	return DefaultSwapSpaceGiB
}

// validatePreemption checks an engine block's preemption fields (empty
// mode: inherit or the default).
func (e *Engine) validatePreemption(path string, bad func(field, format string, args ...any)) {
	switch e.PreemptionMode {
	case "", PreemptRecompute, PreemptSwap:
	default:
		bad(path+".preemption_mode", "must be %s (vLLM v1's only mode, the default) or %s (vLLM v0's legacy swap to host memory) (got %q)", PreemptRecompute, PreemptSwap, e.PreemptionMode)
	}
	if !(e.SwapSpace >= 0 && e.SwapSpace <= maxSwapSpaceGiB) {
		bad(path+".swap_space", "must be in (0, %d] GiB of host memory per GPU, or 0 for vLLM v0's default %d (got %g)", maxSwapSpaceGiB, DefaultSwapSpaceGiB, e.SwapSpace)
	}
}

// validateSwap checks that every instance group's effective preemption
// settings are consistent: swap_space only with swap, and swap only with
// the KV tiers, whose PCIe links time the copies.
func (s *Scenario) validateSwap(bad func(field, format string, args ...any)) {
	for i := range s.Instances {
		m := s.Instances[i].Merged(s.Engine)
		path := "engine"
		if g := s.Instances[i].Engine; g != nil && (g.PreemptionMode != "" || g.SwapSpace != 0) {
			path = fmt.Sprintf("instances[%d].engine", i)
		}
		if m.SwapSpace != 0 && m.PreemptionMode != PreemptSwap {
			bad(path+".swap_space", "applies to preemption_mode: swap only (got mode %q); remove it or set preemption_mode: swap", m.PreemptionMode)
			return
		}
		if m.PreemptionMode == PreemptSwap && s.KVTiers == nil {
			bad(path+".preemption_mode", "swap needs a kv_tiers section (its PCIe links time the swap copies); add `kv_tiers: {}` or use recompute")
			return
		}
	}
}
