package cluster

import "github.com/servesim/servesim/internal/workload"

// This file holds what a router sees of the instances: the read-only
// View and its implementation over the simulation.

// Router picks the instance for an arriving request among candidates (all
// instances able to serve it), seeing the instances only through a
// read-only view.
type Router interface {
	Route(req *workload.Request, candidates []int, v View) int
}

// View is the read-only picture of the instances a Router decides on.
type View interface {
	// Load is instance i's queue-length load: requests running, waiting,
	// queued for a handoff admission and loading a prefix from a KV tier.
	Load(i int) int
	// FreeKV is instance i's number of free KV blocks.
	FreeKV(i int) int
	// PrefixHitTokens is how many prompt tokens of req instance i's prefix
	// cache holds now.
	PrefixHitTokens(i int, req *workload.Request) int
	// TieredPrefixTokens is PrefixHitTokens plus the prompt tokens the
	// KV tiers below instance i's GPU hold beyond them, weighted by what
	// loading them saves over recomputing (equal to PrefixHitTokens
	// without tiers).
	TieredPrefixTokens(i int, req *workload.Request) float64
	// WaitingTokens is the number of tokens instance i's waiting queue
	// still has to compute.
	WaitingTokens(i int) int64
}

// view implements View over a Sim; routers cannot reach the Sim itself.
type view struct{ s *Sim }

func (v view) Load(i int) int {
	e := v.s.engines[i]
	return e.Running() + e.Waiting() + e.HandoffQueue() + e.Loading() + e.Swapping()
}

func (v view) FreeKV(i int) int { return v.s.engines[i].Pool().Free() }

func (v view) PrefixHitTokens(i int, req *workload.Request) int {
	e := v.s.engines[i]
	if h := v.s.ph.of(req, e.Config().BlockSize); h != nil {
		return e.PrefixHit(req, h)
	}
	return e.PrefixHitTokens(req)
}

func (v view) TieredPrefixTokens(i int, req *workload.Request) float64 {
	e := v.s.engines[i]
	if h := v.s.ph.of(req, e.Config().BlockSize); h != nil {
		return e.TieredPrefixHit(req, h)
	}
	return e.TieredPrefixTokens(req)
}

func (v view) WaitingTokens(i int) int64 { return v.s.engines[i].WaitingTokens() }
