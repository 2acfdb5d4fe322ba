package perf

import (
	"io/fs"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/assets"
)

// loadLlama loads the embedded RTXPRO6000 Llama-3.1-8B tp1 bundle.
func loadLlama(t testing.TB) *Profile {
	t.Helper()
	root, err := fs.Sub(assets.FS(), "profiles")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := FindBundle(root, "RTXPRO6000", "meta-llama/Llama-3.1-8B", "bf16", 1)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := LoadCatalog(assets.FS(), "llama")
	if err != nil {
		t.Fatal(err)
	}
	p, err := LoadProfile(root, dir, Arch{ModelType: "llama", NumLayers: 32}, cat)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func uniform(n, kv int) Batch {
	return Batch{NumDecode: n, DecodeKVSum: int64(n * kv), DecodeKVMax: kv, DecodeKVMin: kv}
}

// Dense: one step = 32 x (2 layernorm + qkv_proj + rotary_emb + o_proj +
// gate_up_proj + act_fn + down_proj) + embedding + final_layernorm, from the
// dense.csv rows of the embedded bundle (µs):
//
//	tokens  layernorm qkv_proj rotary_emb o_proj  gate_up_proj act_fn  down_proj embedding final_ln
//	16      2.43233   37.2263  2.795      25.5783 160.544      2.987   81.6317   6.656     2.57067
//	20      2.475     39.4133  2.86933    28.704  165.26       3.05033 84.843    2.97567   2.70933
//	2032    15.5145   302.742  11.968     193.663 1151.38      93.5683 608.769   8.011     19.4883
//	2048    15.7068   302.965  12.0107    193.195 1152.83      94.3577 608.715   7.904     19.5837
//
// per layer at 16: 2*2.43233+37.2263+2.795+25.5783+160.544+2.987+81.6317 = 315.62696
// step at 16: 32*315.62696 + 6.656 + 2.57067 = 10109.28939
// per layer at 20: 2*2.475+39.4133+2.86933+28.704+165.26+3.05033+84.843 = 329.08996
// step at 20: 32*329.08996 + 2.97567 + 2.70933 = 10536.56372
// step at 18 (halfway): (10109.28939 + 10536.56372)/2 = 10322.926555
// per layer at 2048: 2*15.7068+302.965+12.0107+193.195+1152.83+94.3577+608.715 = 2395.487
// step at 2048: 32*2395.487 + 7.904 + 19.5837 = 76683.0717
// per layer at 2032: 2*15.5145+302.742+11.968+193.663+1151.38+93.5683+608.769 = 2393.1193
// step at 2032: 32*2393.1193 + 8.011 + 19.4883 = 76607.3169
// step at 2064 (extrapolated, 16 past the top): 76683.0717 + (76683.0717-76607.3169) = 76758.8265
func TestLlamaDense(t *testing.T) {
	p := loadLlama(t)
	tests := []struct {
		tokens int
		want   float64 // µs
	}{
		{16, 10109.28939},
		{18, 10322.926555},
		{20, 10536.56372},
		{2048, 76683.0717},
		{2064, 76758.8265},
	}
	for _, tc := range tests {
		b := Batch{PrefillTokens: tc.tokens, PrefillSeqs: 1}
		if got := p.Breakdown(&b).Dense; !near(got, tc.want*1000) {
			t.Errorf("dense(%d) = %.3f ns want %.3f", tc.tokens, got, tc.want*1000)
		}
	}
}

// per_sequence.csv rows: lm_head 1 → 714.006, 2 → 687.06, 128 → 734.306;
// sampler 1 → 24.746, 2 → 25.8337, 128 → 63.766 (µs).
func TestLlamaPerSequence(t *testing.T) {
	p := loadLlama(t)
	for _, tc := range []struct {
		seqs int
		want float64
	}{
		{1, 714.006 + 24.746},
		{2, 687.06 + 25.8337},
		{128, 734.306 + 63.766},
	} {
		b := uniform(tc.seqs, 100)
		if got := p.Breakdown(&b).PerSequence; !near(got, tc.want*1000) {
			t.Errorf("per-seq(%d) = %v want %v", tc.seqs, got, tc.want*1000)
		}
	}
}

// Attention rows used (prefill_chunk,kv_prefill,n_decode,kv_decode,time_us):
//
//	0,0,1,1152,14.3893     0,0,1,1728,16.768
//	0,0,1,13122,50.975     0,0,1,16384,62.3787
//	0,0,64,1024,221.237    0,0,128,1024,404.865   0,0,128,1152,449.869
//	1384,0,0,0,96.331      2048,0,0,0,172.609
//	2048,768,0,0,265.099   2048,1024,0,0,297.675
func TestLlamaAttention(t *testing.T) {
	p := loadLlama(t)
	tests := []struct {
		name string
		b    Batch
		want float64 // µs, one layer
	}{
		{"grid point", uniform(128, 1152), 449.869},
		// kvd 1440 halfway between 1152 and 1728: (14.3893+16.768)/2
		{"kvd midpoint", uniform(1, 1440), 15.57865},
		// n 96 halfway between 64 and 128 at kvd 1024: (221.237+404.865)/2
		{"n midpoint", uniform(96, 1024), 313.051},
		// pure prefill pc 1716 halfway between 1384 and 2048: (96.331+172.609)/2
		{"pc midpoint", Batch{PrefillTokens: 1716, PrefillSeqs: 1}, 134.47},
		// kp 1000: t = (1000-768)/256 = 0.90625; 265.099 + 0.90625*32.576 = 294.621
		{"kp interpolation", Batch{PrefillTokens: 2048, PrefillKV: 1000, PrefillSeqs: 1}, 294.621},
		// kvd 19646 = 16384 + (16384-13122): t = 2 → 50.975 + 2*11.4037 = 73.7824
		{"kvd extrapolated", uniform(1, 19646), 73.7824},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Breakdown(&tc.b).Attention; !near(got, 32*tc.want*1000) {
				t.Errorf("attention = %.4f µs per layer, want %.4f", got/32000, tc.want)
			}
		})
	}
}

// A skewed pure-decode batch: n=128, mean 1500, min 100, max 4000.
// skew rate (1500-100)/(4000-100) = 0.359 → sr<=40%; n<=128; kv_big 4000 →
// kvB<=4k; kp=0 → skew_fit.csv row "0,n<=128,sr<=40%,kvB<=4k,kp=0,0.0155,2".
// t_mean (kvd 1500, rows 1152 → 449.869, 1728 → 647.159):
// 449.869 + (348/576)*197.29 = 569.0650417
// t_max (kvd 4000, rows 3888 → 1393.25, 4096 → 1461.14):
// 1393.25 + (112/208)*67.89 = 1429.8061538
// t = 569.0650417 + 0.0155*(1429.8061538-569.0650417) = 582.4065290
func TestLlamaSkew(t *testing.T) {
	p := loadLlama(t)
	b := Batch{NumDecode: 128, DecodeKVSum: 192000, DecodeKVMax: 4000, DecodeKVMin: 100}
	if a := p.skew.skewAlpha(0, 0, 128, 1500, 100, 4000); a != 0.0155 {
		t.Errorf("alpha = %v want 0.0155", a)
	}
	if got := p.Breakdown(&b).Attention; !near(got, 32*582.4065290*1000) {
		t.Errorf("attention = %.6f µs per layer, want 582.406529", got/32000)
	}
	// A prefill chunk that is not a profiled pc value takes alpha_default
	// (meta.yaml per_tp[1].alpha_default = 0.0543).
	if a := p.skew.skewAlpha(1900, 1000, 128, 1500, 100, 4000); a != 0.0543 {
		t.Errorf("alpha(pc=1900) = %v want alpha_default 0.0543", a)
	}
	// n above every n bin ("n>256") has no fitted bucket either.
	if a := p.skew.skewAlpha(0, 0, 300, 1500, 100, 4000); a != 0.0543 {
		t.Errorf("alpha(n=300) = %v want 0.0543", a)
	}
}

func TestStepTimeTotals(t *testing.T) {
	p := loadLlama(t)
	b := Batch{NumDecode: 128, DecodeKVSum: 192000, DecodeKVMax: 4000, DecodeKVMin: 100}
	bd := p.Breakdown(&b)
	if got, want := p.StepTime(&b), int64(math.Round(bd.Dense+bd.PerSequence+bd.Attention)); got != want {
		t.Errorf("StepTime = %d want %d", got, want)
	}
	if got := p.StepTime(&Batch{}); got != 0 {
		t.Errorf("empty batch = %d", got)
	}
	if got := p.StepTime(nil); got != 0 {
		t.Errorf("nil batch = %d", got)
	}
	// Garbage input must not panic and must stay finite and non-negative.
	for _, g := range []Batch{
		{PrefillTokens: -5, NumDecode: -3, DecodeKVSum: -9, DecodeKVMax: -1},
		{NumDecode: 2, DecodeKVSum: 10, DecodeKVMax: 1 << 30, DecodeKVMin: 1 << 31},
		{PrefillTokens: 1 << 30, PrefillKV: 1 << 40, PrefillSeqs: 1},
	} {
		if v := p.StepTime(&g); v < 0 {
			t.Errorf("%+v: %d", g, v)
		}
	}
}

func TestStepTimeDoesNotAllocate(t *testing.T) {
	p := loadLlama(t)
	batches := benchBatches()
	var sink int64
	allocs := testing.AllocsPerRun(200, func() {
		for i := range batches {
			sink += p.StepTime(&batches[i])
		}
	})
	if allocs != 0 {
		t.Fatalf("StepTime allocates %v times per run", allocs)
	}
	_ = sink
}

func benchBatches() []Batch {
	return []Batch{
		{NumDecode: 128, DecodeKVSum: 192000, DecodeKVMax: 4000, DecodeKVMin: 100},
		{NumDecode: 1, DecodeKVSum: 500, DecodeKVMax: 500, DecodeKVMin: 500},
		{PrefillTokens: 2048, PrefillSeqs: 1},
		{PrefillTokens: 1900, PrefillKV: 1000, PrefillSeqs: 1, NumDecode: 128, DecodeKVSum: 192000, DecodeKVMax: 4000, DecodeKVMin: 100},
		{PrefillTokens: 333, PrefillKV: 20000, PrefillSeqs: 3, NumDecode: 37, DecodeKVSum: 37 * 9000, DecodeKVMax: 30000, DecodeKVMin: 20},
	}
}

func BenchmarkStepTime(b *testing.B) {
	p := loadLlama(b)
	batches := benchBatches()
	b.ReportAllocs()
	var sink int64
	for i := 0; b.Loop(); i++ {
		sink += p.StepTime(&batches[i%len(batches)])
	}
	_ = sink
}

// The Qwen3-30B-A3B bundle lives outside the module; skip when absent.
const sharedProfiles = "/work/shared/data/profiles"

// moe.csv rows (tokens,activated_experts,time_us): 16,64,…; 16,128,…; read
// below. 16 tokens choosing 8 of 128 experts reach
// 128*(1-(1-8/128)^16) = 128*(1-0.356100) = 82.42 → 82 experts, between the
// profiled 64 and 128: t = (82-64)/64 = 0.28125.
func TestQwenMoE(t *testing.T) {
	if got := ActivatedExperts(16, 128, 8); got != 82 {
		t.Fatalf("ActivatedExperts(16,128,8) = %d want 82", got)
	}
	for _, c := range [][3]int{{1, 128, 8}, {0, 128, 8}, {100000, 128, 8}, {5, 4, 8}} {
		want := map[[3]int]int{{1, 128, 8}: 8, {0, 128, 8}: 0, {100000, 128, 8}: 128, {5, 4, 8}: 4}[c]
		if got := ActivatedExperts(c[0], c[1], c[2]); got != want {
			t.Errorf("ActivatedExperts%v = %d want %d", c, got, want)
		}
	}
	root, err := fs.Sub(assets.FS(), "profiles")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := LoadCatalog(assets.FS(), "qwen3_moe")
	if err != nil {
		t.Fatal(err)
	}
	arch := Arch{ModelType: "qwen3_moe", NumLayers: 48, NumExperts: 128, ExpertsPerTok: 8}
	for _, tp := range []int{1, 2} {
		dir, err := FindBundle(root, "RTXPRO6000", "Qwen/Qwen3-30B-A3B-Instruct-2507", "bf16", tp)
		if err != nil {
			t.Fatal(err)
		}
		p, err := LoadProfile(root, dir, arch, cat)
		if err != nil {
			t.Fatal(err)
		}
		// Read the two bracketing rows from moe.csv. The bundle has no
		// tp2/moe.csv: tensor-parallel MoE at tp2 is tp1's table halved.
		raw, err := fs.ReadFile(root, "RTXPRO6000/Qwen/Qwen3-30B-A3B-Instruct-2507/bf16/tp1/moe.csv")
		if err != nil {
			t.Fatal(err)
		}
		row := func(prefix string) float64 {
			for _, l := range strings.Split(string(raw), "\n") {
				if v, ok := strings.CutPrefix(l, prefix); ok {
					return parseF(t, v)
				}
			}
			t.Fatalf("no row %s", prefix)
			return 0
		}
		lo, hi := row("16,64,"), row("16,128,")
		want := 48 * (lo + 0.28125*(hi-lo)) * 1000 / float64(tp)
		b := uniform(16, 1000)
		if got := p.Breakdown(&b).MoE; !near(got, want) {
			t.Errorf("tp%d: MoE = %v want %v (rows %v, %v)", tp, got, want, lo, hi)
		}
		// Grid point: one decode token activates exactly 8 experts.
		b = uniform(1, 1000)
		if got, want := p.Breakdown(&b).MoE, 48*row("1,8,")*1000/float64(tp); !near(got, want) {
			t.Errorf("tp%d: MoE(1 token) = %v want %v", tp, got, want)
		}
		// An expert-parallel rank's block is tp1's, whatever the tp.
		if got, want := p.MoELayerNs(16, 64), lo*1000; !near(got, want) {
			t.Errorf("tp%d: MoELayerNs(16, 64) = %v want %v", tp, got, want)
		}
	}
	// A dense Arch on the MoE catalog is refused.
	dir, _ := FindBundle(root, "RTXPRO6000", "Qwen/Qwen3-30B-A3B-Instruct-2507", "bf16", 1)
	if _, err := LoadProfile(root, dir, Arch{ModelType: "qwen3_moe", NumLayers: 48}, cat); err == nil {
		t.Error("dense arch accepted for an MoE catalog")
	}
}

// Every shared bundle must load and predict positive step times.
func TestSharedBundlesLoad(t *testing.T) {
	if _, err := os.Stat(sharedProfiles); err != nil {
		t.Skip("shared profiles not present")
	}
	root := os.DirFS(sharedProfiles)
	cats := os.DirFS("/work/shared/data")
	for _, c := range []struct {
		hw, model, mt    string
		tp, layers, e, k int
	}{
		{"RTXPRO6000", "Qwen/Qwen3-32B", "qwen3", 1, 64, 0, 0},
		{"RTXPRO6000", "Qwen/Qwen3-32B", "qwen3", 2, 64, 0, 0},
		{"RTXPRO6000", "meta-llama/Llama-3.1-8B", "llama", 2, 32, 0, 0},
		{"RTX4090", "meta-llama/Llama-3.1-8B", "llama", 1, 32, 0, 0},
	} {
		dir, err := FindBundle(root, c.hw, c.model, "bf16", c.tp)
		if err != nil {
			t.Fatal(err)
		}
		cat, err := LoadCatalog(cats, c.mt)
		if err != nil {
			t.Fatal(err)
		}
		p, err := LoadProfile(root, dir, Arch{ModelType: c.mt, NumLayers: c.layers, NumExperts: c.e, ExpertsPerTok: c.k}, cat)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range benchBatches() {
			if v := p.StepTime(&b); v <= 0 {
				t.Errorf("%s %s tp%d %+v: %d", c.hw, c.model, c.tp, b, v)
			}
		}
		if c.hw == "RTX4090" && p.skew != nil {
			t.Error("RTX4090 has skew_fit disabled; alpha must be 0")
		}
	}
}
