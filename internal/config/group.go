package config

// Group is a set of identical instances.
type Group struct {
	// Name labels the group. Default "g<index>".
	Name string `yaml:"name" json:"name"`
	// Count is the number of instances. Default 1.
	Count *int `yaml:"count" json:"count"`
	// Role is mixed (default: prompts and outputs), prefill (prompts only;
	// the KV is handed to a decode instance) or decode.
	Role Role `yaml:"role" json:"role"`
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
	DPBalance DPBalance `yaml:"dp_balance,omitempty" json:"dp_balance,omitempty"`
	// DPBalanceTies is how vLLM's balancer breaks a tie between ranks of
	// equal score: lowest (default; vLLM's rule, the lowest rank) or
	// seeded (a rank drawn from the scenario's seed, standing in for the
	// timing noise of a real deployment, which decides near-ties; a
	// study of how much the placement alone moves the results,
	// docs/moe.md).
	DPBalanceTies DPBalanceTies `yaml:"dp_balance_ties,omitempty" json:"dp_balance_ties,omitempty"`
	// NodeGPUs overrides the GPUs per node of the accelerator's catalog
	// node description. A data-parallel instance larger than a node spans
	// whole nodes (vLLM's data_parallel_size_local ranks on each); its
	// expert-parallel traffic crosses them on the NICs (docs/wide-ep.md).
	// Default: the catalog's.
	NodeGPUs int `yaml:"node_gpus,omitempty" json:"node_gpus,omitempty"`
	// MemoryGB overrides the accelerator's memory size (GB = 1e9 bytes).
	MemoryGB float64 `yaml:"memory_gb" json:"memory_gb"`
	// Engine overrides engine settings for this group (non-zero fields).
	Engine *Engine `yaml:"engine" json:"engine"`
	// WideEP is the expert-parallel group's all-to-all backend, EPLB and
	// dual-batch overlap (docs/wide-ep.md), inline.
	WideEP `yaml:",inline"`
}

// MoE configures the expert loads of an expert-parallel group.
type MoE struct {
	// Routing is the distribution of routed tokens over the experts:
	// uniform (default), zipf (expert popularity 1/rank^skew, the ranking
	// shuffled per layer with the scenario's seed) or histogram (measured
	// per-expert counts from Histogram).
	Routing MoERouting `yaml:"routing" json:"routing"`
	// Skew is the Zipf exponent (routing zipf), >= 0.
	Skew float64 `yaml:"skew" json:"skew"`
	// Histogram is a CSV file of measured routed-token counts (routing
	// histogram): header "expert,count", one row per expert, or
	// "layer,expert,count" with rows for every MoE layer (relative to the
	// scenario file).
	Histogram string `yaml:"histogram,omitempty" json:"histogram,omitempty"`
}

// Merged returns the group's effective engine settings.
func (g *Group) Merged(base Engine) Engine {
	if g.Engine == nil {
		return base
	}
	o := *g.Engine
	m := base
	set(&m.MaxNumSeqs, o.MaxNumSeqs)
	set(&m.MaxNumBatchedTokens, o.MaxNumBatchedTokens)
	set(&m.BlockSize, o.BlockSize)
	set(&m.LongPrefillTokenThreshold, o.LongPrefillTokenThreshold)
	set(&m.NumGPUBlocks, o.NumGPUBlocks)
	set(&m.MaxModelLen, o.MaxModelLen)
	set(&m.GPUMemoryUtilization, o.GPUMemoryUtilization)
	set(&m.ChunkedPrefill, o.ChunkedPrefill)
	set(&m.PrefixCaching, o.PrefixCaching)
	set(&m.AsyncScheduling, o.AsyncScheduling)
	set(&m.EnforceEager, o.EnforceEager)
	set(&m.CUDAGraphMode, o.CUDAGraphMode)
	if o.CUDAGraphCaptureSizes != nil {
		m.CUDAGraphCaptureSizes = o.CUDAGraphCaptureSizes
	}
	set(&m.DisableCustomAllReduce, o.DisableCustomAllReduce)
	set(&m.Speculative, o.Speculative)
	set(&m.PreemptionMode, o.PreemptionMode)
	set(&m.SwapSpace, o.SwapSpace)
	set(&m.SchedulingPolicy, o.SchedulingPolicy)
	set(&m.DisableHybridKVCacheManager, o.DisableHybridKVCacheManager)
	return m
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
	// An instance with dp > 1 or ep > 1 steps as a lockstep DP group
	// (one rank when dp is 1), which serves mixed and has no pipeline.
	if (dp > 1 || ep > 1) && g.PP != nil && *g.PP > 1 {
		bad(p+".pp", "pipeline parallelism inside data- or expert-parallel ranks is not modelled; use pp: 1 with dp %d, ep %d", dp, ep)
	}
	validateWideEP(g.WideEP, ep, p, bad)
	if g.NodeGPUs < 0 || g.NodeGPUs > 1024 {
		bad(p+".node_gpus", "must be in [1, 1024] (got %d)", g.NodeGPUs)
	}
	switch g.DPBalance {
	case "", DPBalanceVLLM, DPBalanceRouter:
	default:
		bad(p+".dp_balance", "must be vllm or router (got %q)", g.DPBalance)
	}
	switch g.DPBalanceTies {
	case "", TiesLowest, TiesSeeded:
	default:
		bad(p+".dp_balance_ties", "must be lowest or seeded (got %q)", g.DPBalanceTies)
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

// set overrides *dst with v when the group sets it (v is not the zero
// value: an unset number, string or pointer).
func set[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}
