package testseed

import (
	"flag"
	"os"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// TestSeedIsFixed: without RAPID_SEED, rapid's base seed is Seed, so two
// runs of a property draw the same cases (rapid.Check's first case here
// is drawn from it; a random base seed would give another value on the
// second run with overwhelming probability).
func TestSeedIsFixed(t *testing.T) {
	if _, set := os.LookupEnv("RAPID_SEED"); set {
		t.Skip("RAPID_SEED is set: the seed is the caller's")
	}
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "rapid.seed" })
	if explicit {
		t.Skip("-rapid.seed was given: the seed is the caller's")
	}
	if got := flag.Lookup("rapid.seed").Value.String(); got != strconv.FormatUint(Seed, 10) {
		t.Fatalf("-rapid.seed is %s, want %d", got, Seed)
	}
	first := func() uint64 {
		var v uint64
		done := false
		rapid.Check(t, func(rt *rapid.T) {
			x := rapid.Uint64().Draw(rt, "x")
			if !done {
				v, done = x, true
			}
		})
		return v
	}
	if a, b := first(), first(); a != b {
		t.Fatalf("two checks drew %d and %d first: the seed is not fixed", a, b)
	}
}
