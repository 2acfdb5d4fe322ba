package perfdb

import (
	"errors"
	"io/fs"
	"math"
	"testing"
)

// TestDeepEPTables: the embedded H200 DeepEP tables read back rows of the
// AIConfigurator files (DeepSeek-V3's shape: hidden 7168, top-8 of 256
// experts, one node of 8): low-latency at 128 tokens a rank 35.119 us
// dispatch and 67.745 us combine; normal kernels at 20 SMs and 4,096 tokens
// 494.151 us and 996.010 us; between grid points linear; outside them
// nothing.
func TestDeepEPTables(t *testing.T) {
	v3 := DeepEPShape{Hidden: 7168, TopK: 8, Experts: 256}
	ll, err := OpenDeepEP(Embedded(), "h200_sxm", true)
	if err != nil {
		t.Fatal(err)
	}
	d, c, ok := ll.At(v3, 128)
	if !ok || math.Abs(d-35_119) > 0.5 || math.Abs(c-67_745) > 0.5 {
		t.Errorf("LL 128 tokens: %g, %g ns (%v), want 35119, 67745", d, c, ok)
	}
	d96, _, _ := ll.At(v3, 96) // halfway between 64 (22.994 us) and 128
	if want := (22_994 + 35_119) / 2.0; math.Abs(d96-want) > 0.5 {
		t.Errorf("LL 96 tokens: dispatch %g ns, want %g", d96, want)
	}
	if _, _, ok := ll.At(v3, 1e6); ok {
		t.Error("LL above the grid answered")
	}
	if _, _, ok := ll.At(DeepEPShape{Hidden: 5120, TopK: 8, Experts: 256}, 128); ok {
		t.Error("an unmeasured shape answered")
	}
	ht, err := OpenDeepEP(Embedded(), "h200_sxm", false)
	if err != nil {
		t.Fatal(err)
	}
	d, c, ok = ht.At(v3, 4096)
	if !ok || math.Abs(d-494_151) > 1 || math.Abs(c-996_010) > 1 {
		t.Errorf("normal 4096 tokens: %g, %g ns (%v), want 494151, 996010", d, c, ok)
	}
	if _, err := OpenDeepEP(Embedded(), "a100_sxm", true); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a100_sxm: %v, want not-exist", err)
	}
}
