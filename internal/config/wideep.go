package config

// All2AllBackend is how an expert-parallel group moves tokens to and from
// its experts (instances[].all2all_backend; empty: allgather_reducescatter,
// vLLM 0.19's default).
type All2AllBackend string

// All-to-all backends (vLLM's --all2all-backend values that servesim times).
const (
	All2AllAllgatherReduceScatter All2AllBackend = "allgather_reducescatter"
	All2AllDeepEPHighThroughput   All2AllBackend = "deepep_high_throughput"
	All2AllDeepEPLowLatency       All2AllBackend = "deepep_low_latency"
)

// DeepEP says whether the backend is one of DeepEP's kernels.
func (b All2AllBackend) DeepEP() bool {
	return b == All2AllDeepEPHighThroughput || b == All2AllDeepEPLowLatency
}

// LowLatency says whether the backend is DeepEP's low-latency kernels.
func (b All2AllBackend) LowLatency() bool { return b == All2AllDeepEPLowLatency }

// Defaults of vLLM 0.19's ParallelConfig and EPLBConfig
// (vllm/config/parallel.py).
const (
	DefaultDBODecodeTokenThreshold  = 32
	DefaultDBOPrefillTokenThreshold = 512
	DefaultEPLBStepInterval         = 3000
)

// WideEP holds an expert-parallel group's all-to-all backend, expert load
// balancer and dual-batch overlap, named as vLLM's flags
// (docs/wide-ep.md). Its fields sit inline in an instance group.
type WideEP struct {
	// All2AllBackend is allgather_reducescatter (default),
	// deepep_high_throughput (DeepEP's normal kernels, for prefill) or
	// deepep_low_latency (DeepEP's low-latency kernels, for decode).
	All2AllBackend All2AllBackend `yaml:"all2all_backend,omitempty" json:"all2all_backend,omitempty"`
	// EnableEPLB turns on vLLM's expert-parallel load balancer: the
	// physical experts are re-placed from the measured loads every
	// EPLBStepInterval steps.
	EnableEPLB bool `yaml:"enable_eplb,omitempty" json:"enable_eplb,omitempty"`
	// NumRedundantExperts is EPLB's count of extra physical experts
	// (replicas of the hottest ones), spread over the EP ranks; the
	// experts plus it must divide evenly by ep. Needs enable_eplb.
	NumRedundantExperts int `yaml:"num_redundant_experts,omitempty" json:"num_redundant_experts,omitempty"`
	// EPLBStepInterval is the steps between two rebalances (vLLM's
	// eplb_config.step_interval, default 3000).
	EPLBStepInterval int `yaml:"eplb_step_interval,omitempty" json:"eplb_step_interval,omitempty"`
	// EnableDBO splits a step into two micro-batches whose compute
	// overlaps the other's all-to-all (DeepEP backends only).
	EnableDBO bool `yaml:"enable_dbo,omitempty" json:"enable_dbo,omitempty"`
	// DBODecodeTokenThreshold and DBOPrefillTokenThreshold are the least
	// tokens of a decode-only batch, and of a batch with a prefill, that
	// a rank micro-batches (vLLM's defaults 32 and 512).
	DBODecodeTokenThreshold  int `yaml:"dbo_decode_token_threshold,omitempty" json:"dbo_decode_token_threshold,omitempty"`
	DBOPrefillTokenThreshold int `yaml:"dbo_prefill_token_threshold,omitempty" json:"dbo_prefill_token_threshold,omitempty"`
}

// DBOThresholds returns the decode and prefill thresholds with vLLM's
// defaults for unset ones.
func (w WideEP) DBOThresholds() (decode, prefill int) {
	decode, prefill = w.DBODecodeTokenThreshold, w.DBOPrefillTokenThreshold
	if decode == 0 {
		decode = DefaultDBODecodeTokenThreshold
	}
	if prefill == 0 {
		prefill = DefaultDBOPrefillTokenThreshold
	}
	return decode, prefill
}

// StepInterval returns EPLBStepInterval or vLLM's default.
func (w WideEP) StepInterval() int {
	if w.EPLBStepInterval == 0 {
		return DefaultEPLBStepInterval
	}
	return w.EPLBStepInterval
}

// validateWideEP checks a group's wide-EP settings; ep is its expert-
// parallel degree.
func validateWideEP(w WideEP, ep int, p string, bad func(field, format string, args ...any)) {
	switch w.All2AllBackend {
	case "", All2AllAllgatherReduceScatter, All2AllDeepEPHighThroughput, All2AllDeepEPLowLatency:
	default:
		bad(p+".all2all_backend", "must be allgather_reducescatter, deepep_high_throughput or deepep_low_latency (got %q)", w.All2AllBackend)
	}
	set := w.All2AllBackend != "" || w.EnableEPLB || w.NumRedundantExperts != 0 || w.EPLBStepInterval != 0 || w.EnableDBO ||
		w.DBODecodeTokenThreshold != 0 || w.DBOPrefillTokenThreshold != 0
	if set && ep <= 1 {
		bad(p+".ep", "all2all_backend, EPLB and DBO apply to expert-parallel groups; set ep > 1 or remove them")
	}
	if w.NumRedundantExperts < 0 || w.NumRedundantExperts > 4096 {
		bad(p+".num_redundant_experts", "must be in [0, 4096] (got %d)", w.NumRedundantExperts)
	}
	if w.NumRedundantExperts > 0 && !w.EnableEPLB {
		bad(p+".num_redundant_experts", "redundant experts are placed by EPLB; set enable_eplb: true (as vLLM requires)")
	}
	if w.EPLBStepInterval < 0 || w.EPLBStepInterval > 1<<30 {
		bad(p+".eplb_step_interval", "must be in [1, %d] steps (got %d)", 1<<30, w.EPLBStepInterval)
	}
	if w.EPLBStepInterval != 0 && !w.EnableEPLB {
		bad(p+".eplb_step_interval", "applies with enable_eplb: true")
	}
	if w.DBODecodeTokenThreshold < 0 || w.DBODecodeTokenThreshold > MaxTokens {
		bad(p+".dbo_decode_token_threshold", "must be in [1, %d] (got %d)", MaxTokens, w.DBODecodeTokenThreshold)
	}
	if w.DBOPrefillTokenThreshold < 0 || w.DBOPrefillTokenThreshold > MaxTokens {
		bad(p+".dbo_prefill_token_threshold", "must be in [1, %d] (got %d)", MaxTokens, w.DBOPrefillTokenThreshold)
	}
	if (w.DBODecodeTokenThreshold != 0 || w.DBOPrefillTokenThreshold != 0) && !w.EnableDBO {
		bad(p+".enable_dbo", "the DBO thresholds apply with enable_dbo: true")
	}
	if w.EnableDBO && !w.All2AllBackend.DeepEP() {
		bad(p+".enable_dbo", "vLLM runs dual-batch overlap with the DeepEP backends only; set all2all_backend: deepep_low_latency or deepep_high_throughput")
	}
}
