// Package kv models a paged KV cache: a fixed pool of equal-size blocks,
// reference-counted so several requests can share cached prefix blocks, with
// a prefix cache keyed by chained block hashes and least-recently-freed
// eviction.
//
// Vocabulary:
//   - block: block_size token slots of K and V for every layer; the unit of
//     allocation.
//   - free block: a block no request references. A free block may still hold
//     cached content (it has a hash) and can be hit by a later request until
//     it is evicted, which happens when it is taken for a new allocation.
//   - chained hash: the hash of block i covers its tokens and the hash of
//     block i-1, so equal hashes mean equal prefixes, not just equal blocks.
//
// Content that only its owner can ask for again (tagged by a request's
// identity, see Private) is committed as private: the block counts as
// cached until evicted, but the shared index never sees it, so the index
// holds only shareable prefixes and stays small. The pool records a
// private block's tag only when its owner asks it to (TagPrivate, when the
// request is preempted and will look for its blocks again with Holds).
//
// Free blocks sit in one queue ordered by the time they were freed; an
// allocation takes from the front (least recently freed), a released block
// goes to the back, and a prefix hit pulls a free block out of the middle.
// The queue is a ring of block ids with their content kind, and of runs
// of anonymous blocks (below) with their kind and number, so allocation
// reads it sequentially and a released table's blocks of one kind take
// one entry; a hit leaves a hole, and a full ring is compacted. All operations are O(1) per block (amortised) and
// allocation-free in steady state.
//
// Block ids follow vLLM's only where they matter. A free block without
// content, or with private content nobody tagged, can never be looked for:
// it is anonymous, its queue entry keeps only its content kind (so the
// eviction order and the cached counts are exactly vLLM's), and an
// allocation that reaches such an entry hands out an anonymous id chosen
// for memory locality (Pool.anon): the one after the table's last block if
// it is anonymous, else the lowest anonymous id. With many pools the
// per-block words of the ids in use then stay in the CPU cache and a
// request's words share cache lines. Which id a request gets changes
// nothing the simulator reports.
//
// Conservation: at every moment free + referenced = capacity. Check reports
// any violation; the engine calls it after each step when invariant checking
// is on.
package kv
