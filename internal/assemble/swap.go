package assemble

import (
	"math"

	"github.com/servesim/servesim/internal/config"
)

// swapBlocks is an instance's host swap space in KV blocks for
// preemption_mode swap (0 with recompute): as vLLM v0 sizes it, each
// GPU's swap_space GiB divided by the bytes one block takes on that GPU
// (kvPerTokenPerGPU bytes per token).
func swapBlocks(eng config.Engine, kvPerTokenPerGPU int64) int {
	gib := eng.SwapSpaceGiB()
	if gib <= 0 || kvPerTokenPerGPU <= 0 {
		return 0
	}
	perBlock := float64(kvPerTokenPerGPU) * float64(eng.BlockSize)
	return int(math.Min(math.Floor(gib*(1<<30)/perBlock), float64(config.MaxBlocksPerInstance)))
}
