package assemble

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/des"
	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/hw"
)

// engineRole is the engine's role of a group role.
func engineRole(r config.Role) (engine.Role, error) {
	switch r {
	case config.RolePrefill:
		return engine.Prefill, nil
	case config.RoleDecode:
		return engine.Decode, nil
	case config.RoleMixed:
		return engine.Mixed, nil
	}
	return 0, fmt.Errorf("unknown role %q", r)
}

// clusterPolicy is the cluster's handoff policy of a configured one.
func clusterPolicy(p config.HandoffPolicy) (cluster.PolicyName, error) {
	switch p {
	case config.PolicyPull:
		return cluster.Pull, nil
	case config.PolicyReserve:
		return cluster.Reserve, nil
	case config.PolicyReject:
		return cluster.Reject, nil
	case config.PolicyPush:
		return cluster.Push, nil
	case config.PolicyEager:
		return cluster.Eager, nil
	}
	return 0, fmt.Errorf("unknown handoff policy %q (valid: pull, reserve, reject, push, eager)", p)
}

// clusterPlacement is the cluster's decode placement of a configured one.
func clusterPlacement(p config.HandoffPlacement) (cluster.Placement, error) {
	switch p {
	case config.PlacementRoundRobin:
		return cluster.RoundRobinPlacement, nil
	case config.PlacementLeastLoaded:
		return cluster.LeastLoadedPlacement, nil
	case config.PlacementMostFreeKV:
		return cluster.MostFreeKVPlacement, nil
	case config.PlacementRetry:
		return cluster.RetryPlacement, nil
	}
	return 0, fmt.Errorf("unknown decode placement %q (valid: round-robin, least-loaded, most-free-kv, retry)", p)
}

// acc0HostBW is the host-to-device bandwidth of the first decode group's
// accelerator (for push spills).
func acc0HostBW(s *config.Scenario, cat *hw.Catalog) float64 {
	for _, g := range s.Instances {
		if g.Role == config.RoleDecode {
			if acc, err := cat.Lookup(g.Hardware); err == nil {
				return acc.Node.HostBandwidth
			}
		}
	}
	return 0
}

// pdConfig translates the scenario's handoff section.
func pdConfig(s *config.Scenario, pushBuf []int, hostBW float64) (*cluster.PDConfig, error) {
	h := s.Handoff
	pol, err := clusterPolicy(h.Policy)
	if err != nil {
		return nil, fmt.Errorf("handoff.policy: %w", err)
	}
	pl, err := clusterPlacement(h.Placement)
	if err != nil {
		return nil, fmt.Errorf("handoff.placement: %w", err)
	}
	return &cluster.PDConfig{
		Policy:              pol,
		Placement:           pl,
		SkipAhead:           h.SkipAhead,
		Lease:               int64(h.LeaseS * 1e9),
		OffloadPinnedAfter:  int64(math.Round(h.OffloadPinnedAfterS * 1e9)),
		OffloadPinnedMax:    int64(math.Round(h.OffloadPinnedMaxGB * 1e9)),
		Heartbeat:           *h.Heartbeat,
		ExpiryFails:         h.OnExpiry == config.ExpiryFail,
		RetryAfter:          int64(h.RetryAfterS * 1e9),
		MaxPrefillQueue:     int64(h.MaxPrefillQueueS * 1e9),
		MaxDecodeKVFraction: h.MaxDecodeKVFraction,
		PushBufferBlocks:    pushBuf,
		PushSpill:           h.PushOverflow == config.OverflowSpill,
		HostBandwidth:       hostBW,
		LocalPrefillBelow:   h.LocalPrefillBelow,
		MaxReprefills:       h.MaxReprefills,
	}, nil
}

// newRouter builds the scenario's arrival router; random choices come from
// the seed's "routing" stream.
func newRouter(s *config.Scenario) (cluster.Router, error) {
	switch s.Router {
	case config.RouterRoundRobin:
		return &cluster.RoundRobin{}, nil
	case config.RouterRandom:
		return cluster.Random{Rand: des.Stream(s.Seed, "routing")}, nil
	case config.RouterLeastLoaded:
		return cluster.LeastLoaded{}, nil
	case config.RouterLeastKV:
		return cluster.LeastKV{}, nil
	case config.RouterPrefixAffinity:
		return cluster.PrefixAffinity{}, nil
	case config.RouterKVAware:
		return cluster.KVAware{}, nil
	case config.RouterPowerOfTwo:
		return cluster.PowerOfTwo{Rand: des.Stream(s.Seed, "routing")}, nil
	}
	// Validate refuses it; a scenario built in code must not fall back
	// to round-robin silently.
	return nil, fmt.Errorf("router: unknown router %q (valid: %s)", s.Router, config.RouterNames())
}
