package perfdb

import (
	"math"
	"testing"
)

// The MoE rows are selected by routing distribution: Qwen3-30B-A3B's block
// (hidden 2048, expert width 768, top-8 of 128 experts) on one of two
// expert-parallel ranks of rtx_pro_6000_server, at a measured token count
// and halfway between two. Rows of moe_perf (vllm 0.19.0): balanced 96
// tokens 0.439184 ms, 128 tokens 0.447307 ms; power_law_1.01 0.402016
// and 0.421696 ms.
func TestMoERowsByDistribution(t *testing.T) {
	db, err := Open(Embedded(), "rtx_pro_6000_server", "vllm", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dist         string
		at128, at112 float64 // ns
	}{
		{"balanced", 447307, (439184 + 447307) / 2.0},
		{"power_law_1.01", 421696, (402016 + 421696) / 2.0},
	} {
		k, err := db.Kernels(Shape{Heads: 32, KVHeads: 4, HeadDim: 128,
			MoE: &MoEShape{Dtype: "bfloat16", Distribution: c.dist, Hidden: 2048, Inter: 768, TopK: 8, Experts: 128, TP: 1, EP: 2}})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct{ tokens, want float64 }{{128, c.at128}, {112, c.at112}} {
			got, ok := k.MoEAt(p.tokens)
			if !ok || math.Abs(got-p.want) > 1 { // rows printed to the ns
				t.Errorf("%s at %g tokens: %g ns (%v), want %g", c.dist, p.tokens, got, ok, p.want)
			}
		}
	}
}
