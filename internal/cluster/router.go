package cluster

import "github.com/servesim/servesim/internal/workload"

// RoundRobin cycles through the candidate instances.
type RoundRobin struct{ next int }

// Route implements Router.
func (r *RoundRobin) Route(_ *workload.Request, c []int, _ *Sim) int {
	i := c[r.next%len(c)]
	r.next++
	return i
}

// LeastLoaded picks the candidate with the fewest running plus waiting
// requests (lowest index on ties).
type LeastLoaded struct{}

// Route implements Router.
func (LeastLoaded) Route(_ *workload.Request, c []int, s *Sim) int {
	best, load := c[0], -1
	for _, i := range c {
		e := s.engines[i]
		l := e.Running() + e.Waiting()
		if load < 0 || l < load {
			best, load = i, l
		}
	}
	return best
}
