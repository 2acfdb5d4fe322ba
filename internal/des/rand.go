package des

import (
	"hash/fnv"
	"math/rand/v2"
)

// Stream returns a random source dedicated to one purpose ("arrivals",
// "input-lengths", "routing", ...). Streams with different purposes are
// independent, and adding a new purpose never changes the numbers another
// purpose draws, so results stay comparable across versions.
func Stream(seed uint64, purpose string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(purpose))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}
