package assemble

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/quant"
)

// checkSpan refuses a data-parallel instance larger than one node (or
// NVLink domain) that does not fill whole nodes: vLLM places
// data_parallel_size_local ranks on each node, and servesim's all-to-all
// model counts the ranks per node as equal.
func checkSpan(gs *groupShape, acc hw.Accelerator) error {
	dp, tp, pp, link := gs.dp, gs.tp, gs.pp, gs.linkGPUs
	gpus := dp * tp * pp
	if dp <= 1 || link <= 0 || gpus <= link {
		return nil
	}
	if acc.NIC.HostPath {
		return fmt.Errorf("dp %d x tp %d = %d GPUs exceed one node of %d %s GPUs, and %s has no network card to cross nodes; use fewer ranks", dp, tp, gpus, link, acc.Name, acc.Name)
	}
	if gpus%link != 0 || link%tp != 0 {
		return fmt.Errorf("dp %d x tp %d = %d GPUs span nodes of %d %s GPUs unevenly; a data-parallel instance across nodes fills whole nodes (vLLM's data_parallel_size_local ranks on each): use dp x tp a multiple of %d", dp, tp, gpus, link, acc.Name, link)
	}
	return nil
}

// deepEPDispatchBytes is one token's hidden state as DeepEP dispatches it:
// FP8 with one float32 scale per 128 elements when the experts run block
// FP8 (vLLM quantises before the dispatch), BF16 otherwise.
func deepEPDispatchBytes(hidden int64, qf quant.Format) float64 {
	if qf.Method == quant.FP8 && qf.Block != [2]int{} {
		return float64(hidden) + float64((hidden+127)/128*4)
	}
	return float64(2 * hidden)
}

// redundantExpertBytes is the weight memory one GPU spends on its share of
// EPLB's redundant experts: redundant/E of the routed experts' weights,
// over ep ranks.
func redundantExpertBytes(m *model.Config, redundant, ep int, qf quant.Format) int64 {
	if redundant <= 0 || ep <= 1 || m.NumExperts <= 0 {
		return 0
	}
	perExpert := float64(m.RoutedExpertParams()) * qf.WeightBytes() / float64(m.NumExperts)
	return int64(math.Ceil(perExpert * float64(redundant) / float64(ep)))
}
