package config

import (
	"errors"
	"fmt"
	"strings"

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
	// Predictor chooses how step latency is computed.
	Predictor Predictor `yaml:"predictor" json:"predictor"`
	// Engine holds the engine settings shared by all instances.
	Engine Engine `yaml:"engine" json:"engine"`
	// Instances lists the instance groups. Default: one mixed instance.
	Instances []Group `yaml:"instances" json:"instances"`
	// Router places arriving requests on instances: round-robin (default)
	// or least-loaded.
	Router string `yaml:"router" json:"router"`
	// Workload is what the cluster serves.
	Workload Workload `yaml:"workload" json:"workload"`
	// CheckInvariants verifies KV-block conservation and scheduler limits
	// after every step (slower; on in tests).
	CheckInvariants bool `yaml:"check_invariants" json:"check_invariants"`
}

// Predictor configures step-latency prediction.
type Predictor struct {
	// Kind is "profile" (default): measured per-layer tables.
	Kind string `yaml:"kind" json:"kind"`
	// Profiles is the root of profile bundles laid out as
	// <hardware>/<org>/<model>/<dtype>/tp<N>/. Empty: the embedded bundle.
	Profiles string `yaml:"profiles" json:"profiles"`
	// StepOverheadUs is the fixed host-side time per engine step, in
	// microseconds, added to the profiled GPU time (see README, "Step
	// latency model").
	StepOverheadUs float64 `yaml:"step_overhead_us" json:"step_overhead_us"`
}

// Engine mirrors vLLM's engine arguments.
type Engine struct {
	// MaxNumSeqs is the most requests in one batch. Default 256.
	MaxNumSeqs int `yaml:"max_num_seqs" json:"max_num_seqs"`
	// MaxNumBatchedTokens is the token budget of one step. Default 2048.
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
}

// Group is a set of identical instances.
type Group struct {
	// Name labels the group. Default "g<index>".
	Name string `yaml:"name" json:"name"`
	// Count is the number of instances. Default 1.
	Count *int `yaml:"count" json:"count"`
	// Role is mixed (default): the instance computes prompts and outputs.
	Role string `yaml:"role" json:"role"`
	// Hardware overrides the scenario's accelerator.
	Hardware string `yaml:"hardware" json:"hardware"`
	// TP is the tensor-parallel degree. Default 1.
	TP *int `yaml:"tp" json:"tp"`
	// MemoryGB overrides the accelerator's memory size (GB = 1e9 bytes).
	MemoryGB float64 `yaml:"memory_gb" json:"memory_gb"`
	// Engine overrides engine settings for this group (non-zero fields).
	Engine *Engine `yaml:"engine" json:"engine"`
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
	// Limit keeps only the first Limit requests (0: all).
	Limit int `yaml:"limit" json:"limit"`
	// TimeScale multiplies every arrival time (0.5 doubles the rate).
	// Default 1.
	TimeScale float64 `yaml:"time_scale" json:"time_scale"`
	// Synthetic generates requests instead of reading a trace.
	Synthetic *workload.Synthetic `yaml:"synthetic" json:"synthetic"`
}

// Defaults of the scenario.
const (
	DefaultModel    = "meta-llama/Llama-3.1-8B"
	DefaultHardware = "RTXPRO6000"
	DefaultTrace    = "builtin:sharegpt-llama-3.1-8b-300-sps10"
	// DefaultStepOverheadUs is the host-side time per engine step; see the
	// README section "Step latency model" for where it comes from.
	DefaultStepOverheadUs = 600.0
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
			MaxNumSeqs:           256,
			MaxNumBatchedTokens:  2048,
			BlockSize:            16,
			GPUMemoryUtilization: 0.9,
			ChunkedPrefill:       boolPtr(true),
			PrefixCaching:        boolPtr(true),
			AsyncScheduling:      boolPtr(true),
		},
		Router:   "round-robin",
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
	}
	if s.Predictor.Kind != "profile" {
		bad("predictor.kind", "must be \"profile\" (got %q)", s.Predictor.Kind)
	}
	if v := s.Predictor.StepOverheadUs; v < 0 {
		bad("predictor.step_overhead_us", "must be >= 0 (got %g)", v)
	}
	s.Engine.validate("engine", bad)
	for _, f := range []struct {
		name string
		v    int
	}{{"max_num_seqs", s.Engine.MaxNumSeqs}, {"max_num_batched_tokens", s.Engine.MaxNumBatchedTokens}, {"block_size", s.Engine.BlockSize}} {
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
		if g.Role != "mixed" {
			bad(p+".role", "must be mixed (got %q)", g.Role)
		}
		if *g.TP <= 0 {
			bad(p+".tp", "must be > 0 (got %d)", *g.TP)
		}
		if g.MemoryGB < 0 {
			bad(p+".memory_gb", "must be > 0 when set (got %g)", g.MemoryGB)
		}
		if g.Engine != nil {
			g.Engine.validate(p+".engine", bad)
		}
	}
	switch s.Router {
	case "round-robin", "least-loaded":
	default:
		bad("router", "must be round-robin or least-loaded (got %q)", s.Router)
	}
	w := &s.Workload
	if w.Trace == "" && w.Synthetic == nil {
		bad("workload", "set a trace or a synthetic workload")
	}
	if w.Format != "jsonl" && w.Format != "vllm-requests" {
		bad("workload.format", "must be jsonl or vllm-requests (got %q)", w.Format)
	}
	if w.Limit < 0 {
		bad("workload.limit", "must be >= 0 (got %d)", w.Limit)
	}
	if w.TimeScale <= 0 {
		bad("workload.time_scale", "must be > 0 (got %g)", w.TimeScale)
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
}

// merged returns the group's effective engine settings.
func (g *Group) merged(base Engine) Engine {
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
	return m
}

// builtinName returns NAME for a "builtin:NAME" trace reference.
func builtinName(trace string) (string, bool) {
	return strings.CutPrefix(trace, "builtin:")
}
