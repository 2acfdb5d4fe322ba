// Package moe times the mixture-of-experts part of one step of a
// data-parallel (DP) group with expert parallelism (EP), the way vLLM 0.19
// runs it on one node with its default all2all_backend
// allgather_reducescatter:
//
//   - every MoE layer all-gathers the hidden states of the tokens of all DP
//     ranks (each rank contributes its padded token count), so every EP rank
//     runs its local experts on the gathered tokens routed to them, then
//     reduce-scatters the results back to the ranks that own the tokens;
//   - the experts are sharded contiguously: EP rank r holds experts
//     [r·E/ep, (r+1)·E/ep);
//   - the layer lasts as long as its busiest EP rank.
//
// Vocabulary. Gathered tokens T: the tokens of one step summed over the DP
// ranks (after padding). Routed pairs: T × top-k (token, expert) pairs per
// layer. A rank's load L_r: the pairs routed to its local experts. Its
// share q_r: the expected fraction of pairs it receives, from the expert
// popularity (uniform, or Zipf with a skew, its ranking shuffled per layer
// with the seed).
//
// Loads are an aggregate draw per layer and rank, never per token: L_r is
// drawn as a binomial of the pairs not yet assigned (normal approximation),
// rank after rank, from a seeded stream. The busiest rank's layer time is
// the single-rank profile (moe.csv, per EP rank) at L_max·ep/k tokens (T
// itself under a perfectly balanced load) and the distinct local experts
// those tokens activate, E_l·(1 − (1 − k/E)^tokens). The collectives are an NCCL
// all-gather and a reduce-scatter of T × hidden × bytes per layer over the
// node's GPU link (perf.AllReduce.GatherNs for both).
//
// Other all-to-all backends implement [Dispatch]: [DeepEP] times DeepEP's
// low-latency and normal kernels on a [Fabric] of NVLink inside a node and
// NICs across nodes (all2all.go), from a measured table inside one node
// when one is given. Around them (docs/wide-ep.md):
//
//   - EPLB (eplb.go): redundant physical experts, vLLM's initial linear
//     placement, and at the step interval the rebalanced placement of its
//     global policy (replicate the hottest experts, pack heaviest first);
//   - dual-batch overlap (dbo.go): a step as two micro-batches alternating
//     on a compute and a communication stream ([Model.Overlapped]);
//   - chunking: the low-latency backend's layers of more than
//     [VLLMMoEDPChunkSize] tokens a rank run in chunks (Config.ChunkTokens).
//
// A Model is stateful (its random stream) and belongs to one simulation; it
// is deterministic for a seed and does not allocate per step.
package moe
