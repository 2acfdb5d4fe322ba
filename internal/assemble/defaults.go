package assemble

import (
	"fmt"
	"slices"
	"strings"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/perf"
)

// FromScenario marks an engine setting the scenario states.
const FromScenario = "scenario"

// bigDeviceBytes is vLLM's threshold for the larger batch defaults: 70 GiB
// of device memory (GiB_bytes = 2^30 in vllm/utils).
const bigDeviceBytes = 70 << 30

// batchDefaults are the max_num_seqs and max_num_batched_tokens vLLM 0.19
// picks for `vllm serve` (usage context OPENAI_API_SERVER) on one device,
// before the adjustments of resolveBatch, and the reason for the choice.
type batchDefaults struct {
	seqs, tokens int
	why          string
}

// vllmBatchDefaults reproduces EngineArgs.get_batch_defaults of vLLM 0.19
// (vllm/engine/arg_utils.py) for GPUs: devices with at least 70 GiB of
// memory that are not A100s get 1024 sequences and 8192 tokens a step,
// every other GPU 256 and 2048. memBytes is the device memory vLLM reads
// from the driver (the catalog's CUDA-visible total, or the group's
// memory_gb override).
func vllmBatchDefaults(acc hw.Accelerator, memBytes int64) batchDefaults {
	gib := float64(memBytes) / (1 << 30)
	name := strings.ToLower(acc.Name + " " + acc.Product)
	switch {
	case memBytes >= bigDeviceBytes && strings.Contains(name, "a100"):
		return batchDefaults{256, 2048, fmt.Sprintf("vLLM default for %s (A100: the small defaults)", acc.Name)}
	case memBytes >= bigDeviceBytes:
		return batchDefaults{1024, 8192, fmt.Sprintf("vLLM default for %s (%.1f GiB >= 70 GiB)", acc.Name, gib)}
	default:
		return batchDefaults{256, 2048, fmt.Sprintf("vLLM default for %s (%.1f GiB < 70 GiB)", acc.Name, gib)}
	}
}

// BatchOrigin says where an instance group's effective max_num_seqs and
// max_num_batched_tokens come from: FromScenario or a vLLM default.
type BatchOrigin struct {
	Seqs, Tokens string
}

// resolveBatch fills the max_num_seqs and max_num_batched_tokens the
// scenario leaves at 0 as vLLM 0.19's
// EngineArgs._set_default_max_num_seqs_and_batched_tokens_args does:
// the device default, then (for a defaulted token budget) at least
// max_model_len without chunked prefill and at most max_num_seqs x
// max_model_len, then (for a defaulted max_num_seqs) at most the token
// budget.
func resolveBatch(eng *config.Engine, d batchDefaults, maxLen int) BatchOrigin {
	o := BatchOrigin{Seqs: FromScenario, Tokens: FromScenario}
	seqsUnset, tokensUnset := eng.MaxNumSeqs == 0, eng.MaxNumBatchedTokens == 0
	if seqsUnset {
		eng.MaxNumSeqs, o.Seqs = d.seqs, d.why
	}
	if tokensUnset {
		t := d.tokens
		if eng.ChunkedPrefill != nil && !*eng.ChunkedPrefill {
			t = max(t, maxLen)
		}
		eng.MaxNumBatchedTokens, o.Tokens = min(t, eng.MaxNumSeqs*maxLen), d.why
	}
	if seqsUnset {
		eng.MaxNumSeqs = min(eng.MaxNumSeqs, eng.MaxNumBatchedTokens)
	}
	return o
}

// Resolved returns a copy of the scenario in which every instance group
// carries an engine block with its effective settings: batch limits,
// max_model_len and KV blocks as computed. Running it simulates the same
// engines; `run --print-config` prints it.
func (b *Built) Resolved() *config.Scenario {
	s := b.scenario
	s.Instances = slices.Clone(s.Instances)
	for i := range s.Instances {
		e := b.engines[i]
		e.CUDAGraphCaptureSizes = slices.Clone(e.CUDAGraphCaptureSizes)
		s.Instances[i].Engine = &e
	}
	if fe := s.FrontEnd; fe != nil {
		r := fe.Resolved() // the front end's terms as they run
		s.FrontEnd = &r
	}
	return &s
}

// resolveGraphs states the CUDA-graph settings an engine runs with: the
// mode by vLLM's name, enforce_eager and disable_custom_all_reduce as
// false when unset, and the capture sizes in use.
func resolveGraphs(e *config.Engine, et perf.EngineTime) {
	f := false
	if e.EnforceEager == nil {
		e.EnforceEager = &f
	}
	if e.DisableCustomAllReduce == nil {
		e.DisableCustomAllReduce = &f
	}
	if e.CUDAGraphMode == "" {
		e.CUDAGraphMode = config.GraphFullAndPiecewise
	}
	if !*e.EnforceEager && e.CUDAGraphMode != config.GraphNone {
		e.CUDAGraphCaptureSizes = slices.Clone(et.CaptureSizes)
	}
}
