package perfdb

import "testing"

// The MLA module tables of h200_sxm (AIConfigurator, vLLM 0.19.0) read at
// measured points: one decode of DeepSeek-V3's 128 heads (tp 1, bf16) with
// 2 tokens of context measured 0.1634 ms, read as 0.1629 ms (the curve is
// made non-decreasing in the context: the 8-token row measured 0.1629 ms);
// 16 heads, 256 decodes of 8,192 tokens 0.6753 ms.
func TestMLAModuleTables(t *testing.T) {
	db, err := Open(Embedded(), "h200_sxm", "vllm", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(db.MLAContext) == 0 || len(db.MLAGeneration) == 0 {
		t.Fatalf("MLA rows: %d context, %d generation", len(db.MLAContext), len(db.MLAGeneration))
	}
	for _, tt := range []struct {
		heads, n int
		ctx      float64
		want     float64
	}{
		{128, 1, 2, 162_900},
		{16, 256, 8192, 675_300},
	} {
		k, err := db.Kernels(Shape{GEMMDtype: "bfloat16", Heads: tt.heads, KVHeads: tt.heads, HeadDim: 192, KVDtype: "bfloat16", MLA: true})
		if err != nil {
			t.Fatal(err)
		}
		got, ok := k.MLAGeneration(tt.n, tt.ctx)
		if !ok || got < tt.want-1 || got > tt.want+1 {
			t.Errorf("heads %d, %d decodes at %g: %g ns (%v), want %g", tt.heads, tt.n, tt.ctx, got, ok, tt.want)
		}
	}
	// Without MLA in the shape, or for a head count never measured, no
	// lookup succeeds.
	k, err := db.Kernels(Shape{Heads: 128, KVHeads: 128, HeadDim: 192})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := k.MLAGeneration(1, 2); ok {
		t.Error("MLA lookup without Shape.MLA")
	}
	k, err = db.Kernels(Shape{Heads: 3, KVHeads: 3, HeadDim: 192, MLA: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := k.MLAContext(1, 100); ok {
		t.Error("MLA lookup for 3 heads")
	}
}
