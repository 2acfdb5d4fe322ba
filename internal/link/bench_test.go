package link_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/servesim/servesim/internal/link"
)

// BenchmarkSteadyState keeps a fixed number of flows in flight between
// random endpoints; one iteration is one network event (NextEvent, Advance,
// and restarting every completed flow).
func BenchmarkSteadyState(b *testing.B) {
	for _, tc := range []struct{ endpoints, flows int }{{16, 10}, {64, 100}, {64, 1000}, {256, 1000}} {
		b.Run(fmt.Sprintf("endpoints=%d/flows=%d", tc.endpoints, tc.flows), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			n := link.New()
			for i := range tc.endpoints {
				must(n.AddEndpoint(float64(25+i%4*25)*1e9, 2000))
			}
			start := func(now int64) {
				from := link.EndpointID(rng.IntN(tc.endpoints))
				to := link.EndpointID(rng.IntN(tc.endpoints))
				must(n.Start(now, from, to, 1+rng.Int64N(64<<20), 0))
			}
			for range tc.flows {
				start(0)
			}
			done := make([]link.Completion, 0, tc.flows)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				at, ok := n.NextEvent()
				if !ok {
					b.Fatal("idle network")
				}
				done = must(n.Advance(at, done[:0]))
				for range done {
					start(at)
				}
			}
		})
	}
}
