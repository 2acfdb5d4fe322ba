package cluster

import "fmt"

// PolicyName names a prefill -> decode handoff protocol in a PDConfig.
type PolicyName uint8

// Handoff policies (see docs/handoff.md). Each is implemented by a Policy
// in its own file.
const (
	// Pull keeps the KV pinned on the prefill instance while the request
	// waits in the decode instance's admission queue; the decode side
	// reserves blocks and a slot, pulls the KV, and the prefill side frees
	// it when the transfer ends.
	Pull PolicyName = iota
	// Reserve has the decode instance reserve blocks (plus headroom) before
	// the prefill starts; the KV streams to it while the prefill runs, at
	// most as fast as the prefill produces it.
	Reserve
	// Reject is Pull with admission control at arrival: a request is
	// rejected when the predicted prefill queueing time or the decode KV
	// demand exceeds its threshold.
	Reject
	// Push sends the KV at prefill end into a bounded receive buffer on the
	// decode instance; overflow spills to the decode host's memory (copied
	// back over PCIe at admission) or is dropped and re-prefilled.
	Push
	// Eager allocates on the decode instance at prefill end, the legacy
	// behaviour; when the blocks are not free, the run stops with a report.
	Eager
)

// Policies lists the policy names in order.
var Policies = []string{"pull", "reserve", "reject", "push", "eager"}

// ParsePolicy returns the policy of a name.
func ParsePolicy(s string) (PolicyName, error) {
	for i, n := range Policies {
		if n == s {
			return PolicyName(i), nil
		}
	}
	return 0, fmt.Errorf("unknown handoff policy %q (valid: pull, reserve, reject, push, eager)", s)
}

// String returns the policy's name.
func (p PolicyName) String() string {
	if int(p) < len(Policies) {
		return Policies[p]
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// Policy is one handoff protocol. The coordinator calls it at the two
// points where protocols differ; everything else (placement, admission
// queues, transfers, leases, retries) is shared.
type Policy interface {
	// start begins the handoff of a request that will be handed off (state
	// new, prefill instance h.p chosen).
	start(s *Sim, h *hand, now int64) error
	// prefilled continues it once its prompt is computed on h.p.
	prefilled(s *Sim, h *hand, now int64) error
}

// admitter is the optional ability of a policy to refuse a request at
// arrival; it returns the reason, or "" to admit.
type admitter interface {
	admission(s *Sim, h *hand, now int64) string
}

// setupper is the optional ability of a policy to prepare per-instance
// state of its own when P/D mode is enabled on n instances.
type setupper interface {
	setup(p *pd, n int) error
}

// newPolicy returns the implementation of a policy name.
func newPolicy(n PolicyName) (Policy, error) {
	switch n {
	case Pull:
		return pullPolicy{}, nil
	case Reserve:
		return reservePolicy{}, nil
	case Reject:
		return rejectPolicy{}, nil
	case Push:
		return pushPolicy{}, nil
	case Eager:
		return eagerPolicy{}, nil
	}
	return nil, fmt.Errorf("cluster: unknown handoff policy %d", n)
}
