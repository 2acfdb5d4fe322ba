package calibrate

import (
	"math"
	"testing"

	"github.com/servesim/servesim/internal/perf"
)

// TestBundleSkew reads the skew alphas of the calibration bundle: the
// sample-weighted medians of its skew_fit.csv buckets, with and without a
// prefill chunk.
func TestBundleSkew(t *testing.T) {
	fsys := profiles(t)
	dir, err := perf.FindBundle(fsys, "RTXPRO6000", "Qwen/Qwen3-32B", "bf16", 1)
	if err != nil {
		t.Fatal(err)
	}
	mixed, decode, err := BundleSkew(fsys, dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(mixed-0.0755) > 1e-9 || math.Abs(decode-0.0319) > 1e-9 {
		t.Errorf("skew alphas %g (mixed) %g (decode), want 0.0755 and 0.0319", mixed, decode)
	}
	// A tp the bundle has no skew fit for has no correction.
	if m, d, err := BundleSkew(fsys, dir, 8); err != nil || m != 0 || d != 0 {
		t.Errorf("tp 8: %g %g %v, want 0 0 nil", m, d, err)
	}
}

func TestWeightedMedian(t *testing.T) {
	rows := []skewRow{{alpha: 5, weight: 1}, {alpha: 0.1, weight: 3}, {alpha: -2, weight: 1}, {alpha: 0.2, weight: 2}}
	if got := weightedMedian(rows); got != 0.1 {
		t.Errorf("weighted median %g, want 0.1", got)
	}
	if got := weightedMedian([]skewRow{{alpha: -1, weight: 1}}); got != 0 {
		t.Errorf("negative alpha clamps to %g, want 0", got)
	}
}
