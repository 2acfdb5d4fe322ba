package cluster

import (
	"math"
	"math/rand/v2"

	"github.com/servesim/servesim/internal/workload"
)

// RoundRobin cycles through the candidate instances.
type RoundRobin struct{ next int }

// Route implements Router.
func (r *RoundRobin) Route(_ *workload.Request, c []int, _ View) int {
	i := c[r.next%len(c)]
	r.next++
	return i
}

// LeastLoaded picks the candidate with the fewest running, waiting and
// handoff-queued requests (lowest index on ties).
type LeastLoaded struct{}

// Route implements Router.
func (LeastLoaded) Route(_ *workload.Request, c []int, v View) int {
	best, least := c[0], -1
	for _, i := range c {
		if l := v.Load(i); least < 0 || l < least {
			best, least = i, l
		}
	}
	return best
}

// Random picks a candidate uniformly from a seeded stream.
type Random struct{ Rand *rand.Rand }

// Route implements Router.
func (r Random) Route(_ *workload.Request, c []int, _ View) int { return c[r.Rand.IntN(len(c))] }

// LeastKV picks the candidate with the most free KV blocks (lowest index
// on ties): memory-aware placement.
type LeastKV struct{}

// Route implements Router.
func (LeastKV) Route(_ *workload.Request, c []int, v View) int {
	best, free := c[0], -1
	for _, i := range c {
		if f := v.FreeKV(i); f > free {
			best, free = i, f
		}
	}
	return best
}

// PrefixAffinity picks the candidate that holds the longest prefix of the
// request's prompt, breaking ties (and requests without token ids) by the
// least load. With KV tiers, tokens held below the GPU count weighted by
// what loading them saves (View.TieredPrefixTokens).
type PrefixAffinity struct{}

// Route implements Router.
func (PrefixAffinity) Route(req *workload.Request, c []int, v View) int {
	best, bestHit, bestLoad := c[0], -1.0, 0
	for _, i := range c {
		hit, l := v.TieredPrefixTokens(i, req), v.Load(i)
		if hit > bestHit || (hit == bestHit && l < bestLoad) {
			best, bestHit, bestLoad = i, hit, l
		}
	}
	return best
}

// KVAware picks the candidate that would compute the fewest prompt tokens
// before this request's first token: the tokens its waiting queue still
// has to compute plus this prompt's tokens it does not hold (tokens held
// in a lower KV tier count as held in proportion to what loading them
// saves), breaking ties by the least load.
type KVAware struct{}

// Route implements Router.
func (KVAware) Route(req *workload.Request, c []int, v View) int {
	best, bestCost, bestLoad := c[0], math.Inf(1), 0
	for _, i := range c {
		cost := float64(v.WaitingTokens(i)) + float64(req.InputTokens) - v.TieredPrefixTokens(i, req)
		if l := v.Load(i); cost < bestCost || (cost == bestCost && l < bestLoad) {
			best, bestCost, bestLoad = i, cost, l
		}
	}
	return best
}

// PowerOfTwo samples two distinct candidates from a seeded stream and
// picks the less loaded one.
type PowerOfTwo struct{ Rand *rand.Rand }

// Route implements Router.
func (p PowerOfTwo) Route(_ *workload.Request, c []int, v View) int {
	a := p.Rand.IntN(len(c))
	b := p.Rand.IntN(len(c) - 1)
	if b >= a {
		b++
	}
	if v.Load(c[b]) < v.Load(c[a]) {
		return c[b]
	}
	return c[a]
}
