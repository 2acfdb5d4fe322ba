package cluster

import "slices"

// This file holds the fault model's configuration (what to inject and
// how requests on a lost instance are treated) and the counts it reports.

// LossPolicy is what happens to a request running or waiting on a lost
// instance.
type LossPolicy uint8

// Loss policies.
const (
	RetryOnLoss LossPolicy = iota // the router sends it again to a live instance
	FailOnLoss                    // it ends failed
)

// LoadFailurePolicy is vLLM's kv_load_failure_policy.
type LoadFailurePolicy uint8

// KV load failure policies.
const (
	RecomputeOnLoadFailure LoadFailurePolicy = iota // the decode instance computes the prompt itself
	FailOnLoadFailure                               // the request fails
)

// FaultUnit is what fails and restarts as one: the engines of one
// configured instance (its data-parallel ranks).
type FaultUnit struct {
	Name    string // "group[index]"
	Pool    string // the instance group
	Engines []int
	GPUs    int
	// MTBF is the mean time between its failures, ns (0: none).
	MTBF int64
	// Recovery is the time from a loss to the instance serving again, ns:
	// provisioning plus weight loading; < 0: it never comes back.
	Recovery int64
}

// ScheduledLoss is a loss of Unit at At, ns.
type ScheduledLoss struct {
	Unit int
	At   int64
}

// StragglerWindow makes Engine's steps Factor times slower over
// [Start, End), ns.
type StragglerWindow struct {
	Engine     int
	Start, End int64
	Factor     float64
}

// LinkWindow scales the KV NICs of Engines to Factor of their bandwidth
// over [Start, End), ns.
type LinkWindow struct {
	Engines    []int
	Start, End int64
	Factor     float64
}

// FaultConfig configures a run's faults.
type FaultConfig struct {
	Units      []FaultUnit
	Losses     []ScheduledLoss
	OnLoss     LossPolicy
	MaxRetries int
	Stragglers []StragglerWindow
	// TransferFailure is the probability one KV transfer fails to load.
	TransferFailure float64
	LoadFailure     LoadFailurePolicy
	Links           []LinkWindow
	// Seed seeds the per-unit failure streams and the transfer stream.
	Seed uint64
	// Autoscaler scales pools of units (autoscale.go); nil: none.
	Autoscaler *AutoscalerConfig
}

// FaultEvent is one change of an instance's state, for reports.
type FaultEvent struct {
	At   int64  // ns
	Unit string // "group[index]"
	Pool string
	Kind string // lost, restarted, straggler-start, straggler-end, link-degraded, link-restored
}

// FaultStats counts what the faults did over a run.
type FaultStats struct {
	Losses, Restarts int64
	// Requests sent again to a live instance (retry), handoffs moved to
	// another decode instance keeping their KV, and prompts recomputed
	// because their pinned KV was lost with its instance.
	Retried, Replaced, KVLost int64
	// Failed transfers and how they were handled.
	LoadFailures, LoadRecomputed int64
	// The autoscaler's decisions.
	ScaleUps, ScaleDowns int64
	// UnitNs is, per unit, the time it held its GPUs (alive or
	// restarting) over the run, ns; GPUHours the total in GPU-hours.
	GPUHours float64
	Events   []FaultEvent
}

// FaultStats returns what the faults did (nil without faults), with the
// GPU-hours the units held up to end (ns).
func (s *Sim) FaultStats(end int64) *FaultStats {
	if s.ft == nil {
		return nil
	}
	f := s.ft
	st := f.stats
	st.Events = slices.Clone(st.Events)
	gpuNs := 0.0
	for u, unit := range f.cfg.Units {
		held := f.billedNs[u]
		if f.billedFrom[u] >= 0 && end > f.billedFrom[u] {
			held += end - f.billedFrom[u]
		}
		gpuNs += float64(unit.GPUs) * float64(held)
	}
	st.GPUHours = gpuNs / 3600e9
	return &st
}
