package config

import (
	"strings"

	"github.com/servesim/servesim/internal/frontend"
	"github.com/servesim/servesim/internal/hw"
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
	// Accelerators adds accelerators to the hardware catalog, or
	// overrides fields of catalog ones, for this scenario: entries of the
	// shape of the catalog (internal/hw/catalog.yaml; see
	// docs/accelerators.md). Default: none.
	Accelerators []hw.Spec `yaml:"accelerators,omitempty" json:"accelerators,omitempty"`
	// AcceleratorsFile is a YAML file of accelerators in the catalog's
	// shape (a top-level accelerators list), added before Accelerators
	// (relative to the scenario file). Default: none.
	AcceleratorsFile string `yaml:"accelerators_file,omitempty" json:"accelerators_file,omitempty"`
	// Dtype of weights and KV cache: bf16 (default) or fp16.
	Dtype string `yaml:"dtype" json:"dtype"`
	// Quantization is the weight quantization method, with vLLM's names:
	// fp8 (W8A8, per-tensor or block-wise), awq or gptq (integer
	// weight-only), modelopt_fp4 (NVFP4, Blackwell only), mxfp4 (gpt-oss
	// experts; weight-only). Empty (default):
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
	Router Router `yaml:"router" json:"router"`
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
	// FrontEnd models a served endpoint: vLLM's OpenAI API server between
	// the clients and the engines (docs/client.md). A scenario that has
	// the section (even empty: `frontend: {}`) gets vLLM 0.19's front end
	// and client-side latencies; absent, requests reach the engines at
	// their arrival times and every latency is engine-side (the replay of
	// a measured run).
	FrontEnd *frontend.Config `yaml:"frontend,omitempty" json:"frontend,omitempty"`
	// Faults injects instance losses, stragglers, KV transfer failures
	// and link degradation (docs/faults.md); absent: none.
	Faults *Faults `yaml:"faults,omitempty" json:"faults,omitempty"`
	// Autoscaler scales instance groups with load (docs/faults.md);
	// absent: fixed pools.
	Autoscaler *Autoscaler `yaml:"autoscaler,omitempty" json:"autoscaler,omitempty"`
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
	Metric     SLOMetric `yaml:"metric" json:"metric"`         // ttft, tpot, itl or e2e
	Percentile int       `yaml:"percentile" json:"percentile"` // 50, 90, 95 or 99
	MaxMs      float64   `yaml:"max_ms" json:"max_ms"`
}

// Workload selects the requests.
type Workload struct {
	// Trace is a JSONL trace file, relative to the scenario file, or
	// "builtin:NAME" for an embedded workload (see `servesim catalog`).
	// Default "builtin:sharegpt-llama-3.1-8b-300-sps10".
	Trace string `yaml:"trace" json:"trace"`
	// Format of Trace: "jsonl" (default) or "vllm-requests" (a measured
	// vLLM requests.jsonl; arrivals at its queued_ts offsets).
	Format TraceFormat `yaml:"format" json:"format"`
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
	// IgnoreArrivalTimes makes every entry of the workload due at 0,
	// whatever its arrival time (a trace's, or a generated schedule's):
	// with MaxConcurrency, a closed-loop replay of a trace's requests in
	// order, each sent as soon as a client is free, as vllm bench serve
	// --request-rate inf --max-concurrency N replays a dataset. A client's
	// abort time keeps its distance from the arrival.
	IgnoreArrivalTimes bool `yaml:"ignore_arrival_times,omitempty" json:"ignore_arrival_times,omitempty"`
	// WarmupRequests makes the first N requests (ids 0 to N-1) warm-up
	// requests, as vllm bench serve --num-warmups: they run first, the
	// measured requests are sent once they have all ended (their arrival
	// schedule starts then), and they are left out of every count and
	// statistic (docs/client.md). Default 0.
	WarmupRequests int `yaml:"warmup_requests,omitempty" json:"warmup_requests,omitempty"`
	// Chat generates multi-turn conversations with token ids.
	Chat *workload.Chat `yaml:"chat,omitempty" json:"chat,omitempty"`
	// SharedPrefix generates requests over shared contexts with token ids.
	SharedPrefix *workload.SharedPrefix `yaml:"shared_prefix,omitempty" json:"shared_prefix,omitempty"`
	// Priorities gives every request (every session) a priority drawn
	// from a mix of classes, e.g. [{priority: 0, weight: 1}, {priority:
	// 1, weight: 3}], replacing a trace's own priority fields. Empty: the
	// trace's priorities, or 0.
	Priorities []workload.PriorityClass `yaml:"priorities,omitempty" json:"priorities,omitempty"`
}

// Generated reports whether the workload is generated rather than read
// from a trace.
func (w *Workload) Generated() bool {
	return w.Synthetic != nil || w.Chat != nil || w.SharedPrefix != nil
}

// MaxConcurrencyBound is the largest workload.max_concurrency accepted.
const MaxConcurrencyBound = 1 << 20

// BuiltinName returns NAME for a "builtin:NAME" trace reference.
func BuiltinName(trace string) (string, bool) {
	return strings.CutPrefix(trace, "builtin:")
}

// PD reports whether the scenario disaggregates prefill and decode.
func (s *Scenario) PD() bool {
	for _, g := range s.Instances {
		if g.Role == RolePrefill || g.Role == RoleDecode {
			return true
		}
	}
	return false
}
