package config

// Handoff configures the prefill -> decode KV handoff.
type Handoff struct {
	// Policy is pull (default), reserve, reject, push or eager.
	Policy HandoffPolicy `yaml:"policy" json:"policy"`
	// Placement picks the decode instance: round-robin (default),
	// least-loaded, most-free-kv or retry.
	Placement HandoffPlacement `yaml:"placement" json:"placement"`
	// SkipAhead lets a decode instance admit later requests past a head
	// request that does not fit (default false: FCFS, head-of-line).
	SkipAhead bool `yaml:"skip_ahead" json:"skip_ahead"`
	// LeaseS is how long pinned KV may wait on the prefill instance, in
	// seconds. Default 30 (vLLM's default).
	LeaseS float64 `yaml:"lease_s" json:"lease_s"`
	// Heartbeat renews the lease while the request is queued at a live
	// decode instance. Default true.
	Heartbeat *bool `yaml:"heartbeat" json:"heartbeat"`
	// OnExpiry is reprefill (default) or fail.
	OnExpiry ExpiryAction `yaml:"on_expiry" json:"on_expiry"`
	// RetryAfterS is, for placement retry, the wait in one decode queue
	// before moving to another decode instance, seconds. Default 1.
	RetryAfterS float64 `yaml:"retry_after_s" json:"retry_after_s"`
	// ReservedDecodeTokens is headroom reserved on the decode instance
	// beyond the prompt at admission. Default 0 (vLLM relies on
	// preemption).
	ReservedDecodeTokens int `yaml:"reserved_decode_tokens" json:"reserved_decode_tokens"`
	// MaxPrefillQueueS (reject) rejects a request when the predicted
	// prefill queueing time exceeds it, seconds. Default 5; 0 disables.
	MaxPrefillQueueS float64 `yaml:"max_prefill_queue_s" json:"max_prefill_queue_s"`
	// MaxDecodeKVFraction (reject) rejects a request when the decode KV
	// demand (used, plus queued and in-prefill prompts, plus this one)
	// exceeds this fraction of the decode pools. Default 1; 0 disables.
	MaxDecodeKVFraction float64 `yaml:"max_decode_kv_fraction" json:"max_decode_kv_fraction"`
	// PushBufferFraction (push) is the share of each decode instance's KV
	// capacity set aside as the receive buffer. Default 0.1.
	PushBufferFraction float64 `yaml:"push_buffer_fraction" json:"push_buffer_fraction"`
	// PushOverflow (push) is spill (default: to the decode host's memory,
	// copied back over PCIe at admission) or drop (re-prefill).
	PushOverflow PushOverflow `yaml:"push_overflow" json:"push_overflow"`
	// LocalPrefillBelow enables conditional disaggregation: prompts whose
	// part not already cached on the chosen decode instance is shorter
	// than this many tokens are prefilled there, with no handoff. Default
	// 0: always disaggregate.
	LocalPrefillBelow int `yaml:"local_prefill_below" json:"local_prefill_below"`
	// MaxReprefills bounds how many times a request's prompt is recomputed
	// after its prefilled KV was lost (lease expiry with on_expiry
	// reprefill, push overflow drop); the next loss fails the request with
	// the reason. Default 3; 0 fails at the first loss.
	MaxReprefills int `yaml:"max_reprefills" json:"max_reprefills"`
	// OffloadPinnedAfterS (pull, with kv_tiers) moves KV pinned on a
	// prefill instance to its node's host memory once it has waited this
	// long for a decode admission, freeing the GPU blocks; 0: never
	// (docs/kv-tiers.md).
	OffloadPinnedAfterS float64 `yaml:"offload_pinned_after_s,omitempty" json:"offload_pinned_after_s,omitempty"`
	// OffloadPinnedMaxGB bounds the handoff KV offloaded to one node's
	// host memory at once, GB; an offload that does not fit waits for
	// room with its KV pinned. 0 (default): unbounded.
	OffloadPinnedMaxGB float64 `yaml:"offload_pinned_max_gb,omitempty" json:"offload_pinned_max_gb,omitempty"`
}

// Links overrides the NIC of every GPU for KV transfers.
type Links struct {
	// BandwidthGBps is the NIC bandwidth per direction, GB/s (0: the
	// accelerator's catalog NIC).
	BandwidthGBps float64 `yaml:"bandwidth_gbps" json:"bandwidth_gbps"`
	// LatencyUs is the NIC latency, microseconds (negative: catalog).
	LatencyUs float64 `yaml:"latency_us" json:"latency_us"`
	// ZeroCost makes transfers instantaneous (for studies that isolate
	// memory effects).
	ZeroCost bool `yaml:"zero_cost" json:"zero_cost"`
	// TPBandwidthGBps and TPLatencyUs override the link between the GPUs
	// of one instance, used by tensor-parallel all-reduces (0 / negative:
	// the accelerator's catalog link).
	TPBandwidthGBps float64 `yaml:"tp_bandwidth_gbps" json:"tp_bandwidth_gbps"`
	TPLatencyUs     float64 `yaml:"tp_latency_us" json:"tp_latency_us"`
}

func (s *Scenario) validateHandoff(bad func(field, format string, args ...any)) {
	h := &s.Handoff
	switch h.Policy {
	case PolicyPull, PolicyReserve, PolicyReject, PolicyPush, PolicyEager:
	default:
		bad("handoff.policy", "must be pull, reserve, reject, push or eager (got %q)", h.Policy)
	}
	switch h.Placement {
	case PlacementRoundRobin, PlacementLeastLoaded, PlacementMostFreeKV, PlacementRetry:
	default:
		bad("handoff.placement", "must be round-robin, least-loaded, most-free-kv or retry (got %q)", h.Placement)
	}
	if h.OnExpiry != ExpiryReprefill && h.OnExpiry != ExpiryFail {
		bad("handoff.on_expiry", "must be reprefill or fail (got %q)", h.OnExpiry)
	}
	if h.PushOverflow != OverflowSpill && h.PushOverflow != OverflowDrop {
		bad("handoff.push_overflow", "must be spill or drop (got %q)", h.PushOverflow)
	}
	if h.LocalPrefillBelow < 0 {
		bad("handoff.local_prefill_below", "must be >= 0 (got %d)", h.LocalPrefillBelow)
	}
	if h.MaxReprefills < 0 {
		bad("handoff.max_reprefills", "must be >= 0 (got %d)", h.MaxReprefills)
	}
	if h.ReservedDecodeTokens < 0 {
		bad("handoff.reserved_decode_tokens", "must be >= 0 (got %d)", h.ReservedDecodeTokens)
	}
	if !(h.OffloadPinnedAfterS >= 0) || h.OffloadPinnedAfterS > MaxDurationS {
		bad("handoff.offload_pinned_after_s", "must be a finite number in [0, %g] seconds (got %g)", float64(MaxDurationS), h.OffloadPinnedAfterS)
	} else if h.OffloadPinnedAfterS > 0 && (h.Policy != PolicyPull || s.KVTiers == nil) {
		bad("handoff.offload_pinned_after_s", "needs handoff.policy pull and a kv_tiers section (the host tier receives the KV); got policy %s, kv_tiers set: %t", h.Policy, s.KVTiers != nil)
	}
	if !(h.OffloadPinnedMaxGB >= 0) || h.OffloadPinnedMaxGB > maxPlausibleTierCapacity {
		bad("handoff.offload_pinned_max_gb", "must be in (0, %g] GB per node, or 0 for unbounded (got %g)", float64(maxPlausibleTierCapacity), h.OffloadPinnedMaxGB)
	} else if h.OffloadPinnedMaxGB > 0 && h.OffloadPinnedAfterS == 0 {
		bad("handoff.offload_pinned_max_gb", "bounds offloaded handoff KV: set handoff.offload_pinned_after_s too, or remove it")
	}
	if s.PD() {
		var p, d bool
		for _, g := range s.Instances {
			p = p || g.Role == RolePrefill || g.Role == RoleMixed
			d = d || g.Role == RoleDecode
		}
		if !p || !d {
			bad("instances", "a disaggregated cluster needs at least one prefill (or mixed) and one decode group")
		}
		s.validatePDSpec(bad)
	}
}
