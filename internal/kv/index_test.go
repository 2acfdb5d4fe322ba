package kv

import (
	"testing"

	"pgregory.net/rapid"
)

// TestIndexMatchesMap drives the open-addressing index and a Go map with
// the same random puts and deletes (keys chosen to collide often).
func TestIndexMatchesMap(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		x := newIndex()
		m := map[uint64]BlockID{}
		for i := 0; i < rapid.IntRange(1, 3000).Draw(rt, "ops"); i++ {
			k := uint64(rapid.IntRange(1, 3000).Draw(rt, "k"))
			if rapid.Bool().Draw(rt, "put") {
				if _, ok := m[k]; !ok {
					m[k] = BlockID(i)
					x.put(k, BlockID(i))
				}
			} else {
				delete(m, k)
				x.del(k)
			}
		}
		if x.len() != len(m) {
			rt.Fatalf("len %d, map %d", x.len(), len(m))
		}
		for k := uint64(1); k <= 3000; k++ {
			got, ok := x.get(k)
			want, wok := m[k]
			if ok != wok || got != want {
				rt.Fatalf("key %d: index (%d,%v), map (%d,%v)", k, got, ok, want, wok)
			}
		}
	})
}
