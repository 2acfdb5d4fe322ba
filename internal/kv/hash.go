package kv

// Chained block hashes: block i's hash mixes the previous block's hash with
// the block's token ids, a fixed 64-bit mix (splitmix64 finaliser),
// deterministic across runs and platforms.

// Seed is the parent hash of a request's first block. Requests whose token
// ids are unknown use a per-request salt instead (see Salted) so that their
// blocks never match another request's.
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

// Salted returns the chained hash of block index i of content known only by
// identity (no token ids): salt distinguishes the owner.
func Salted(parent, salt uint64, i int) uint64 {
	h := mix(parent ^ mix(salt+uint64(i)*0x94d049bb133111eb))
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
