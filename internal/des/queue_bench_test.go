package des

import (
	"fmt"
	"testing"
)

// BenchmarkQueueSteps replays a cluster's main event pattern: n instances
// each keep one pending step end; popping the earliest schedules that
// instance's next step a pseudo-random 20 to 50 ms later, and one arrival
// in 32 events is pushed before the step end, as a request arrival is.
func BenchmarkQueueSteps(b *testing.B) {
	for _, n := range []int{1, 8, 32, 128} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			var q Queue
			x := uint64(12345)
			next := func() Time { // xorshift: cheap and deterministic
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
				return Time(20_000_000 + x%30_000_000)
			}
			for i := range n {
				if err := q.Push(Event{At: next(), Target: int32(i)}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				e, _ := q.Pop()
				if e.Kind == 1 {
					continue // an arrival: nothing to reschedule
				}
				if i%32 == 0 {
					if err := q.Push(Event{At: e.At + next()/4, Kind: 1}); err != nil {
						b.Fatal(err)
					}
				}
				if err := q.Push(Event{At: e.At + next(), Target: e.Target}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
