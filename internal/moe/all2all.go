package moe

import (
	"math"
)

// Fabric is where an expert-parallel group's all-to-all traffic runs: the
// EP ranks, how many of them share one NVLink domain (a node), and the two
// links' raw per-direction rates.
type Fabric struct {
	// EP is the number of expert-parallel ranks.
	EP int
	// NodeRanks is the number of EP ranks on one node (NVLink domain),
	// 1..EP; the group spans EP/NodeRanks nodes.
	NodeRanks int
	// NVLinkBW is a GPU's NVLink rate per direction, bytes/s.
	NVLinkBW float64
	// NICBW is a GPU's NIC rate per direction, bytes/s.
	NICBW float64
}

// Nodes is the number of nodes the group spans.
func (f Fabric) Nodes() int { return (f.EP + f.NodeRanks - 1) / f.NodeRanks }

// Spans says whether the group crosses nodes.
func (f Fabric) Spans() bool { return f.EP > f.NodeRanks }

// VLLMMoEDPChunkSize is vLLM's VLLM_MOE_DP_CHUNK_SIZE default (vllm/envs.py):
// the most tokens a rank sends through one call of a batched all-to-all
// (DeepEP low-latency); a layer with more runs in chunks (Config.ChunkTokens).
const VLLMMoEDPChunkSize = 256

// DeepEP kernel constants (docs/wide-ep.md, "DeepEP"). Each is read from a
// published measurement, named beside it; the rest of those measurements
// are checks (moe's all2all tests).
const (
	// DeepEPNVLinkEff is the fraction of the NVLink rate DeepEP's kernels
	// move inside a node: AIConfigurator's H200 DeepEP tables (sglang
	// 0.5.12, hidden 7168, top-8 of 256 experts, one node of 8) give
	// 285/233 GB/s for the low-latency dispatch/combine of 128 tokens a
	// rank and 294/285 GB/s for the normal kernels at 4,096 tokens and 24
	// SMs, 0.52-0.65 of NVLink4's 450 GB/s.
	DeepEPNVLinkEff = 0.6
	// DeepEPNICEff is the fraction of the NIC's line rate DeepEP moves
	// across nodes: DeepEP's README (legacy kernels, H800 with CX7 400
	// Gb/s) reports 43-58 GB/s RDMA bottleneck bandwidth for the normal
	// kernels on ~50 GB/s NICs, i.e. the line rate.
	DeepEPNICEff = 1.0
	// DeepEPLLIntraNs is the fixed cost of one low-latency dispatch or
	// combine inside a node: AIConfigurator's H200 rows at one token a
	// rank, 11.9 us dispatch and 12.6 us combine.
	DeepEPLLIntraNs = 12_000
	// DeepEPLLInterDispatchNs and DeepEPLLInterCombineNs are the fixed
	// costs of a low-latency dispatch and combine across nodes: DeepEP's
	// README EP 16 rows (118 us and 195 us for 128 tokens a rank, top-8,
	// hidden 7168, FP8 dispatch, BF16 combine) less their bytes over a
	// 50 GB/s NIC (75.7 us and 146.8 us).
	DeepEPLLInterDispatchNs = 42_000
	DeepEPLLInterCombineNs  = 48_000
	// DeepEPHTIntraDispatchNs and DeepEPHTIntraCombineNs are the fixed
	// costs of a normal (high-throughput) dispatch and combine inside a
	// node: AIConfigurator's H200 rows at one token, 27 us and 47 us.
	DeepEPHTIntraDispatchNs = 27_000
	DeepEPHTIntraCombineNs  = 47_000
)

// DeepEP times vLLM's deepep_low_latency and deepep_high_throughput
// backends: per MoE layer one dispatch of the hidden states to the ranks
// holding each token's experts and one combine of the experts' outputs
// back.
//
// Low-latency kernels send every (token, expert) pair on its own, over
// NVLink to a rank on the same node and RDMA to the others; a rank's
// dispatch moves P × DispatchBytes, P = max(its tokens × k, the pairs the
// busiest rank receives), the NodeRanks/EP share of it inside the node
// (its own share, 1/EP, costs nothing) and the rest on the NIC:
//
//	t = fixed + max(P·b·(1 − NodeRanks/EP) / (NICEff·NIC),
//	                P·b·(NodeRanks − 1)/EP / (NVLinkEff·NVLink))
//
// Normal kernels send a token once per destination node over RDMA and
// forward it over NVLink to the ranks there; per token the expected
// distinct remote nodes are (Nodes − 1)·(1 − C(E − E_n, k)/C(E, k)) and
// the distinct other ranks (EP − 1)·(1 − C(E − E_r, k)/C(E, k)), E_n and E_r
// the experts on one node and one rank (uniform routing). Inside one node
// the same formula has no RDMA term. The fixed cost across nodes adds the
// low-latency kernels' inter-node step (an assumption: no published row).
type DeepEP struct {
	Fabric
	// LowLatency picks the low-latency kernels (else the normal ones).
	LowLatency bool
	// DP is the number of ranks that contribute tokens: each sends
	// gathered/DP of them.
	DP int
	// TopK and Experts are the routing's k and E (physical experts).
	TopK, Experts int
	// DispatchBytes and CombineBytes are one token's hidden state as
	// dispatched (FP8 with a scale per 128 elements, or BF16) and as
	// combined (BF16).
	DispatchBytes, CombineBytes float64
	// Measured, when set, times one dispatch and one combine inside a
	// node at tokens a rank from a measured table; ok is false outside
	// it, where the model above answers.
	Measured func(tokens float64) (dispatchNs, combineNs float64, ok bool)
}

// LayerNs implements Dispatch: one dispatch and one combine.
func (d DeepEP) LayerNs(gathered int, busiest float64) int64 {
	dn, cn, _ := d.Phases(gathered, busiest)
	return clamp(dn + cn)
}

// Phases is one dispatch and one combine (ns) of a layer at gathered
// tokens with the busiest rank receiving busiest pairs, and whether they
// came from the Measured table.
func (d DeepEP) Phases(gathered int, busiest float64) (dispatchNs, combineNs float64, measured bool) {
	if gathered <= 0 || d.EP <= 1 {
		return 0, 0, false
	}
	tokens := float64(gathered) / float64(max(d.DP, 1))
	if d.Measured != nil && !d.Spans() {
		at := tokens
		if d.LowLatency {
			at = max(tokens, busiest/float64(d.TopK))
		}
		if dn, cn, ok := d.Measured(at); ok {
			return dn, cn, true
		}
	}
	if d.LowLatency {
		pairs := max(tokens*float64(d.TopK), busiest)
		return d.llNs(pairs, d.DispatchBytes, true), d.llNs(pairs, d.CombineBytes, false), false
	}
	return d.htNs(tokens, d.DispatchBytes, true), d.htNs(tokens, d.CombineBytes, false), false
}

// llNs is one low-latency dispatch (or combine) of pairs messages of b
// bytes.
func (d DeepEP) llNs(pairs, b float64, dispatch bool) float64 {
	ep, node := float64(d.EP), float64(min(d.NodeRanks, d.EP))
	bytes := pairs * b
	nvl := bytes * (node - 1) / ep / (DeepEPNVLinkEff * d.NVLinkBW) * 1e9
	if !d.Spans() {
		return DeepEPLLIntraNs + nvl
	}
	rdma := bytes * (1 - node/ep) / (DeepEPNICEff * d.NICBW) * 1e9
	fixed := float64(DeepEPLLInterCombineNs)
	if dispatch {
		fixed = DeepEPLLInterDispatchNs
	}
	return fixed + max(rdma, nvl)
}

// htNs is one normal dispatch (or combine) of tokens of b bytes.
func (d DeepEP) htNs(tokens, b float64, dispatch bool) float64 {
	e, k := d.Experts, d.TopK
	perRank := e / d.EP
	ranks := float64(min(d.NodeRanks, d.EP)-1) * (1 - missAll(e, perRank, k))
	if d.Spans() {
		// The other ranks anywhere: the NVLink forwarding fans out to them.
		ranks = float64(d.EP-1) * (1 - missAll(e, perRank, k)) * float64(d.NodeRanks-1) / float64(d.NodeRanks)
	}
	nvl := tokens * ranks * b / (DeepEPNVLinkEff * d.NVLinkBW) * 1e9
	fixed := float64(DeepEPHTIntraCombineNs)
	if dispatch {
		fixed = DeepEPHTIntraDispatchNs
	}
	if !d.Spans() {
		return fixed + nvl
	}
	nodes := float64(d.Nodes()-1) * (1 - missAll(e, perRank*d.NodeRanks, k))
	rdma := tokens * nodes * b / (DeepEPNICEff * d.NICBW) * 1e9
	inter := float64(DeepEPLLInterCombineNs - DeepEPLLIntraNs)
	if dispatch {
		inter = DeepEPLLInterDispatchNs - DeepEPLLIntraNs
	}
	return fixed + inter + max(rdma, nvl)
}

// missAll is the chance that none of a token's k distinct experts, drawn
// uniformly from e, is among a given held of them: C(e−held, k)/C(e, k).
func missAll(e, held, k int) float64 {
	if held >= e {
		return 0
	}
	p := 1.0
	for i := 0; i < k; i++ {
		p *= float64(e-held-i) / float64(e-i)
		if p <= 0 {
			return 0
		}
	}
	return p
}

// clamp rounds ns to an int64, saturating.
func clamp(ns float64) int64 {
	if !(ns < math.MaxInt64/2) {
		return math.MaxInt64
	}
	return int64(math.Round(ns))
}
