package config

import (
	"fmt"
	"slices"
)

// Predictor configures step-latency prediction.
type Predictor struct {
	// Kind is "profile" (default: tables measured on the accelerator for
	// the model, see profiles), "roofline" (any model on any catalog
	// accelerator, from FLOPs and bytes with calibrated efficiencies) or
	// "perfdb" (the roofline's ops timed from a per-op kernel database
	// measured on the accelerator, see path; docs/perfdb.md).
	Kind PredictorKind `yaml:"kind" json:"kind"`
	// Path is, for kind perfdb, the database's systems folder (the
	// layout of NVIDIA AIConfigurator's aic-core/.../systems), relative
	// to the scenario file. Empty: the copy embedded in servesim.
	Path string `yaml:"path,omitempty" json:"path,omitempty"`
	// System is, for kind perfdb, the database system to read (e.g.
	// h100_sxm). Empty: the accelerator catalog's perfdb_system of each
	// instance group's hardware.
	System string `yaml:"system,omitempty" json:"system,omitempty"`
	// Version is, for kind perfdb, the framework version whose tables
	// are read (empty: 0.19.0, the vLLM release servesim models); a table
	// not measured at it is read from the nearest measured version.
	Version string `yaml:"version,omitempty" json:"version,omitempty"`
	// MoEDistribution is, for kind perfdb, the token routing of the MoE
	// rows read (moe_perf's distribution: balanced, power_law_1.01,
	// power_law_1.2). Empty: balanced.
	MoEDistribution string `yaml:"moe_distribution,omitempty" json:"moe_distribution,omitempty"`
	// Calibration is a calibration YAML written by `servesim calibrate`
	// (relative to the scenario file); empty: the embedded calibration.
	// Accelerators it lacks use generic efficiencies.
	Calibration string `yaml:"calibration" json:"calibration"`
	// Profiles is the root of profile bundles laid out as
	// <hardware>/<org>/<model>/<dtype>/tp<N>/. Empty: the embedded bundle.
	Profiles string `yaml:"profiles" json:"profiles"`
	// StepOverheadUs is an extra fixed time per engine step, in
	// microseconds, added on top of the modelled engine time (kernel gaps,
	// CUDA-graph padding, host time; see docs/engine-time.md). Default 0:
	// for studies only.
	StepOverheadUs float64 `yaml:"step_overhead_us" json:"step_overhead_us"`
	// CollectiveScale multiplies the tensor-parallel collective time
	// (all-reduces and the logits all-gather) of every step, a collective
	// efficiency factor for tp > 1 (docs/calibration.md). Default 0: 1,
	// the modelled time.
	CollectiveScale float64 `yaml:"collective_scale,omitempty" json:"collective_scale,omitempty"`
	// FormatScaling lets the profile predictor run a weight or KV-cache
	// format its bundle was not measured with: "roofline-ratio" scales the
	// measured kernel time of every step by the roofline's time of that
	// step in the requested format over its time in the bundle's format
	// (an approximation; docs/quantization.md). Empty (default): refuse.
	FormatScaling FormatScaling `yaml:"format_scaling,omitempty" json:"format_scaling,omitempty"`
}

// Engine mirrors vLLM's engine arguments.
type Engine struct {
	// MaxNumSeqs is the most requests in one batch. Default 0: vLLM
	// 0.19's default for `vllm serve` on the group's accelerator (1024 on
	// devices of at least 70 GiB other than the A100, else 256; at most
	// max_num_batched_tokens; see docs/scenario.md).
	MaxNumSeqs int `yaml:"max_num_seqs" json:"max_num_seqs"`
	// MaxNumBatchedTokens is the token budget of one step. Default 0:
	// vLLM 0.19's default for `vllm serve` on the group's accelerator
	// (8192 on devices of at least 70 GiB other than the A100, else 2048;
	// at least max_model_len without chunked prefill).
	MaxNumBatchedTokens int `yaml:"max_num_batched_tokens" json:"max_num_batched_tokens"`
	// BlockSize is the number of tokens per KV block. Default 16.
	BlockSize int `yaml:"block_size" json:"block_size"`
	// GPUMemoryUtilization is the fraction of device memory the engine may
	// use for weights, activations and KV cache. Default 0.9.
	GPUMemoryUtilization float64 `yaml:"gpu_memory_utilization" json:"gpu_memory_utilization"`
	// ChunkedPrefill splits long prompts across steps. Default true.
	ChunkedPrefill *bool `yaml:"enable_chunked_prefill" json:"enable_chunked_prefill"`
	// PrefixCaching reuses cached KV blocks of identical prefixes. Default
	// true.
	PrefixCaching *bool `yaml:"enable_prefix_caching" json:"enable_prefix_caching"`
	// LongPrefillTokenThreshold caps one request's prompt chunk per step
	// (0: no cap). Default 0.
	LongPrefillTokenThreshold int `yaml:"long_prefill_token_threshold" json:"long_prefill_token_threshold"`
	// NumGPUBlocks overrides the KV capacity computed from memory (0:
	// compute it). Default 0.
	NumGPUBlocks int `yaml:"num_gpu_blocks" json:"num_gpu_blocks"`
	// MaxModelLen is the longest prompt+output accepted (0: the model's
	// max_position_embeddings).
	MaxModelLen int `yaml:"max_model_len" json:"max_model_len"`
	// AsyncScheduling forms each batch while the previous step runs, as
	// vLLM does by default: new requests and freed slots take effect one
	// step later. Default true.
	AsyncScheduling *bool `yaml:"async_scheduling" json:"async_scheduling"`
	// EnforceEager turns CUDA graphs off (vLLM enforce_eager). Default
	// false.
	EnforceEager *bool `yaml:"enforce_eager" json:"enforce_eager"`
	// CUDAGraphMode is vLLM's cudagraph_mode: full_and_piecewise
	// (default), piecewise, full, full_decode_only or none.
	CUDAGraphMode CUDAGraphMode `yaml:"cudagraph_mode" json:"cudagraph_mode"`
	// CUDAGraphCaptureSizes are the captured batch sizes in tokens
	// (default: vLLM 0.19's list up to min(2 x max_num_seqs, 512,
	// max_num_batched_tokens)).
	CUDAGraphCaptureSizes []int `yaml:"cudagraph_capture_sizes" json:"cudagraph_capture_sizes"`
	// DisableCustomAllReduce makes tensor-parallel all-reduces use NCCL
	// only (vLLM disable_custom_all_reduce). Default false.
	DisableCustomAllReduce *bool `yaml:"disable_custom_all_reduce" json:"disable_custom_all_reduce"`
	// Speculative turns on speculative decoding (vLLM speculative_config;
	// see docs/speculative.md). Default nil: off. A group's engine block
	// replaces the scenario's as a whole.
	Speculative *Speculative `yaml:"speculative" json:"speculative,omitempty"`
	// PreemptionMode is how a preempted request gives up its KV:
	// recompute (default; vLLM v1's only mode) or swap, the legacy vLLM
	// v0 mode that copies its KV blocks to host memory and back over the
	// GPU's PCIe link (needs kv_tiers; docs/kv-tiers.md).
	PreemptionMode PreemptionMode `yaml:"preemption_mode,omitempty" json:"preemption_mode,omitempty"`
	// SwapSpace is the host memory per GPU for swapped-out KV, GiB (vLLM
	// v0's swap_space). Default 0: 4 GiB with preemption_mode swap.
	SwapSpace float64 `yaml:"swap_space,omitempty" json:"swap_space,omitempty"`
	// SchedulingPolicy is vLLM's scheduling_policy: fcfs (default: the
	// waiting queue in arrival order; a request short of KV preempts the
	// last admitted) or priority (waiting requests by the request
	// priority, smaller first, then arrival; a request short of KV
	// preempts the running request with the largest priority value;
	// docs/scenario.md).
	SchedulingPolicy SchedulingPolicy `yaml:"scheduling_policy,omitempty" json:"scheduling_policy,omitempty"`
	// DisableHybridKVCacheManager is vLLM's
	// disable_hybrid_kv_cache_manager for models mixing full attention
	// with sliding-window or chunked-local layers: true sizes and keeps
	// the KV of every layer as full attention. Default nil: vLLM 0.19's
	// choice, true with a KV connector (a P/D scenario or kv_tiers), false
	// otherwise (docs/attention.md).
	DisableHybridKVCacheManager *bool `yaml:"disable_hybrid_kv_cache_manager,omitempty" json:"disable_hybrid_kv_cache_manager,omitempty"`
}

// Speculative is vLLM v1's speculative decoding: every decoding sequence
// proposes NumSpeculativeTokens tokens per step and the target model
// verifies them in the same step.
type Speculative struct {
	// Method is draft_model, eagle, eagle3, mtp or ngram.
	Method SpecMethod `yaml:"method" json:"method"`
	// NumSpeculativeTokens is k, the proposals per sequence and step (1..16).
	NumSpeculativeTokens int `yaml:"num_speculative_tokens" json:"num_speculative_tokens"`
	// AcceptanceRate is the i.i.d. conditional acceptance probability α of
	// each proposal given the ones before it were accepted, in [0, 1).
	AcceptanceRate *float64 `yaml:"acceptance_rate,omitempty" json:"acceptance_rate,omitempty"`
	// AcceptancePerPosition is vLLM's per-position acceptance rate a1..ak
	// (unconditional: the fraction of drafts whose proposal i was
	// accepted), non-increasing, each in [0, 1], k entries.
	AcceptancePerPosition []float64 `yaml:"acceptance_per_position,omitempty" json:"acceptance_per_position,omitempty"`
	// Acceptance "trace" takes each request's α from the workload trace's
	// spec_acceptance_rate field.
	Acceptance SpecAcceptance `yaml:"acceptance,omitempty" json:"acceptance,omitempty"`
	// DraftModel is the catalog model that drafts (method draft_model).
	DraftModel string `yaml:"draft_model,omitempty" json:"draft_model,omitempty"`
}

// MaxSpecTokens bounds engine.speculative.num_speculative_tokens.
const MaxSpecTokens = 16

func (sp *Speculative) validate(path string, bad func(field, format string, args ...any)) {
	if !slices.Contains(SpecMethods, sp.Method) {
		bad(path+".method", "must be draft_model, eagle, eagle3, mtp or ngram (got %q)", sp.Method)
	}
	k := sp.NumSpeculativeTokens
	if k < 1 || k > MaxSpecTokens {
		bad(path+".num_speculative_tokens", "must be in [1, %d] (got %d); it is the number of tokens proposed per sequence and step", MaxSpecTokens, k)
	}
	n := countSet(sp.AcceptanceRate != nil, sp.AcceptancePerPosition != nil, sp.Acceptance != "")
	_, _, hasDefault := DefaultAcceptance(sp.Method, min(max(k, 1), MaxSpecTokens))
	switch {
	case n > 1:
		bad(path, "set at most one of acceptance_rate (i.i.d. conditional α), acceptance_per_position (vLLM's per-position rates) or acceptance: trace (got %d)", n)
	case n == 0 && !hasDefault && slices.Contains(SpecMethods, sp.Method):
		bad(path, "method %s has no default acceptance (it depends on the draft/target pair): set acceptance_rate (i.i.d. conditional α), acceptance_per_position (vLLM's per-position rates, from its spec-decode metrics) or acceptance: trace", sp.Method)
	}
	if a := sp.AcceptanceRate; a != nil && !(*a >= 0 && *a < 1) {
		bad(path+".acceptance_rate", "must be in [0, 1) (got %g); it is the probability of accepting a proposal given the previous ones were", *a)
	}
	if v := sp.AcceptancePerPosition; v != nil {
		if k >= 1 && len(v) != k {
			bad(path+".acceptance_per_position", "needs one rate per proposed token: %d entries for num_speculative_tokens %d (got %d)", k, k, len(v))
		}
		for i, a := range v {
			if !(a >= 0 && a <= 1) {
				bad(fmt.Sprintf("%s.acceptance_per_position[%d]", path, i), "must be in [0, 1] (got %g)", a)
			} else if i > 0 && a > v[i-1] {
				bad(fmt.Sprintf("%s.acceptance_per_position[%d]", path, i), "must not exceed the previous rate %g (got %g): the rates are unconditional, so position i+1 is accepted only if position i was", v[i-1], a)
			}
		}
	}
	if sp.Acceptance != "" && sp.Acceptance != AcceptanceTrace {
		bad(path+".acceptance", "must be trace (per-request rates from the trace's spec_acceptance_rate) or unset (got %q)", sp.Acceptance)
	}
	switch {
	case sp.Method == SpecDraftModel && sp.DraftModel == "":
		bad(path+".draft_model", "method draft_model needs the drafting model's name, a model with the target's vocabulary from servesim catalog or the models folder, e.g. draft_model: meta-llama/Llama-3.1-8B")
	case sp.Method != SpecDraftModel && sp.DraftModel != "":
		bad(path+".draft_model", "is only used with method draft_model (got method %q); remove it", sp.Method)
	}
}

// validate checks engine fields; zero means "inherit" in group overrides,
// so only negative or out-of-range values are errors here, and the
// top-level engine is checked after defaulting.
func (e *Engine) validate(path string, bad func(field, format string, args ...any)) {
	neg := func(name string, v int) {
		if v < 0 {
			bad(path+"."+name, "must be > 0 (got %d)", v)
		}
	}
	neg("max_num_seqs", e.MaxNumSeqs)
	neg("max_num_batched_tokens", e.MaxNumBatchedTokens)
	neg("block_size", e.BlockSize)
	neg("long_prefill_token_threshold", e.LongPrefillTokenThreshold)
	neg("num_gpu_blocks", e.NumGPUBlocks)
	neg("max_model_len", e.MaxModelLen)
	if u := e.GPUMemoryUtilization; u < 0 || u > 1 {
		bad(path+".gpu_memory_utilization", "must be in (0, 1] (got %g)", u)
	}
	if e.CUDAGraphMode != "" && !slices.Contains(CUDAGraphModes, e.CUDAGraphMode) {
		bad(path+".cudagraph_mode", "must be full_and_piecewise, piecewise, full, full_decode_only or none (got %q)", e.CUDAGraphMode)
	}
	for i, v := range e.CUDAGraphCaptureSizes {
		if v <= 0 {
			bad(fmt.Sprintf("%s.cudagraph_capture_sizes[%d]", path, i), "must be > 0 (got %d)", v)
		}
	}
	if e.Speculative != nil {
		e.Speculative.validate(path+".speculative", bad)
	}
	e.validatePreemption(path, bad)
	switch e.SchedulingPolicy {
	case "", SchedFCFS, SchedPriority:
	default:
		bad(path+".scheduling_policy", "must be %s (the default: arrival order) or %s (by request priority, smaller first) (got %q)", SchedFCFS, SchedPriority, e.SchedulingPolicy)
	}
}

// UsesPriorities reports whether request priorities matter to the run:
// an instance group schedules by priority or the workload draws
// priorities (workload.priorities). A trace's priority fields alone do
// not count.
func (s *Scenario) UsesPriorities() bool {
	if len(s.Workload.Priorities) > 0 {
		return true
	}
	for i := range s.Instances {
		if s.Instances[i].Merged(s.Engine).PriorityScheduling() {
			return true
		}
	}
	return false
}

// PriorityScheduling reports whether the engine orders its waiting queue
// by request priority.
func (e Engine) PriorityScheduling() bool { return e.SchedulingPolicy == SchedPriority }
