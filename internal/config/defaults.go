package config

import (
	"fmt"
)

// Defaults of the scenario.
const (
	DefaultModel    = "meta-llama/Llama-3.1-8B"
	DefaultHardware = "RTXPRO6000"
	DefaultTrace    = "builtin:sharegpt-llama-3.1-8b-300-sps10"
	// DefaultStepOverheadUs is the extra fixed time per step: none, the
	// engine-side time is modelled (docs/engine-time.md).
	DefaultStepOverheadUs = 0.0
)

// Default returns the embedded default scenario. Loading a file decodes it
// on top of this value, so a field the file leaves out keeps its default
// while one it sets, even to zero, is taken as written (and validated).
func Default() *Scenario {
	return &Scenario{
		Name:      "default",
		Seed:      42,
		Model:     DefaultModel,
		Hardware:  DefaultHardware,
		Dtype:     "bf16",
		Predictor: Predictor{Kind: PredictorProfile, StepOverheadUs: DefaultStepOverheadUs},
		Engine: Engine{
			BlockSize:            16,
			GPUMemoryUtilization: 0.9,
			ChunkedPrefill:       boolPtr(true),
			PrefixCaching:        boolPtr(true),
			AsyncScheduling:      boolPtr(true),
		},
		Router: RouterRoundRobin,
		Handoff: Handoff{Policy: PolicyPull, Placement: PlacementRoundRobin, LeaseS: 30, Heartbeat: boolPtr(true),
			OnExpiry: ExpiryReprefill, RetryAfterS: 1, MaxPrefillQueueS: 5, MaxDecodeKVFraction: 1, MaxReprefills: 3,
			PushBufferFraction: 0.1, PushOverflow: OverflowSpill},
		Links:    Links{LatencyUs: -1, TPLatencyUs: -1},
		Workload: Workload{Trace: DefaultTrace, Format: TraceJSONL, TimeScale: 1},
	}
}

// FillGroups gives every instance group its defaults (list elements are
// created by the decoder, so they cannot be pre-filled like the rest).
func (s *Scenario) FillGroups() {
	if len(s.Instances) == 0 {
		s.Instances = []Group{{}}
	}
	for i := range s.Instances {
		g := &s.Instances[i]
		if g.Name == "" {
			g.Name = fmt.Sprintf("g%d", i)
		}
		if g.Count == nil {
			g.Count = intPtr(1)
		}
		if g.Role == "" {
			g.Role = RoleMixed
		}
		if g.Hardware == "" {
			g.Hardware = s.Hardware
		}
		if g.TP == nil {
			g.TP = intPtr(1)
		}
		if g.PP == nil {
			g.PP = intPtr(1)
		}
	}
	if s.Faults != nil {
		s.Faults.defaults()
	}
	if s.Autoscaler != nil {
		s.Autoscaler.defaults(s)
	}
}

func intPtr(v int) *int { return &v }

func boolPtr(b bool) *bool { return &b }
