package kv

// Chained block hashes: block i's hash mixes the previous block's hash with
// the block's token ids, a fixed 64-bit mix (splitmix64 finaliser),
// deterministic across runs and platforms.

// Seed is the parent hash of a request's first block. Blocks whose token
// ids are unknown (and every later block of the same request) are tagged
// by the request's identity instead (see Private), so that they never
// match another request's.
const Seed uint64 = 0x9e3779b97f4a7c15

// Block returns the chained hash of one full block with the given parent.
func Block(parent uint64, tokens []int32) uint64 {
	h := parent
	for _, t := range tokens {
		h = mix(h ^ uint64(uint32(t)))
	}
	if h == 0 { // 0 means "no hash" in the pool
		h = 1
	}
	return h
}

// Private returns the tag of block index i of content only its owner can
// ever ask for again: any block of a request after the first one whose
// token ids are unknown (salt distinguishes the owner). It identifies the
// block's content as well as its chained hash would, for that owner, and
// needs no chain: the owner recomputes it from (salt, i) alone.
func Private(salt uint64, i int) uint64 {
	h := mix(mix(salt) ^ uint64(i))
	if h == 0 {
		h = 1
	}
	return h
}

func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
