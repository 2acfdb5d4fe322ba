// Package kvtier models the KV-cache tiers below the GPU: per node, a
// host-DRAM tier shared by the node's GPUs and optionally a local-disk
// tier, as vLLM's KV offloading connector and LMCache keep them.
//
// # Vocabulary
//
//   - Chunk: ChunkTokens consecutive tokens (a whole number of GPU
//     blocks), the unit a tier stores, keyed by the chained content hash
//     of its last block (which names the whole prefix up to it). Partial
//     chunks are never stored.
//   - Tier: a fixed number of chunk slots. Each slot is in exactly one
//     state: free, writing (a store in flight), stored (readable,
//     evictable) or reading (loads in flight; not evictable). Eviction is
//     least recently used among stored chunks.
//   - Hierarchy: every node's tiers plus the copies between them and the
//     GPUs, timed on a [link.Network]: each GPU has a PCIe endpoint
//     (host<->device bandwidth per direction, per-copy latency); each tier
//     has a read endpoint and a write endpoint (its read and write
//     bandwidth, per-operation latency). A load is a flow per GPU from
//     the tier's read side to the GPU's PCIe ingress; a store a flow per
//     GPU from the GPU's PCIe egress to the host's write side; a spill to
//     disk one flow from the host's read side to the disk's write side.
//     Concurrent copies share those resources max-min fairly.
//
// # Contracts
//
// Stores are write-behind: they never delay an engine step, and the
// chunks become readable when the copy ends. A store finding the tier
// full of chunks being written or read is dropped and counted. Lookups
// only see readable chunks, contiguous from the end of the GPU hit, all in
// one tier (host first). A load pins its chunks until it ends. The
// hierarchy is a deterministic state machine: time is passed in, nothing
// is random, no map is iterated to decide anything.
package kvtier
