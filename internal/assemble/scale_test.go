package assemble

import (
	"math"
	"testing"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// lastTokens records every request's last-token time.
type lastTokens map[int64]int64

func (lastTokens) Advance(int64)                    {}
func (lastTokens) StepDone(int, *engine.StepResult) {}
func (l lastTokens) Terminal(r *metrics.Record)     { l[r.ID] = r.LastToken }

// Scaled multiplies every step time: with all requests arriving at once,
// scheduling does not depend on time, so the same steps run and every
// request finishes at f times its nominal time (up to rounding each step to
// the nanosecond) — for a plain instance and for a data-parallel,
// expert-parallel one, whose lockstep step has a dense part, MoE layers
// and a dispatch. The Built it came from is unchanged.
func TestScaledMultipliesEveryStep(t *testing.T) {
	for _, c := range []struct {
		name, model string
		dp          int
	}{{"plain", "meta-llama/Llama-3.1-8B", 1}, {"dp2 ep2", "Qwen/Qwen3-30B-A3B-Instruct-2507", 2}} {
		t.Run(c.name, func(t *testing.T) {
			s := config.Default()
			s.Model = c.model
			s.Instances = nil
			s.FillGroups()
			if c.dp > 1 {
				dp, ep := c.dp, c.dp
				s.Instances[0].DP, s.Instances[0].EP = &dp, &ep
			}
			s.Workload = config.Workload{TimeScale: 1, Format: "jsonl", Synthetic: &workload.Synthetic{Requests: 64,
				Arrival: workload.ArrivalProcess{Kind: "burst"},
				Input:   workload.LengthDist{Kind: "lognormal", Mean: 800, Sigma: 0.5},
				Output:  workload.LengthDist{Kind: "lognormal", Mean: 100, Sigma: 0.5}}}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			b, err := Build(s, config.Source{})
			if err != nil {
				t.Fatal(err)
			}
			run := func(b *Built) lastTokens {
				l := lastTokens{}
				sim, closer, err := b.NewSim(l)
				if err != nil {
					t.Fatal(err)
				}
				defer closer.Close()
				if _, err := sim.Run(); err != nil {
					t.Fatal(err)
				}
				if len(l) != 64 {
					t.Fatalf("%d requests ended, want 64", len(l))
				}
				return l
			}
			nominal := run(b)
			for _, f := range []float64{0.8, 1.3} {
				scaled := run(b.Scaled(f))
				for id, t0 := range nominal {
					// Each step rounds to 1 ns; a request sees at most a few
					// thousand steps.
					if d := math.Abs(float64(scaled[id]) - f*float64(t0)); d > 1e4 {
						t.Fatalf("x%g: request %d ends at %d ns, want %g x %d (off by %g ns)", f, id, scaled[id], f, t0, d)
					}
				}
			}
			again := run(b)
			for id, t0 := range nominal {
				if again[id] != t0 {
					t.Fatalf("the built scenario changed: request %d ends at %d, then %d", id, t0, again[id])
				}
			}
		})
	}
}
