package kv

import (
	"testing"

	"pgregory.net/rapid"
)

const chainLen = 6

// chainHash is block i's hash in chain c: 3 chains of chainLen distinct
// hashes (from 16 up), apart from the 0..10 used for random hashes.
func chainHash(c, i int) uint64 { return uint64(16 + c*chainLen + i) }

// TestPoolProperties drives a pool with random sequences of Allocate,
// Commit, Match/EvictableHits/Acquire and Release across several owners.
// After every step the pool must pass Check (and the stricter white-box
// deepCheck), keep free + used = capacity, agree with the reference model
// block for block (free queue order, refcounts, hashes, index), and hold
// exactly as many references per block as the owners' tables name it.
// Releasing every table at the end must leave Free() == Capacity().
func TestPoolProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity := rapid.IntRange(1, 24).Draw(t, "capacity")
		caching := rapid.Bool().Draw(t, "caching")
		owners := rapid.IntRange(1, 5).Draw(t, "owners")
		d, err := newDriver(capacity, caching, owners)
		if err != nil {
			t.Fatal(err)
		}
		// A small hash universe so that hits, duplicates and evictions of
		// indexed content are frequent; 0 is the reserved "no hash".
		hash := rapid.Uint64Range(0, 10)
		owner := rapid.IntRange(0, owners-1)
		chain := rapid.IntRange(0, 2)

		t.Repeat(map[string]func(*rapid.T){
			"alloc": func(t *rapid.T) {
				o := owner.Draw(t, "owner")
				n := rapid.IntRange(0, capacity+1).Draw(t, "n")
				if err := d.alloc(o, n); err != nil {
					t.Fatal(err)
				}
			},
			"commit": func(t *rapid.T) {
				o := owner.Draw(t, "owner")
				i := rapid.IntRange(0, capacity).Draw(t, "index")
				if err := d.commit(o, i, hash.Draw(t, "hash")); err != nil {
					t.Fatal(err)
				}
			},
			// Commit an owner's table as a chain, block i as chain[c][i],
			// as the engine does for a request's full blocks.
			"commitChain": func(t *rapid.T) {
				o := owner.Draw(t, "owner")
				c := chain.Draw(t, "chain")
				for i := range d.tables[o] {
					if err := d.commit(o, i, chainHash(c, i)); err != nil {
						t.Fatal(err)
					}
				}
			},
			// Look up a prefix of a chain, possibly with one block
			// replaced by a random hash, as a request with a shared
			// prefix and diverging suffix does.
			"acquireChain": func(t *rapid.T) {
				o := owner.Draw(t, "owner")
				c := chain.Draw(t, "chain")
				n := rapid.IntRange(0, chainLen).Draw(t, "len")
				hs := make([]uint64, n)
				for i := range hs {
					hs[i] = chainHash(c, i)
				}
				if n > 0 && rapid.Bool().Draw(t, "diverge") {
					hs[rapid.IntRange(0, n-1).Draw(t, "at")] = hash.Draw(t, "hash")
				}
				want := rapid.IntRange(0, chainLen).Draw(t, "want")
				if err := d.acquire(o, hs, want); err != nil {
					t.Fatal(err)
				}
			},
			"acquire": func(t *rapid.T) {
				o := owner.Draw(t, "owner")
				hs := rapid.SliceOfN(hash, 0, 6).Draw(t, "hashes")
				want := rapid.IntRange(0, 6).Draw(t, "want")
				if err := d.acquire(o, hs, want); err != nil {
					t.Fatal(err)
				}
			},
			"release": func(t *rapid.T) {
				if err := d.release(owner.Draw(t, "owner")); err != nil {
					t.Fatal(err)
				}
			},
			"doubleRelease": func(t *rapid.T) {
				if err := d.releaseStale(owner.Draw(t, "owner")); err != nil {
					t.Fatal(err)
				}
			},
			"": func(t *rapid.T) {
				if err := d.verify(); err != nil {
					t.Fatal(err)
				}
			},
		})
		if err := d.releaseAll(); err != nil {
			t.Fatal(err)
		}
	})
}
