package kv

import "fmt"

// Memory describes what one device of an instance holds, in bytes, in the
// terms of vLLM 0.19's memory profiling (vllm/v1/worker/gpu_worker.py,
// determine_available_memory, and vllm/utils/mem_utils.py): the KV cache
// gets Device × Utilization minus everything that is not KV cache.
type Memory struct {
	Device      int64   // device memory as CUDA reports it (torch.cuda.mem_get_info total)
	Utilization float64 // fraction the engine may use (gpu_memory_utilization)
	Weights     int64   // model weights and buffers resident on the device
	Activation  int64   // peak activation memory of the profiling pass (see ProfilePeak)
	NonTorch    int64   // memory allocated outside PyTorch during profiling (see NonTorchBytes)
	KVPerToken  int64   // KV bytes one token takes on this device
}

// Blocks returns how many KV blocks of blockSize tokens fit:
// floor((Device*Utilization - Weights - Activation - NonTorch) /
// (KVPerToken*blockSize)). It fails, naming the shortfall, when the rest
// alone does not fit.
func (m Memory) Blocks(blockSize int) (int, error) {
	if blockSize <= 0 {
		return 0, fmt.Errorf("block size must be > 0 tokens (got %d)", blockSize)
	}
	if m.KVPerToken <= 0 {
		return 0, fmt.Errorf("KV bytes per token must be > 0 (got %d)", m.KVPerToken)
	}
	budget := int64(float64(m.Device) * m.Utilization)
	free := budget - m.Weights - m.Activation - m.NonTorch
	if free <= 0 {
		return 0, fmt.Errorf("weights %.2f GiB + profiled activations %.2f GiB + non-torch memory %.2f GiB exceed the usable memory %.2f GiB (%.2f GiB x gpu_memory_utilization %.2f); use more tensor parallelism, a larger accelerator or a higher gpu_memory_utilization",
			gib(m.Weights), gib(m.Activation), gib(m.NonTorch), gib(budget), gib(m.Device), m.Utilization)
	}
	n := free / (m.KVPerToken * int64(blockSize))
	if n <= 0 {
		return 0, fmt.Errorf("only %.3f GiB left for KV cache, less than one block of %d tokens", gib(free), blockSize)
	}
	return int(n), nil
}

// ProfileShape is what the profiling pass's peak memory depends on.
type ProfileShape struct {
	// Tokens is max_num_batched_tokens: vLLM's profile_run runs the model
	// once over that many tokens.
	Tokens int
	// Seqs is max_num_seqs: the dummy sampler run then samples that many
	// rows of logits.
	Seqs int
	// Hidden, Intermediate, QKV (q + 2·kv output width) and Vocab are the
	// model's widths; TP divides the sharded ones.
	Hidden, Intermediate, QKV, Vocab int64
	TP, BytesPerElem                 int
}

// SamplerBytesPerLogit is the peak memory per logit of vLLM's dummy sampler
// run: the fp32 logits (4 B) plus the top-k/top-p sort's fp32 values and
// int64 indices (12 B). See docs/engine-time.md, "KV capacity".
const SamplerBytesPerLogit = 16

// ProfilePeak is the peak activation memory of vLLM 0.19's profiling pass
// on one rank: the forward pass over Tokens tokens holds, per token, the
// MLP's gate/up output (2·Intermediate/TP), its activation output
// (Intermediate/TP), the QKV projection output (QKV/TP) and one hidden
// state (Hidden), at BytesPerElem each; the sampler adds Seqs × Vocab ×
// SamplerBytesPerLogit (logits are gathered to the full vocabulary).
func ProfilePeak(s ProfileShape) int64 {
	tp := int64(max(s.TP, 1))
	perTok := (3*s.Intermediate+s.QKV)/tp + s.Hidden
	forward := int64(s.Tokens) * perTok * int64(s.BytesPerElem)
	sampler := int64(s.Seqs) * s.Vocab * SamplerBytesPerLogit
	return forward + sampler
}

// Non-torch memory that vLLM's profiling attributes to the engine (CUDA
// library workspaces; with TP > 1 also NCCL and custom all-reduce
// buffers), as vLLM's own memory-profiling logs report it.
const (
	NonTorchTP1   = 171_798_691 // 0.16 GiB
	NonTorchMulti = 214_748_364 // 0.20 GiB
)

// NonTorchBytes is the non-torch memory of one rank of a tp-way instance.
func NonTorchBytes(tp int) int64 {
	if tp > 1 {
		return NonTorchMulti
	}
	return NonTorchTP1
}

func gib(b int64) float64 { return float64(b) / (1 << 30) }
