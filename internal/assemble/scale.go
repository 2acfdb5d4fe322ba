package assemble

import "github.com/servesim/servesim/internal/perf"

// Scaled returns a copy of b whose runs take f times every step time
// (f > 0): each instance's predictor and each data-parallel instance's
// lockstep predictor (which times a rank's batch with the MoE layers'
// time, dispatch included, handed to it in perf.Batch.MoENs, so scaling it
// scales the whole step). The error bars run a scenario at the ends of the
// step-error band with it. b is not changed.
func (b *Built) Scaled(f float64) *Built {
	c := *b
	c.instances = append([]Instance(nil), b.instances...)
	for i := range c.instances {
		c.instances[i].Predictor = perf.Scale(c.instances[i].Predictor, f)
	}
	c.groups = append([]groupSpec(nil), b.groups...)
	for i := range c.groups {
		c.groups[i].pred = perf.Scale(c.groups[i].pred, f)
	}
	return &c
}
