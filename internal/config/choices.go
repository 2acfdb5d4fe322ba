package config

import "fmt"

// The scenario's choices: every field whose value is one name of a fixed
// set has a type of its own, with one constant per name. Validate checks
// the value against the constants once; the rest of the simulator
// compares the typed constants only, never the names (test/arch enforces
// that). The names are the ones a scenario file uses.

// Router is the arrival router (router).
type Router string

// Routers (see Scenario.Router).
const (
	RouterRoundRobin     Router = "round-robin"
	RouterRandom         Router = "random"
	RouterLeastLoaded    Router = "least-loaded"
	RouterLeastKV        Router = "least-kv"
	RouterPrefixAffinity Router = "prefix-affinity"
	RouterKVAware        Router = "kv-aware"
	RouterPowerOfTwo     Router = "power-of-two"
)

// Routers are the valid values of Scenario.Router, the one list that
// validation, the assembly and the random scenarios use.
var Routers = []Router{RouterRoundRobin, RouterRandom, RouterLeastLoaded, RouterLeastKV, RouterPrefixAffinity, RouterKVAware, RouterPowerOfTwo}

// Role is what an instance group serves (instances[].role).
type Role string

// Roles.
const (
	RoleMixed   Role = "mixed"
	RolePrefill Role = "prefill"
	RoleDecode  Role = "decode"
)

// HandoffPolicy is the prefill -> decode handoff protocol
// (handoff.policy).
type HandoffPolicy string

// Handoff policies (docs/handoff.md).
const (
	PolicyPull    HandoffPolicy = "pull"
	PolicyReserve HandoffPolicy = "reserve"
	PolicyReject  HandoffPolicy = "reject"
	PolicyPush    HandoffPolicy = "push"
	PolicyEager   HandoffPolicy = "eager"
)

// HandoffPlacement picks the decode instance of a handoff
// (handoff.placement).
type HandoffPlacement string

// Decode placements.
const (
	PlacementRoundRobin  HandoffPlacement = "round-robin"
	PlacementLeastLoaded HandoffPlacement = "least-loaded"
	PlacementMostFreeKV  HandoffPlacement = "most-free-kv"
	PlacementRetry       HandoffPlacement = "retry"
)

// ExpiryAction is what happens to a request whose pinned KV outlives its
// lease (handoff.on_expiry).
type ExpiryAction string

// Expiry actions.
const (
	ExpiryReprefill ExpiryAction = "reprefill"
	ExpiryFail      ExpiryAction = "fail"
)

// PushOverflow is where push-policy KV goes when the decode instance's
// receive buffer is full (handoff.push_overflow).
type PushOverflow string

// Push overflow actions.
const (
	OverflowSpill PushOverflow = "spill"
	OverflowDrop  PushOverflow = "drop"
)

// PredictorKind is how step latency is computed (predictor.kind).
type PredictorKind string

// Predictor kinds.
const (
	PredictorProfile  PredictorKind = "profile"
	PredictorRoofline PredictorKind = "roofline"
	PredictorPerfDB   PredictorKind = "perfdb"
)

// FormatScaling is how the profile predictor runs a format its bundle was
// not measured with (predictor.format_scaling; empty: refuse).
type FormatScaling string

// FormatScalingRooflineRatio is the predictor.format_scaling value that
// scales profile tables to another weight or KV-cache format.
const FormatScalingRooflineRatio FormatScaling = "roofline-ratio"

// CUDAGraphMode is vLLM's cudagraph_mode (engine.cudagraph_mode; empty:
// inherit, or the default full_and_piecewise).
type CUDAGraphMode string

// CUDA graph modes, vLLM's names.
const (
	GraphFullAndPiecewise CUDAGraphMode = "full_and_piecewise"
	GraphPiecewise        CUDAGraphMode = "piecewise"
	GraphFull             CUDAGraphMode = "full"
	GraphFullDecodeOnly   CUDAGraphMode = "full_decode_only"
	GraphNone             CUDAGraphMode = "none"
)

// CUDAGraphModes are the valid engine.cudagraph_mode values.
var CUDAGraphModes = []CUDAGraphMode{GraphFullAndPiecewise, GraphPiecewise, GraphFull, GraphFullDecodeOnly, GraphNone}

// PreemptionMode is how a preempted request gives up its KV
// (engine.preemption_mode; empty: inherit, or recompute).
type PreemptionMode string

// Preemption modes.
const (
	// PreemptRecompute discards a preempted request's KV and recomputes
	// it (vLLM v1's only mode; the default).
	PreemptRecompute PreemptionMode = "recompute"
	// PreemptSwap copies a preempted request's KV to host swap space and
	// back (vLLM v0's legacy swap mode).
	PreemptSwap PreemptionMode = "swap"
)

// SpecMethod is the speculative proposer (engine.speculative.method).
type SpecMethod string

// Speculative methods, vLLM's names.
const (
	SpecDraftModel SpecMethod = "draft_model"
	SpecEagle      SpecMethod = "eagle"
	SpecEagle3     SpecMethod = "eagle3"
	SpecMTP        SpecMethod = "mtp"
	SpecNgram      SpecMethod = "ngram"
)

// SpecMethods are the valid engine.speculative.method values.
var SpecMethods = []SpecMethod{SpecDraftModel, SpecEagle, SpecEagle3, SpecMTP, SpecNgram}

// SpecAcceptance is where per-request acceptance rates come from
// (engine.speculative.acceptance; empty: the block's own rates).
type SpecAcceptance string

// AcceptanceTrace takes each request's rate from the workload trace.
const AcceptanceTrace SpecAcceptance = "trace"

// DPBalance is how an instance's requests reach its data-parallel ranks
// (instances[].dp_balance; empty: vllm).
type DPBalance string

// Data-parallel balancers.
const (
	DPBalanceVLLM   DPBalance = "vllm"
	DPBalanceRouter DPBalance = "router"
)

// DPBalanceTies is how vLLM's balancer breaks ties
// (instances[].dp_balance_ties; empty: lowest).
type DPBalanceTies string

// Tie rules.
const (
	TiesLowest DPBalanceTies = "lowest"
	TiesSeeded DPBalanceTies = "seeded"
)

// MoERouting is the distribution of routed tokens over the experts
// (moe.routing; empty: uniform).
type MoERouting string

// MoE routings.
const (
	RoutingUniform   MoERouting = "uniform"
	RoutingZipf      MoERouting = "zipf"
	RoutingHistogram MoERouting = "histogram"
)

// LoadPolicy decides whether lower-tier KV hits are loaded
// (kv_tiers.load_policy; empty: always).
type LoadPolicy string

// Load policies.
const (
	LoadPolicyAlways    LoadPolicy = "always"
	LoadPolicyCostBased LoadPolicy = "cost_based"
)

// TraceFormat is the format of a workload trace file (workload.format).
type TraceFormat string

// Trace formats.
const (
	TraceJSONL        TraceFormat = "jsonl"
	TraceVLLMRequests TraceFormat = "vllm-requests"
)

// SLOMetric is the latency a percentile target bounds
// (slo.percentiles[].metric).
type SLOMetric string

// SLO metrics.
const (
	MetricTTFT SLOMetric = "ttft"
	MetricTPOT SLOMetric = "tpot"
	MetricITL  SLOMetric = "itl"
	MetricE2E  SLOMetric = "e2e"
)

// joinNames joins choice names with sep.
func joinNames[T ~string](names []T, sep string) string {
	var b []byte
	for i, n := range names {
		if i > 0 {
			b = append(b, sep...)
		}
		b = append(b, n...)
	}
	return string(b)
}

// RouterNames lists the valid routers, comma-separated.
func RouterNames() string { return joinNames(Routers, ", ") }

// HandoffPolicies are the valid handoff.policy values.
var HandoffPolicies = []HandoffPolicy{PolicyPull, PolicyReserve, PolicyReject, PolicyPush, PolicyEager}

// ParseHandoffPolicy returns the handoff policy of a name (a command
// line's).
func ParseHandoffPolicy(s string) (HandoffPolicy, error) {
	for _, p := range HandoffPolicies {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown handoff policy %q (valid: %s)", s, joinNames(HandoffPolicies, ", "))
}
