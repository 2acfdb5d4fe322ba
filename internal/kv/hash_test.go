package kv

import "testing"

// The mix is the splitmix64 finaliser including its increment, so mix
// applied to the generator's states 0, Seed, 2*Seed yields the published
// splitmix64 sequence for seed 0. Block(parent, {0}) = mix(parent), which
// pins the hash to values from outside this package: it must not change
// across runs, platforms or refactors (cached traces depend on it).
func TestBlockGolden(t *testing.T) {
	tests := []struct {
		parent uint64
		tokens []int32
		want   uint64
	}{
		{0, []int32{0}, 0xe220a8397b1dcdaf},
		{Seed, []int32{0}, 0x6e789e6aa1b965f4},
		{0x3c6ef372fe94f82a /* 2*Seed mod 2^64 */, []int32{0}, 0x06c45d188009454f},
		// One token XORs into the low 32 bits before mixing.
		{Seed ^ 7, []int32{7}, 0x6e789e6aa1b965f4},
		// A negative token id is taken as its uint32 bit pattern.
		{Seed ^ 0xffffffff, []int32{-1}, 0x6e789e6aa1b965f4},
		// Tokens chain: the second mixes into the first's result. mix(0) =
		// 0xe220a8397b1dcdaf; XORing its low 32 bits away leaves
		// 0xe220a83900000000, whose mix the reference computes.
		{0, []int32{0, 0x7b1dcdaf}, refMix(0xe220a83900000000)},
	}
	for i, tc := range tests {
		if got := Block(tc.parent, tc.tokens); got != tc.want {
			t.Errorf("case %d: Block(%#x, %v) = %#x, want %#x", i, tc.parent, tc.tokens, got, tc.want)
		}
	}
}

// refMix is splitmix64's output function written out independently.
func refMix(state uint64) uint64 {
	z := state + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func TestBlockDeterministicAndChained(t *testing.T) {
	a := []int32{1, 2, 3, 4}
	b := []int32{5, 6, 7, 8}
	c := []int32{9, 10, 11, 12}

	chain := func(blocks ...[]int32) []uint64 {
		var hs []uint64
		h := Seed
		for _, blk := range blocks {
			h = Block(h, blk)
			hs = append(hs, h)
		}
		return hs
	}

	h1, h2 := chain(a, b, c), chain(a, b, c)
	for i := range h1 {
		if h1[i] != h2[i] {
			t.Fatalf("block %d: not deterministic: %#x vs %#x", i, h1[i], h2[i])
		}
		if h1[i] == 0 {
			t.Fatalf("block %d hashed to 0", i)
		}
	}

	// Changing the first block changes every later hash, even though the
	// later blocks' tokens are equal: equal hashes mean equal prefixes.
	a2 := []int32{1, 2, 3, 5}
	h3 := chain(a2, b, c)
	for i := range h1 {
		if h3[i] == h1[i] {
			t.Errorf("block %d: hash unchanged after changing block 0", i)
		}
	}
	// Changing only the middle block keeps the first hash.
	h4 := chain(a, []int32{5, 6, 7, 9}, c)
	if h4[0] != h1[0] {
		t.Errorf("block 0 changed after changing block 1")
	}
	if h4[1] == h1[1] || h4[2] == h1[2] {
		t.Errorf("blocks 1..2 unchanged after changing block 1")
	}
	// The same tokens at a different position (different parent) hash
	// differently.
	if Block(Seed, b) == h1[1] {
		t.Errorf("block b hashes the same with and without prefix a")
	}
	// Token order matters within a block.
	if Block(Seed, []int32{1, 2}) == Block(Seed, []int32{2, 1}) {
		t.Errorf("token order ignored")
	}
	// -1 and 1 are different tokens.
	if Block(Seed, []int32{-1}) == Block(Seed, []int32{1}) {
		t.Errorf("negative token collides with positive")
	}
}

func TestPrivateDeterministicAndDistinct(t *testing.T) {
	tags := func(salt uint64, n int) []uint64 {
		var hs []uint64
		for i := range n {
			hs = append(hs, Private(salt, i))
		}
		return hs
	}
	s1, s1b, s2 := tags(42, 64), tags(42, 64), tags(43, 64)
	seen := map[uint64]bool{}
	for i := range s1 {
		if s1[i] != s1b[i] {
			t.Fatalf("block %d: not deterministic", i)
		}
		if s1[i] == 0 || s2[i] == 0 {
			t.Fatalf("block %d tagged 0", i)
		}
		// Different salts (owners) never share a block, at any position,
		// and an owner's blocks are all distinct.
		if seen[s1[i]] || seen[s2[i]] || s1[i] == s2[i] {
			t.Errorf("block %d: tag repeats within or across owners", i)
		}
		seen[s1[i]], seen[s2[i]] = true, true
	}
	// Salt and index do not commute.
	if Private(1, 2) == Private(2, 1) {
		t.Errorf("Private(1, 2) == Private(2, 1)")
	}
	// Private tags and content hashes of a first block don't collide for
	// small inputs.
	if Private(0, 0) == Block(Seed, []int32{0}) {
		t.Errorf("Private(0, 0) equals Block(Seed, {0})")
	}
}

// unmix inverts the splitmix64 finaliser (a bijection on uint64).
func unmix(z uint64) uint64 {
	z = unxorshift(z, 31)
	z *= inverse(0x94d049bb133111eb)
	z = unxorshift(z, 27)
	z *= inverse(0xbf58476d1ce4e5b9)
	z = unxorshift(z, 30)
	return z - 0x9e3779b97f4a7c15
}

func unxorshift(y uint64, s uint) uint64 {
	x := y
	for range 64 / s {
		x = y ^ x>>s
	}
	return x
}

// inverse is the multiplicative inverse of odd a modulo 2^64 (Newton).
func inverse(a uint64) uint64 {
	x := a
	for range 6 {
		x *= 2 - a*x
	}
	return x
}

// 0 means "no hash" in the pool, so neither function may return it, even
// for the one input of each whose mix is 0.
func TestHashNeverZero(t *testing.T) {
	zeroPre := unmix(0)
	if refMix(zeroPre) != 0 {
		t.Fatalf("unmix is wrong: mix(%#x) = %#x", zeroPre, refMix(zeroPre))
	}
	if got := Block(zeroPre, []int32{0}); got == 0 {
		t.Errorf("Block(%#x, {0}) = 0", zeroPre)
	}
	// A token moves the same preimage into the low 32 bits.
	if got := Block(zeroPre^0x1234, []int32{0x1234}); got == 0 {
		t.Errorf("Block with token 0x1234 = 0")
	}
	// Degenerate empty block with parent 0.
	if got := Block(0, nil); got == 0 {
		t.Errorf("Block(0, nil) = 0")
	}
	// Private: mix(mix(salt) ^ i) = 0 when mix(salt) = zeroPre ^ i.
	for i := range 3 {
		salt := unmix(zeroPre ^ uint64(i))
		if got := Private(salt, i); got == 0 {
			t.Errorf("Private(%#x, %d) = 0", salt, i)
		}
	}
}
