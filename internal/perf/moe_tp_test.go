package perf

import (
	"testing"
	"testing/fstest"
)

const tinyMoECatalog = `
sequence:
  prologue:  [embedding]
  pre_attn:  [attention]
  post_attn: []
  mlp_dense: []
  mlp_moe:   [moe]
  head:      [lm_head]
catalog:
  dense:
    embedding: {}
  per_sequence:
    lm_head: {}
  attention:
    attention: {}
  moe:
    moe: {}
`

// tp1/moe.csv: 8 experts, top-2. One token activates 2 experts (a grid
// row), 4 tokens activate 8·(1-(1-2/8)^4) = 8·0.68359 = 5.47 -> 5.
const tinyMoETP1 = `tokens,activated_experts,time_us
1,2,100
4,2,160
1,8,300
4,8,420
`

// A tp2/moe.csv measured with every expert sharded over two GPUs.
const tinyMoETP2 = `tokens,activated_experts,time_us
1,2,70
4,2,100
1,8,170
4,8,230
`

func tinyMoEFS(withTP2Table bool) fstest.MapFS {
	fsys := fstest.MapFS{
		"layer-catalogs/tinymoe.yaml": {Data: []byte(tinyMoECatalog)},
		"HW/org/moe/bf16/meta.yaml":   {Data: []byte("hardware: HW\nmodel: org/moe\nvariant: bf16\narchitecture: tinymoe\n")},
		"HW/org/moe/bf16/tp1/moe.csv": {Data: []byte(tinyMoETP1)},
	}
	for _, tp := range []string{"tp1", "tp2"} {
		d := "HW/org/moe/bf16/" + tp
		fsys[d+"/dense.csv"] = &fstest.MapFile{Data: []byte("layer,tokens,time_us\nembedding,1,5\nembedding,4,5\n")}
		fsys[d+"/per_sequence.csv"] = &fstest.MapFile{Data: []byte("layer,sequences,time_us\nlm_head,1,10\nlm_head,4,10\n")}
		fsys[d+"/attention.csv"] = &fstest.MapFile{Data: []byte(tinyAttention)}
	}
	if withTP2Table {
		fsys["HW/org/moe/bf16/tp2/moe.csv"] = &fstest.MapFile{Data: []byte(tinyMoETP2)}
	}
	return fsys
}

// tinyMoEProfile loads the tiny MoE bundle (3 layers, 8 experts, top-2)
// at tensor-parallel degree tp, with or without its tp2 MoE table.
func tinyMoEProfile(t *testing.T, tp int, withTP2Table bool) *Profile {
	t.Helper()
	fsys := tinyMoEFS(withTP2Table)
	cat, err := LoadCatalog(fsys, "tinymoe")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := FindBundle(fsys, "HW", "org/moe", "bf16", tp)
	if err != nil {
		t.Fatal(err)
	}
	p, err := LoadProfile(fsys, dir, Arch{ModelType: "tinymoe", NumLayers: 3, NumExperts: 8, ExpertsPerTok: 2}, cat)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Tensor-parallel MoE (ep = 1) at tp 2 uses the bundle's tp2 table when it
// has one, else tp1's at half; an expert-parallel rank's block
// (MoELayerNs, experts whole) is tp1's whatever the tp.
func TestMoETensorParallelPricing(t *testing.T) {
	// Per layer at 4 tokens, 5 activated experts: tp1 rows at 4 tokens are
	// 160 (2 experts) and 420 (8 experts): 160 + (5-2)/6·260 = 290 µs.
	// tp2 table: 100 + 3/6·130 = 165 µs. One token: the 2-expert row.
	for _, c := range []struct {
		name     string
		tp       int
		tp2Table bool
		tok      int
		wantUs   float64 // one layer, tensor-parallel MoE
	}{
		{"tp1", 1, false, 4, 290},
		{"tp1 ignores a tp2 table", 1, true, 4, 290},
		{"tp2 without its table: tp1 / 2", 2, false, 4, 145},
		{"tp2 without its table, one token", 2, false, 1, 50},
		{"tp2 with its table", 2, true, 4, 165},
		{"tp2 with its table, one token", 2, true, 1, 70},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := tinyMoEProfile(t, c.tp, c.tp2Table)
			b := Batch{NumDecode: c.tok, DecodeKVSum: int64(16 * c.tok), DecodeKVMin: 16, DecodeKVMax: 16}
			if got, want := p.Breakdown(&b).MoE, 3*c.wantUs*1000; !near(got, want) {
				t.Errorf("MoE = %v ns want %v", got, want)
			}
			// An EP rank holds its experts whole: tp1's table, unscaled.
			if got := p.MoELayerNs(4, 5); !near(got, 290_000) {
				t.Errorf("MoELayerNs(4, 5) = %v want 290000", got)
			}
			// A pre-timed group MoE (dp/ep) replaces the table lookup.
			b.MoENs = 12345
			if got := p.Breakdown(&b).MoE; got != 12345 {
				t.Errorf("MoE with MoENs = %v want 12345", got)
			}
		})
	}
}

// TestMoEPricedAtPaddedTokens: vLLM 0.19 runs the MoE layer inside its CUDA
// graphs, so a step of 1 decode padded to a graph of 4 rows runs the block
// on 4 tokens (5 activated experts, the 4-token rows above); an eager step
// (no padding) on its real token.
func TestMoEPricedAtPaddedTokens(t *testing.T) {
	for _, c := range []struct {
		name     string
		tp       int
		tp2Table bool
		pad      int
		wantUs   float64 // one layer
	}{
		// tp1 table at 4 tokens, 5 experts: 160 + 3/6·260 = 290 µs.
		{"tp1 padded 1 -> 4", 1, false, 3, 290},
		// 1 token: the 2-expert row at 1 token.
		{"tp1 eager", 1, false, 0, 100},
		// tp2 without its table: half of tp1's.
		{"tp2 scaled, padded 1 -> 4", 2, false, 3, 145},
		{"tp2 scaled, eager", 2, false, 0, 50},
		// tp2 table at 4 tokens, 5 experts: 100 + 3/6·130 = 165 µs.
		{"tp2 table, padded 1 -> 4", 2, true, 3, 165},
		{"tp2 table, eager", 2, true, 0, 70},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := tinyMoEProfile(t, c.tp, c.tp2Table)
			b := Batch{NumDecode: 1, DecodeKVSum: 16, DecodeKVMin: 16, DecodeKVMax: 16, PadTokens: c.pad}
			if got, want := p.Breakdown(&b).MoE, 3*c.wantUs*1000; !near(got, want) {
				t.Errorf("MoE = %v ns want %v", got, want)
			}
		})
	}

	// Through the engine-time wrapper: 1 decode replays the full graph
	// captured for 2 rows (capture sizes 2, 4), so the MoE block runs on 2
	// tokens; eagerly (GraphsNone) on 1. tp1 at 2 tokens: 2-expert row 120,
	// 8-expert row 340, round(8·(1−0.75²)) = 4 experts -> 120 + 2/6·220 =
	// 193.33 µs a layer, against 100 µs at 1 token: 3 layers differ by
	// 280 µs. Dense (5 µs), lm_head (10 µs) and attention are the same in
	// both; the kernel gaps differ by the mode.
	p := tinyMoEProfile(t, 1, false)
	graph := WithEngineTime(p, EngineTime{Mode: GraphsFull, CaptureSizes: []int{2, 4}})
	eager := WithEngineTime(p, EngineTime{Mode: GraphsNone, CaptureSizes: []int{2, 4}})
	b := Batch{NumDecode: 1, DecodeKVSum: 16, DecodeKVMin: 16, DecodeKVMax: 16}
	if got, want := graph.StepTime(&b)-eager.StepTime(&b), int64(280_000); got < want-1 || got > want+1 {
		t.Errorf("graph - eager step = %d ns want %d (MoE at 2 padded tokens, 3 layers)", got, want)
	}
	if b.PadTokens != 0 {
		t.Errorf("StepTime left PadTokens at %d", b.PadTokens)
	}
}
