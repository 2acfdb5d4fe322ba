package perf

import "fmt"

// EPRankTimer times the MoE block of one expert-parallel rank of a
// data-parallel group with the roofline, the way vLLM 0.19 runs it with
// all2all_backend allgather_reducescatter: every rank runs the router on
// its own tokens, the hidden states of all DP ranks are gathered, and the
// rank runs its local experts (whole, not tensor-sharded) as grouped GEMMs
// on the routed (token, expert) pairs that reach them. It implements the
// moe package's LayerTimer; the collectives are priced there.
type EPRankTimer struct {
	r      *Roofline
	dp, ep float64
	routed bool // only the rank's routed pairs arrive (RoutedOnly)
}

// RoutedOnly is the timer under vLLM's DeepEP backends, which deliver to a
// rank only the (token, expert) pairs routed to its experts: the
// activations count those pairs, P = T·k/ep, not every gathered pair.
func (t EPRankTimer) RoutedOnly() EPRankTimer {
	t.routed = true
	return t
}

// EPRank returns the MoE block timer of one rank of a group of dp
// data-parallel ranks with the experts sharded over ep = dp × tp GPUs.
func (r *Roofline) EPRank(dp, ep int) (EPRankTimer, error) {
	switch {
	case r.experts == 0:
		return EPRankTimer{}, fmt.Errorf("roofline: expert parallelism needs an MoE model (no routed experts)")
	case dp < 1 || ep < 1 || ep != dp*r.tp:
		return EPRankTimer{}, fmt.Errorf("roofline: ep must be dp x tp = %d x %d, got %d", dp, r.tp, ep)
	case r.experts < ep:
		return EPRankTimer{}, fmt.Errorf("roofline: %d experts cannot fill ep %d ranks", r.experts, ep)
	}
	return EPRankTimer{r: r, dp: float64(dp), ep: float64(ep)}, nil
}

// MoELayerNs is one MoE block on the rank, in ns. tokens is the gathered
// token count the rank's load corresponds to (its routed pairs are
// P = tokens × k / ep) and activated the distinct local experts they reach:
//
//	flops = 2·(T/dp)·h·E                  router, on the rank's own tokens
//	      + 2·P·h·3·I                     gate_up and down of its P pairs
//	      + 2·(T/dp)·h·3·S/tp             shared experts, own tokens
//	bytes = (a·3·h·I + 3·h·S/tp)·wb       weights of a activated local experts
//	      + h·E·b                         router weights
//	      + (2·T·k·h + 3·T·k·I)·b         activations of every gathered pair
//
// with I the whole expert's MLP width (experts are not tensor-sharded under
// EP) and S the shared experts' width; time = 4 launches + the smooth
// maximum of compute and memory time, as the roofline's MoE op. The
// activations count every gathered pair because vLLM's fused MoE runs its
// alignment, activation and final sum over all of them: pairs of experts
// held elsewhere are mapped to expert -1 and only their GEMM tiles are
// skipped, written as zeros (fused_moe_kernel in
// vllm/model_executor/layers/fused_moe/fused_moe.py). Quantised expert
// weights use the quantised peak as the MoE op does. With dp = ep = 1 it
// equals Roofline.MoENs.
func (t EPRankTimer) MoELayerNs(tokens, activated float64) float64 {
	r := t.r
	if r == nil || !(tokens > 0) {
		return 0
	}
	h, e, k := r.h, float64(r.experts), float64(r.expertsTopK)
	inter := float64(r.m.MoEIntermediate)
	own := tokens / t.dp
	pairs := tokens * k / t.ep
	ae := min(max(activated, 1), e/t.ep)
	rflops := 2 * own * h * e
	xflops := 2*pairs*h*3*inter + 2*own*h*3*r.sharedInter
	w := ae*3*h*inter + 3*h*r.sharedInter
	gatheredPairs := tokens * k
	if t.routed {
		gatheredPairs = pairs
	}
	act := h*e + 2*gatheredPairs*h + gatheredPairs*3*inter
	if r.quant {
		tc := rflops/r.flopRate + xflops/r.qFlopRate
		return 4*r.eff.LaunchNs + softMax(tc*1e9, (w*r.wb+act*r.b)/r.memRate*1e9, r.invP)
	}
	return 4*r.eff.LaunchNs + softMax((rflops+xflops)/r.flopRate*1e9, (w+act)*r.b/r.memRate*1e9, r.invP)
}
