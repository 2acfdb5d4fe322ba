package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/servesim/servesim/internal/quant"
	"github.com/servesim/servesim/internal/workload"
)

// Scenario is a complete simulation: the cluster, the model, the latency
// predictor and the workload. Every field has a default (see Defaults), so
// an empty file is a valid scenario: the embedded default run.
type Scenario struct {
	// Name labels outputs. Default "default".
	Name string `yaml:"name" json:"name"`
	// Seed drives every random stream (synthetic workloads, random
	// routing); > 0. Default 42.
	Seed uint64 `yaml:"seed" json:"seed"`
	// Model is the HuggingFace model id, "org/name". Default
	// "meta-llama/Llama-3.1-8B".
	Model string `yaml:"model" json:"model"`
	// Models is a directory of extra HuggingFace configs laid out as
	// <org>/<name>.json, searched before the embedded ones (relative to
	// the scenario file). Default: none.
	Models string `yaml:"models" json:"models"`
	// Hardware is the accelerator name in the hardware catalog. Default
	// "RTXPRO6000".
	Hardware string `yaml:"hardware" json:"hardware"`
	// Dtype of weights and KV cache: bf16 (default) or fp16.
	Dtype string `yaml:"dtype" json:"dtype"`
	// Quantization is the weight quantization method, with vLLM's names:
	// fp8 (W8A8, per-tensor or block-wise), awq or gptq (integer
	// weight-only), modelopt_fp4 (NVFP4, Blackwell only). Empty (default):
	// unquantised. See docs/quantization.md.
	Quantization string `yaml:"quantization,omitempty" json:"quantization,omitempty"`
	// QuantizationConfig holds the checkpoint's quantization parameters,
	// with the names of its config.json quantization_config (optional).
	QuantizationConfig *QuantizationConfig `yaml:"quantization_config,omitempty" json:"quantization_config,omitempty"`
	// KVCacheDtype is the KV-cache element type (vLLM kv_cache_dtype):
	// auto (default: dtype), fp8 (= fp8_e4m3), fp8_e4m3 or fp8_e5m2.
	KVCacheDtype string `yaml:"kv_cache_dtype,omitempty" json:"kv_cache_dtype,omitempty"`
	// Predictor chooses how step latency is computed.
	Predictor Predictor `yaml:"predictor" json:"predictor"`
	// Engine holds the engine settings shared by all instances.
	Engine Engine `yaml:"engine" json:"engine"`
	// Instances lists the instance groups. Default: one mixed instance.
	Instances []Group `yaml:"instances" json:"instances"`
	// Router places arriving requests on (prefill-capable) instances:
	// round-robin (default), random, least-loaded, least-kv (most free KV
	// blocks), prefix-affinity (longest cached prefix of the prompt, then
	// least loaded), kv-aware (fewest prompt tokens to compute before this
	// request, docs/kv-tiers.md) or power-of-two (the less loaded of two
	// random picks).
	Router string `yaml:"router" json:"router"`
	// Handoff configures prefill/decode disaggregation; it applies when
	// some instance group has role prefill or decode.
	Handoff Handoff `yaml:"handoff" json:"handoff"`
	// Links overrides the KV-transfer NICs of every GPU.
	Links Links `yaml:"links" json:"links"`
	// Workload is what the cluster serves.
	Workload Workload `yaml:"workload" json:"workload"`
	// SLO sets latency targets for attainment and goodput.
	SLO SLO `yaml:"slo" json:"slo"`
	// Limits bound the run deterministically (see docs/limits.md).
	Limits Limits `yaml:"limits" json:"limits"`
	// MoE sets how routed tokens spread over the experts of a
	// mixture-of-experts model under expert parallelism (docs/moe.md).
	MoE *MoE `yaml:"moe,omitempty" json:"moe,omitempty"`
	// KVTiers adds host-DRAM and local-disk KV tiers below the GPUs
	// (docs/kv-tiers.md); absent: GPU only.
	KVTiers *KVTiers `yaml:"kv_tiers,omitempty" json:"kv_tiers,omitempty"`
	// CheckInvariants verifies KV-block conservation and scheduler limits
	// after every step (slower; on in tests).
	CheckInvariants bool `yaml:"check_invariants" json:"check_invariants"`
}

// QuantizationConfig is the part of a checkpoint's quantization_config
// that changes the weights' size. Zero fields take the method's defaults.
type QuantizationConfig struct {
	// WeightBlockSize is fp8's scale block [rows, cols], e.g. [128, 128]
	// (DeepSeek-V3); empty: per-tensor scales.
	WeightBlockSize []int `yaml:"weight_block_size" json:"weight_block_size,omitempty"`
	// Bits is the integer width of awq (4) or gptq (4 or 8). Default 4.
	Bits int `yaml:"bits" json:"bits,omitempty"`
	// GroupSize is the number of input channels sharing a scale for awq
	// and gptq (gptq: -1 for one per output channel). Default 128.
	GroupSize int `yaml:"group_size" json:"group_size,omitempty"`
}

// Format returns the validated weight and KV-cache formats of the
// scenario (see package quant).
func (s *Scenario) Format() (quant.Format, error) {
	spec := quant.Spec{Dtype: s.Dtype, Quantization: s.Quantization, KVCacheDtype: s.KVCacheDtype}
	if q := s.QuantizationConfig; q != nil {
		spec.WeightBlockSize, spec.Bits, spec.GroupSize = q.WeightBlockSize, q.Bits, q.GroupSize
	}
	return quant.Parse(spec)
}

// Limits bound a run. At a limit the run ends with its summary: requests
// in flight fail with reason "limit", requests that never arrived are
// counted as truncated.
type Limits struct {
	// MaxSimTimeS stops the run at this simulated time, seconds (0: no
	// bound).
	MaxSimTimeS float64 `yaml:"max_sim_time_s" json:"max_sim_time_s"`
	// MaxEvents stops the run after this many simulation events (0: the
	// automatic budget of 1,000,000 plus 64 per prompt and output token
	// of the requests seen so far, which no run that makes progress
	// reaches).
	MaxEvents int64 `yaml:"max_events" json:"max_events"`
}

// Predictor configures step-latency prediction.
type Predictor struct {
	// Kind is "profile" (default: tables measured on the accelerator for
	// the model, see profiles) or "roofline" (any model on any catalog
	// accelerator, from FLOPs and bytes with calibrated efficiencies).
	Kind string `yaml:"kind" json:"kind"`
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
	FormatScaling string `yaml:"format_scaling,omitempty" json:"format_scaling,omitempty"`
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
	CUDAGraphMode string `yaml:"cudagraph_mode" json:"cudagraph_mode"`
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
}

// Speculative is vLLM v1's speculative decoding: every decoding sequence
// proposes NumSpeculativeTokens tokens per step and the target model
// verifies them in the same step.
type Speculative struct {
	// Method is draft_model, eagle, mtp or ngram.
	Method string `yaml:"method" json:"method"`
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
	Acceptance string `yaml:"acceptance,omitempty" json:"acceptance,omitempty"`
	// DraftModel is the catalog model that drafts (method draft_model).
	DraftModel string `yaml:"draft_model,omitempty" json:"draft_model,omitempty"`
}

// SpecMethods are the valid engine.speculative.method values, vLLM's names.
var SpecMethods = []string{"draft_model", "eagle", "mtp", "ngram"}

// MaxSpecTokens bounds engine.speculative.num_speculative_tokens.
const MaxSpecTokens = 16

func (sp *Speculative) validate(path string, bad func(field, format string, args ...any)) {
	if !slices.Contains(SpecMethods, sp.Method) {
		bad(path+".method", "must be draft_model, eagle, mtp or ngram (got %q)", sp.Method)
	}
	k := sp.NumSpeculativeTokens
	if k < 1 || k > MaxSpecTokens {
		bad(path+".num_speculative_tokens", "must be in [1, %d] (got %d); it is the number of tokens proposed per sequence and step", MaxSpecTokens, k)
	}
	n := countSet(sp.AcceptanceRate != nil, sp.AcceptancePerPosition != nil, sp.Acceptance != "")
	if n != 1 {
		bad(path, "set exactly one of acceptance_rate (i.i.d. conditional α), acceptance_per_position (vLLM's per-position rates) or acceptance: trace (got %d)", n)
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
	if sp.Acceptance != "" && sp.Acceptance != "trace" {
		bad(path+".acceptance", "must be trace (per-request rates from the trace's spec_acceptance_rate) or unset (got %q)", sp.Acceptance)
	}
	switch {
	case sp.Method == "draft_model" && sp.DraftModel == "":
		bad(path+".draft_model", "method draft_model needs the drafting model's name, a model with the target's vocabulary from servesim catalog or the models folder, e.g. draft_model: meta-llama/Llama-3.1-8B")
	case sp.Method != "draft_model" && sp.DraftModel != "":
		bad(path+".draft_model", "is only used with method draft_model (got method %q); remove it", sp.Method)
	}
}

// Group is a set of identical instances.
type Group struct {
	// Name labels the group. Default "g<index>".
	Name string `yaml:"name" json:"name"`
	// Count is the number of instances. Default 1.
	Count *int `yaml:"count" json:"count"`
	// Role is mixed (default: prompts and outputs), prefill (prompts only;
	// the KV is handed to a decode instance) or decode.
	Role string `yaml:"role" json:"role"`
	// Hardware overrides the scenario's accelerator.
	Hardware string `yaml:"hardware" json:"hardware"`
	// TP is the tensor-parallel degree. Default 1.
	TP *int `yaml:"tp" json:"tp"`
	// PP is the pipeline-parallel degree: the layers split into PP stages
	// of TP GPUs each, up to PP batches in flight. Default 1.
	PP *int `yaml:"pp" json:"pp"`
	// DP is the number of data-parallel attention ranks of each instance
	// (vLLM's data_parallel_size): each rank is an engine of its own
	// (scheduler, waiting queue, KV cache; max_num_seqs and
	// max_num_batched_tokens apply per rank) on tp x pp GPUs, and the
	// ranks of an MoE model step in lockstep (docs/moe.md). Default 1.
	DP *int `yaml:"dp,omitempty" json:"dp,omitempty"`
	// EP is the expert-parallel degree: 1 (default) or dp x tp, which
	// shards the routed experts over the dp x tp ranks as vLLM's
	// enable_expert_parallel does. MoE models only.
	EP *int `yaml:"ep,omitempty" json:"ep,omitempty"`
	// DPBalance chooses how an instance's requests reach its data-parallel
	// ranks: vllm (default; vLLM's DP load balancer, lowest 4 x waiting +
	// running from counts published every 100 ms plus local increments)
	// or router (the scenario's router addresses the ranks directly).
	DPBalance string `yaml:"dp_balance,omitempty" json:"dp_balance,omitempty"`
	// NodeGPUs overrides the GPUs per node of the accelerator's catalog
	// node description. The GPUs of one data-parallel instance must sit
	// on one node (its expert-parallel collectives use the intra-node
	// link). Default: the catalog's.
	NodeGPUs int `yaml:"node_gpus,omitempty" json:"node_gpus,omitempty"`
	// MemoryGB overrides the accelerator's memory size (GB = 1e9 bytes).
	MemoryGB float64 `yaml:"memory_gb" json:"memory_gb"`
	// Engine overrides engine settings for this group (non-zero fields).
	Engine *Engine `yaml:"engine" json:"engine"`
}

// MoE configures the expert loads of an expert-parallel group.
type MoE struct {
	// Routing is the distribution of routed tokens over the experts:
	// uniform (default), zipf (expert popularity 1/rank^skew, the ranking
	// shuffled per layer with the scenario's seed) or histogram (measured
	// per-expert counts from Histogram).
	Routing string `yaml:"routing" json:"routing"`
	// Skew is the Zipf exponent (routing zipf), >= 0.
	Skew float64 `yaml:"skew" json:"skew"`
	// Histogram is a CSV file of measured routed-token counts (routing
	// histogram): header "expert,count", one row per expert, or
	// "layer,expert,count" with rows for every MoE layer (relative to the
	// scenario file).
	Histogram string `yaml:"histogram,omitempty" json:"histogram,omitempty"`
}

// SLO holds per-request latency bounds (0: not checked) and optional
// percentile targets. A request is good when it finished and met every
// per-request bound; failed and rejected requests count as misses.
// Attainment = good / all requests; goodput = good requests per second.
type SLO struct {
	TTFTMs float64 `yaml:"ttft_ms" json:"ttft_ms"`
	TPOTMs float64 `yaml:"tpot_ms" json:"tpot_ms"`
	E2EMs  float64 `yaml:"e2e_ms" json:"e2e_ms"`
	// Percentiles are run-level targets, e.g. {metric: ttft, percentile:
	// 99, max_ms: 2000}, reported as met or missed.
	Percentiles []PercentileTarget `yaml:"percentiles" json:"percentiles"`
}

// PercentileTarget is one run-level latency target.
type PercentileTarget struct {
	Metric     string  `yaml:"metric" json:"metric"`         // ttft, tpot, itl or e2e
	Percentile int     `yaml:"percentile" json:"percentile"` // 50, 90, 95 or 99
	MaxMs      float64 `yaml:"max_ms" json:"max_ms"`
}

// Handoff configures the prefill -> decode KV handoff.
type Handoff struct {
	// Policy is pull (default), reserve, reject, push or eager.
	Policy string `yaml:"policy" json:"policy"`
	// Placement picks the decode instance: round-robin (default),
	// least-loaded, most-free-kv or retry.
	Placement string `yaml:"placement" json:"placement"`
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
	OnExpiry string `yaml:"on_expiry" json:"on_expiry"`
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
	PushOverflow string `yaml:"push_overflow" json:"push_overflow"`
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

// Workload selects the requests.
type Workload struct {
	// Trace is a JSONL trace file, relative to the scenario file, or
	// "builtin:NAME" for an embedded workload (see `servesim catalog`).
	// Default "builtin:sharegpt-llama-3.1-8b-300-sps10".
	Trace string `yaml:"trace" json:"trace"`
	// Format of Trace: "jsonl" (default) or "vllm-requests" (a measured
	// vLLM requests.jsonl; arrivals at its queued_ts offsets).
	Format string `yaml:"format" json:"format"`
	// Limit keeps only the first Limit requests (0: all); every
	// sub-request of a session counts, and a session is cut at the limit.
	Limit int `yaml:"limit" json:"limit"`
	// TimeScale multiplies every arrival time (0.5 doubles the rate).
	// Default 1.
	TimeScale float64 `yaml:"time_scale" json:"time_scale"`
	// Synthetic generates requests instead of reading a trace.
	Synthetic *workload.Synthetic `yaml:"synthetic" json:"synthetic"`
	// MaxConcurrency, when > 0, runs the workload closed-loop as a
	// benchmark client with that many concurrent requests does (vLLM's
	// bench serve --max-concurrency): at most this many entries (requests,
	// or whole sessions) are in flight; one due while all are taken is
	// sent as soon as one ends.
	MaxConcurrency int `yaml:"max_concurrency,omitempty" json:"max_concurrency,omitempty"`
	// Chat generates multi-turn conversations with token ids.
	Chat *workload.Chat `yaml:"chat,omitempty" json:"chat,omitempty"`
	// SharedPrefix generates requests over shared contexts with token ids.
	SharedPrefix *workload.SharedPrefix `yaml:"shared_prefix,omitempty" json:"shared_prefix,omitempty"`
}

// Generated reports whether the workload is generated rather than read
// from a trace.
func (w *Workload) Generated() bool {
	return w.Synthetic != nil || w.Chat != nil || w.SharedPrefix != nil
}

// FormatScalingRooflineRatio is the predictor.format_scaling value that
// scales profile tables to another weight or KV-cache format.
const FormatScalingRooflineRatio = "roofline-ratio"

// MaxConcurrencyBound is the largest workload.max_concurrency accepted.
const MaxConcurrencyBound = 1 << 20

// Defaults of the scenario.
const (
	DefaultModel    = "meta-llama/Llama-3.1-8B"
	DefaultHardware = "RTXPRO6000"
	DefaultTrace    = "builtin:sharegpt-llama-3.1-8b-300-sps10"
	// DefaultStepOverheadUs is the extra fixed time per step: none, the
	// engine-side time is modelled (docs/engine-time.md).
	DefaultStepOverheadUs = 0.0
)

// Default returns the embedded default scenario. Loading a file decodes it
// on top of this value, so a field the file leaves out keeps its default
// while one it sets, even to zero, is taken as written (and validated).
func Default() *Scenario {
	return &Scenario{
		Name:      "default",
		Seed:      42,
		Model:     DefaultModel,
		Hardware:  DefaultHardware,
		Dtype:     "bf16",
		Predictor: Predictor{Kind: "profile", StepOverheadUs: DefaultStepOverheadUs},
		Engine: Engine{
			BlockSize:            16,
			GPUMemoryUtilization: 0.9,
			ChunkedPrefill:       boolPtr(true),
			PrefixCaching:        boolPtr(true),
			AsyncScheduling:      boolPtr(true),
		},
		Router: "round-robin",
		Handoff: Handoff{Policy: "pull", Placement: "round-robin", LeaseS: 30, Heartbeat: boolPtr(true),
			OnExpiry: "reprefill", RetryAfterS: 1, MaxPrefillQueueS: 5, MaxDecodeKVFraction: 1, MaxReprefills: 3,
			PushBufferFraction: 0.1, PushOverflow: "spill"},
		Links:    Links{LatencyUs: -1, TPLatencyUs: -1},
		Workload: Workload{Trace: DefaultTrace, Format: "jsonl", TimeScale: 1},
	}
}

// FillGroups gives every instance group its defaults (list elements are
// created by the decoder, so they cannot be pre-filled like the rest).
func (s *Scenario) FillGroups() {
	if len(s.Instances) == 0 {
		s.Instances = []Group{{}}
	}
	for i := range s.Instances {
		g := &s.Instances[i]
		if g.Name == "" {
			g.Name = fmt.Sprintf("g%d", i)
		}
		if g.Count == nil {
			g.Count = intPtr(1)
		}
		if g.Role == "" {
			g.Role = "mixed"
		}
		if g.Hardware == "" {
			g.Hardware = s.Hardware
		}
		if g.TP == nil {
			g.TP = intPtr(1)
		}
		if g.PP == nil {
			g.PP = intPtr(1)
		}
	}
}

func intPtr(v int) *int { return &v }

func boolPtr(b bool) *bool { return &b }

// Validate checks a defaulted scenario and returns every problem, each
// naming its field.
func (s *Scenario) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if s.Dtype != "bf16" && s.Dtype != "fp16" {
		bad("dtype", "must be bf16 or fp16 (got %q)", s.Dtype)
	} else if _, err := s.Format(); err != nil {
		errs = append(errs, err)
	}
	switch s.Predictor.FormatScaling {
	case "", FormatScalingRooflineRatio:
	default:
		bad("predictor.format_scaling", "must be empty (refuse formats the profile was not measured with) or %s (got %q)", FormatScalingRooflineRatio, s.Predictor.FormatScaling)
	}
	if s.Predictor.Kind != "profile" && s.Predictor.Kind != "roofline" {
		bad("predictor.kind", "must be profile or roofline (got %q)", s.Predictor.Kind)
	}
	s.Engine.validate("engine", bad)
	for _, f := range []struct {
		name string
		v    int
	}{{"block_size", s.Engine.BlockSize}} {
		if f.v == 0 {
			bad("engine."+f.name, "must be > 0 (got 0)")
		}
	}
	if s.Engine.GPUMemoryUtilization == 0 {
		bad("engine.gpu_memory_utilization", "must be in (0, 1] (got 0)")
	}
	if s.Seed == 0 {
		bad("seed", "must be > 0 (got 0)")
	}
	if len(s.Instances) == 0 {
		bad("instances", "at least one instance group is required")
	}
	for i := range s.Instances {
		g := &s.Instances[i]
		p := fmt.Sprintf("instances[%d]", i)
		if *g.Count <= 0 {
			bad(p+".count", "must be > 0 (got %d)", *g.Count)
		}
		switch g.Role {
		case "mixed", "prefill", "decode":
		default:
			bad(p+".role", "must be mixed, prefill or decode (got %q)", g.Role)
		}
		if *g.TP <= 0 {
			bad(p+".tp", "must be > 0 (got %d)", *g.TP)
		}
		if g.PP != nil && *g.PP <= 0 {
			bad(p+".pp", "must be > 0 (got %d)", *g.PP)
		}
		s.validateParallel(g, p, bad)
		if g.Engine != nil {
			g.Engine.validate(p+".engine", bad)
		}
	}
	switch s.Router {
	case "round-robin", "random", "least-loaded", "least-kv", "prefix-affinity", "kv-aware", "power-of-two":
	default:
		bad("router", "must be round-robin, random, least-loaded, least-kv, prefix-affinity, kv-aware or power-of-two (got %q)", s.Router)
	}
	s.validateHandoff(bad)
	s.validateBounds(bad)
	if t := s.KVTiers; t != nil {
		t.validate(s, bad)
	}
	if m := s.MoE; m != nil {
		switch m.Routing {
		case "", "uniform", "zipf":
		case "histogram":
			if m.Histogram == "" {
				bad("moe.histogram", "routing histogram needs a CSV file of per-expert counts (expert,count)")
			}
		default:
			bad("moe.routing", "must be uniform, zipf or histogram (got %q)", m.Routing)
		}
		if !(m.Skew >= 0 && m.Skew <= 10) {
			bad("moe.skew", "must be in [0, 10] (got %g)", m.Skew)
		}
	}

	for i, t := range s.SLO.Percentiles {
		p := fmt.Sprintf("slo.percentiles[%d]", i)
		switch t.Metric {
		case "ttft", "tpot", "itl", "e2e":
		default:
			bad(p+".metric", "must be ttft, tpot, itl or e2e (got %q)", t.Metric)
		}
		switch t.Percentile {
		case 50, 90, 95, 99:
		default:
			bad(p+".percentile", "must be 50, 90, 95 or 99 (got %d)", t.Percentile)
		}
	}
	w := &s.Workload
	switch n := countSet(w.Trace != "", w.Synthetic != nil, w.Chat != nil, w.SharedPrefix != nil); {
	case n == 0:
		bad("workload", "set a trace, or one of synthetic, chat and shared_prefix")
	case n > 1:
		bad("workload", "set only one of trace, synthetic, chat and shared_prefix")
	}
	if w.Format != "jsonl" && w.Format != "vllm-requests" {
		bad("workload.format", "must be jsonl or vllm-requests (got %q)", w.Format)
	}
	if w.Limit < 0 {
		bad("workload.limit", "must be >= 0 (got %d)", w.Limit)
	}
	if w.MaxConcurrency < 0 || w.MaxConcurrency > MaxConcurrencyBound {
		bad("workload.max_concurrency", "must be in [0, %d] (got %d; 0 means no limit)", MaxConcurrencyBound, w.MaxConcurrency)
	}
	if w.Chat != nil {
		if err := w.Chat.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if w.SharedPrefix != nil {
		if err := w.SharedPrefix.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if w.Synthetic != nil {
		if err := w.Synthetic.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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
}

// CUDAGraphModes are the valid engine.cudagraph_mode values, vLLM's names.
var CUDAGraphModes = []string{"full_and_piecewise", "piecewise", "full", "full_decode_only", "none"}

// Merged returns the group's effective engine settings.
func (g *Group) Merged(base Engine) Engine {
	if g.Engine == nil {
		return base
	}
	o := *g.Engine
	m := base
	setInt := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	setInt(&m.MaxNumSeqs, o.MaxNumSeqs)
	setInt(&m.MaxNumBatchedTokens, o.MaxNumBatchedTokens)
	setInt(&m.BlockSize, o.BlockSize)
	setInt(&m.LongPrefillTokenThreshold, o.LongPrefillTokenThreshold)
	setInt(&m.NumGPUBlocks, o.NumGPUBlocks)
	setInt(&m.MaxModelLen, o.MaxModelLen)
	if o.GPUMemoryUtilization != 0 {
		m.GPUMemoryUtilization = o.GPUMemoryUtilization
	}
	if o.ChunkedPrefill != nil {
		m.ChunkedPrefill = o.ChunkedPrefill
	}
	if o.PrefixCaching != nil {
		m.PrefixCaching = o.PrefixCaching
	}
	if o.AsyncScheduling != nil {
		m.AsyncScheduling = o.AsyncScheduling
	}
	if o.EnforceEager != nil {
		m.EnforceEager = o.EnforceEager
	}
	if o.CUDAGraphMode != "" {
		m.CUDAGraphMode = o.CUDAGraphMode
	}
	if o.CUDAGraphCaptureSizes != nil {
		m.CUDAGraphCaptureSizes = o.CUDAGraphCaptureSizes
	}
	if o.DisableCustomAllReduce != nil {
		m.DisableCustomAllReduce = o.DisableCustomAllReduce
	}
	if o.Speculative != nil {
		m.Speculative = o.Speculative
	}
	return m
}

// countSet returns how many of the flags are true.
func countSet(flags ...bool) int {
	n := 0
	for _, f := range flags {
		if f {
			n++
		}
	}
	return n
}

// BuiltinName returns NAME for a "builtin:NAME" trace reference.
func BuiltinName(trace string) (string, bool) {
	return strings.CutPrefix(trace, "builtin:")
}

// PD reports whether the scenario disaggregates prefill and decode.
func (s *Scenario) PD() bool {
	for _, g := range s.Instances {
		if g.Role == "prefill" || g.Role == "decode" {
			return true
		}
	}
	return false
}

func (s *Scenario) validateHandoff(bad func(field, format string, args ...any)) {
	h := &s.Handoff
	switch h.Policy {
	case "pull", "reserve", "reject", "push", "eager":
	default:
		bad("handoff.policy", "must be pull, reserve, reject, push or eager (got %q)", h.Policy)
	}
	switch h.Placement {
	case "round-robin", "least-loaded", "most-free-kv", "retry":
	default:
		bad("handoff.placement", "must be round-robin, least-loaded, most-free-kv or retry (got %q)", h.Placement)
	}
	if h.OnExpiry != "reprefill" && h.OnExpiry != "fail" {
		bad("handoff.on_expiry", "must be reprefill or fail (got %q)", h.OnExpiry)
	}
	if h.PushOverflow != "spill" && h.PushOverflow != "drop" {
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
	if h.OffloadPinnedAfterS < 0 {
		bad("handoff.offload_pinned_after_s", "must be >= 0 seconds (got %g)", h.OffloadPinnedAfterS)
	} else if h.OffloadPinnedAfterS > 0 && (h.Policy != "pull" || s.KVTiers == nil) {
		bad("handoff.offload_pinned_after_s", "needs handoff.policy pull and a kv_tiers section (the host tier receives the KV); got policy %s, kv_tiers set: %t", h.Policy, s.KVTiers != nil)
	}
	if s.PD() {
		var p, d bool
		for _, g := range s.Instances {
			p = p || g.Role == "prefill" || g.Role == "mixed"
			d = d || g.Role == "decode"
		}
		if !p || !d {
			bad("instances", "a disaggregated cluster needs at least one prefill (or mixed) and one decode group")
		}
		s.validatePDSpec(bad)
	}
}

// validateParallel checks a group's data- and expert-parallel settings.
func (s *Scenario) validateParallel(g *Group, p string, bad func(field, format string, args ...any)) {
	dp, ep := 1, 1
	if g.DP != nil {
		dp = *g.DP
		if dp <= 0 || dp > MaxParallel {
			bad(p+".dp", "must be in [1, %d] (got %d)", MaxParallel, dp)
			return
		}
	}
	if g.EP != nil {
		ep = *g.EP
	}
	tp := 1
	if g.TP != nil && *g.TP > 0 {
		tp = *g.TP
	}
	if ep != 1 && ep != dp*tp {
		bad(p+".ep", "must be 1 or dp x tp = %d (experts are sharded over every rank of the group, as vLLM's enable_expert_parallel does); got %d", dp*tp, ep)
	}
	if dp > 1 && ep == 1 {
		bad(p+".ep", "dp %d without expert parallelism shards every expert over the dp x tp ranks, which servesim does not model; set ep: %d", dp, dp*tp)
	}
	if dp > 1 && g.PP != nil && *g.PP > 1 {
		bad(p+".pp", "pipeline parallelism inside data-parallel ranks is not modelled; use pp: 1 with dp %d", dp)
	}
	if dp > 1 && g.Role != "mixed" {
		bad(p+".role", "data-parallel groups serve mixed (P/D with per-phase DP/EP is not modelled yet); use role: mixed or dp: 1")
	}
	if g.NodeGPUs < 0 || g.NodeGPUs > 1024 {
		bad(p+".node_gpus", "must be in [1, 1024] (got %d)", g.NodeGPUs)
	}
	switch g.DPBalance {
	case "", "vllm", "router":
	default:
		bad(p+".dp_balance", "must be vllm or router (got %q)", g.DPBalance)
	}
}

// Parallel returns a group's data- and expert-parallel degrees (1 when unset).
func (g *Group) Parallel() (dp, ep int) {
	dp, ep = 1, 1
	if g.DP != nil {
		dp = *g.DP
	}
	if g.EP != nil {
		ep = *g.EP
	}
	return dp, ep
}
