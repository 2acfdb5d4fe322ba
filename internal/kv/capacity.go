package kv

import "fmt"

// Memory describes what one device of an instance holds, in bytes.
type Memory struct {
	Device      int64   // device memory size
	Utilization float64 // fraction the engine may use (gpu_memory_utilization)
	Weights     int64   // model weights resident on the device
	Activation  int64   // peak activation and runtime reserve (see ActivationReserve)
	KVPerToken  int64   // KV bytes one token takes on this device
}

// Blocks returns how many KV blocks of blockSize tokens fit:
// floor((Device*Utilization - Weights - Activation) / (KVPerToken*blockSize)).
// It fails, naming the shortfall, when the weights and reserve alone do not
// fit.
func (m Memory) Blocks(blockSize int) (int, error) {
	if blockSize <= 0 {
		return 0, fmt.Errorf("block size must be > 0 tokens (got %d)", blockSize)
	}
	if m.KVPerToken <= 0 {
		return 0, fmt.Errorf("KV bytes per token must be > 0 (got %d)", m.KVPerToken)
	}
	budget := int64(float64(m.Device) * m.Utilization)
	free := budget - m.Weights - m.Activation
	if free <= 0 {
		return 0, fmt.Errorf("weights %.2f GB + activation reserve %.2f GB exceed the usable memory %.2f GB (%.2f GB x gpu_memory_utilization %.2f); use more tensor parallelism, a larger accelerator or a higher gpu_memory_utilization",
			gb(m.Weights), gb(m.Activation), gb(budget), gb(m.Device), m.Utilization)
	}
	n := free / (m.KVPerToken * int64(blockSize))
	if n <= 0 {
		return 0, fmt.Errorf("only %.3f GB left for KV cache, less than one block of %d tokens", gb(free), blockSize)
	}
	return int(n), nil
}

// ActivationReserve estimates the memory vLLM sets aside besides weights
// and KV cache, per device: the peak activations of a forward pass over
// maxBatchedTokens tokens (the MLP's gate/up output, 2*intermediate/tp
// values per token, plus hidden-state buffers, 4*hidden per token), the
// fp32 logits of maxSeqs sequences (vocab values each, held twice by the
// sampler), and a fixed 1.5 GiB of CUDA context, library workspaces and
// CUDA-graph pools. It is an estimate; num_gpu_blocks overrides the result.
func ActivationReserve(maxBatchedTokens, maxSeqs int, hidden, intermediate, vocab int64, tp, bytesPerElem int) int64 {
	tokens := int64(maxBatchedTokens)
	act := tokens * (2*intermediate/int64(tp) + 4*hidden) * int64(bytesPerElem)
	logits := int64(maxSeqs) * vocab * 4 * 2 // gathered to full vocabulary for sampling
	const runtime = 3 << 29                  // 1.5 GiB
	return act + logits + runtime
}

func gb(b int64) float64 { return float64(b) / 1e9 }
