package perf

import (
	"errors"
	"math"
	"strings"
	"testing"
	"testing/fstest"
)

// A tiny hand-made bundle whose numbers are easy to interpolate by hand.
// Times are microseconds per layer, as in real bundles.
const tinyCatalog = `
sequence:
  prologue:  [embedding]
  pre_attn:  [layernorm, attention]
  post_attn: [layernorm]
  mlp_dense: [mlp]
  mlp_moe:   []
  head:      [final_layernorm, lm_head]
catalog:
  dense:
    embedding: {}
    layernorm: {}
    mlp: {}
    final_layernorm: {}
  per_sequence:
    lm_head: {}
  attention:
    attention: {}
`

const tinyMeta = `
hardware: HW
model: org/tiny
variant: bf16
architecture: tiny
skew_fit:
  enabled: true
  bucket_axes:
    n_bins: [0, 2, 4, 1000000]
    n_labels: [n<=2, n<=4, n>4]
    skew_rate_bins: [-0.01, 0.5, 1.01]
    skew_rate_labels: [sr<=50%, sr>50%]
    kv_big_bins: [0, 32, 1000000000]
    kv_big_labels: [kvB<=32, kvB>32]
    kp_bins: [-1, 0, 1000000000]
    kp_labels: [kp=0, kp>0]
  per_tp:
    1:
      alpha_default: 0.1
`

// Different grids per op on purpose (the merged table must stay exact).
const tinyDense = `layer,tokens,time_us
embedding,1,5
embedding,4,5
layernorm,1,1
layernorm,2,2
layernorm,4,3
mlp,1,10
mlp,4,40
final_layernorm,2,7
`

const tinyPerSeq = `layer,sequences,time_us
lm_head,1,100
lm_head,3,130
`

const tinyAttention = `prefill_chunk,kv_prefill,n_decode,kv_decode,time_us
0,0,1,16,10
0,0,1,32,12
0,0,1,64,20
0,0,2,16,20
0,0,2,32,24
0,0,2,64,40
16,0,0,0,30
16,16,0,0,34
16,0,1,16,40
16,0,1,64,52
16,32,1,16,48
16,32,1,64,64
32,0,0,0,50
32,32,0,0,60
32,0,1,16,60
32,0,1,64,80
`

const tinySkew = `pc,n_label,skew_rate_label,kv_big_label,kp_label,alpha,n_samples
0,n<=2,sr<=50%,kvB>32,kp=0,0.5,4
0,n<=4,sr>50%,kvB>32,kp=0,0.25,4
`

const tinyDir = "HW/org/tiny/bf16/tp1"

func tinyFS() fstest.MapFS {
	return fstest.MapFS{
		"layer-catalogs/tiny.yaml":           {Data: []byte(tinyCatalog)},
		"HW/org/tiny/bf16/meta.yaml":         {Data: []byte(tinyMeta)},
		tinyDir + "/dense.csv":               {Data: []byte(tinyDense)},
		tinyDir + "/per_sequence.csv":        {Data: []byte(tinyPerSeq)},
		tinyDir + "/attention.csv":           {Data: []byte(tinyAttention)},
		tinyDir + "/skew_fit.csv":            {Data: []byte(tinySkew)},
		"HW/org/other/bf16/meta.yaml":        {Data: []byte("model: org/other\n")},
		"HW/org/other/bf16/tp2/dense.csv":    {Data: []byte(tinyDense)},
		"GPU2/x/y/bf16/meta.yaml":            {Data: []byte("model: x/y\n")},
		"HW/org/tiny/fp8/meta.yaml":          {Data: []byte("model: org/tiny\n")},
		"HW/org/tiny/bf16/tp4/attention.csv": {Data: []byte(tinyAttention)},
	}
}

func loadTiny(t *testing.T, fsys fstest.MapFS) *Profile {
	t.Helper()
	cat, err := LoadCatalog(fsys, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	p, err := LoadProfile(fsys, tinyDir, Arch{ModelType: "tiny", NumLayers: 2}, cat)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func TestTinyDenseAndPerSequence(t *testing.T) {
	p := loadTiny(t, tinyFS())
	// Dense(T) = embedding + 2 layers x (2 x layernorm + mlp) + final_layernorm.
	tests := []struct {
		name          string
		tokens, seqs  int
		dense, perSeq float64 // µs
	}{
		// T=1: 5 + 2*(2*1 + 10) + 7 = 36; lm_head(1) = 100.
		{"grid point", 1, 1, 36, 100},
		// T=3: layernorm 2+0.5*1 = 2.5, mlp 10+(2/3)*30 = 30:
		// 5 + 2*(5 + 30) + 7 = 82; lm_head(2) = 100 + 0.5*30 = 115.
		{"between", 3, 2, 82, 115},
		// T=8, above every grid: layernorm 3 + 4*0.5 = 5, mlp 40 + 4*10 = 80,
		// embedding flat 5, final_layernorm single point 7:
		// 5 + 2*(10 + 80) + 7 = 192; lm_head(5) = 130 + 2*15 = 160.
		{"extrapolated", 8, 5, 192, 160},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := Batch{NumDecode: tc.tokens}
			b.PrefillSeqs = tc.seqs - tc.tokens // Seqs() = seqs
			bd := p.Breakdown(&b)
			if !near(bd.Dense, tc.dense*1000) || !near(bd.PerSequence, tc.perSeq*1000) {
				t.Errorf("dense %v per-seq %v, want %v %v (ns)", bd.Dense, bd.PerSequence, tc.dense*1000, tc.perSeq*1000)
			}
		})
	}
}

func TestTinyAttention(t *testing.T) {
	p := loadTiny(t, tinyFS())
	tests := []struct {
		name string
		b    Batch
		want float64 // µs for ONE layer
	}{
		// pc=0,n=1: kvd 16→10, 32→12: kvd 24 → 11.
		{"decode kvd mid", Batch{NumDecode: 1, DecodeKVSum: 24, DecodeKVMax: 24, DecodeKVMin: 24}, 11},
		{"decode kvd grid", Batch{NumDecode: 1, DecodeKVSum: 32, DecodeKVMax: 32, DecodeKVMin: 32}, 12},
		// above 64: slope (20-12)/32 = 0.25 → 20 + 64*0.25 = 36.
		{"decode kvd extrapolated", Batch{NumDecode: 1, DecodeKVSum: 128, DecodeKVMax: 128, DecodeKVMin: 128}, 36},
		{"decode kvd clamped below", Batch{NumDecode: 1, DecodeKVSum: 8, DecodeKVMax: 8, DecodeKVMin: 8}, 10},
		// n=3 above pc=0's n grid {1,2} at kvd 32: 12, 24 → 36.
		{"decode n extrapolated", Batch{NumDecode: 3, DecodeKVSum: 96, DecodeKVMax: 32, DecodeKVMin: 32}, 36},
		// pure prefill pc=16: kp 0→30, 16→34: kp 8 → 32.
		{"prefill kp mid", Batch{PrefillTokens: 16, PrefillKV: 8, PrefillSeqs: 1}, 32},
		// pc 24 between pc 16 (30) and 32 (50) at kp 0 → 40.
		{"prefill pc mid", Batch{PrefillTokens: 24, PrefillSeqs: 1}, 40},
		// pc 8 below the pure-prefill pc grid {16, 32}: clamp to 30.
		{"prefill pc clamped", Batch{PrefillTokens: 8, PrefillSeqs: 1}, 30},
		// pc 64: t = (64-16)/16 = 3 → 30 + 3*20 = 90.
		{"prefill pc extrapolated", Batch{PrefillTokens: 64, PrefillSeqs: 1}, 90},
		// mixed pc 8 between pc 0 (n=1,kvd16: 10) and pc 16 (n=1,kp0,kvd16: 40) → 25.
		{"mixed pc blend", Batch{PrefillTokens: 8, PrefillSeqs: 1, NumDecode: 1, DecodeKVSum: 16, DecodeKVMax: 16, DecodeKVMin: 16}, 25},
		// mixed pc 16, kp 16, kvd 40: kp0 row 40 + (24/48)*12 = 46,
		// kp32 row 48 + 0.5*16 = 56 → kp 16 halfway: 51.
		{"mixed bilinear", Batch{PrefillTokens: 16, PrefillKV: 16, PrefillSeqs: 1, NumDecode: 1, DecodeKVSum: 40, DecodeKVMax: 40, DecodeKVMin: 40}, 51},
		// mixed pc 24, kp 0, kvd 16, n 1: pc16 → 40, pc32 → 60 → 50.
		{"mixed corner blend", Batch{PrefillTokens: 24, PrefillSeqs: 1, NumDecode: 1, DecodeKVSum: 16, DecodeKVMax: 16, DecodeKVMin: 16}, 50},
		{"empty", Batch{}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := p.Breakdown(&tc.b).Attention
			if want := 2 * tc.want * 1000; !near(got, want) { // 2 layers
				t.Errorf("attention = %v ns want %v", got, want)
			}
		})
	}
}

func TestTinySkew(t *testing.T) {
	p := loadTiny(t, tinyFS())
	tests := []struct {
		name  string
		b     Batch
		alpha float64
		want  float64 // µs per layer
	}{
		// contexts 16 and 48: mean 32, min 16, max 48; skew rate
		// (32-16)/(48-16) = 0.5 → sr<=50%; n=2 → n<=2; kv_big 48 → kvB>32;
		// kp 0 → kp=0: bucket alpha 0.5.
		// t_mean (n=2, kvd 32) = 24; t_max (kvd 48) = 24 + 0.5*16 = 32;
		// t = 24 + 0.5*(32-24) = 28.
		{"bucket hit", Batch{NumDecode: 2, DecodeKVSum: 64, DecodeKVMax: 48, DecodeKVMin: 16}, 0.5, 28},
		// contexts 16, 16, 64: mean 32, sr 16/48 → sr<=50%, n<=4: no bucket →
		// alpha_default 0.1. n=3 extrapolates in n: t_mean (kvd 32) = 36,
		// t_max (kvd 64) = 40 + (40-20) = 60 → 36 + 0.1*24 = 38.4.
		{"default alpha", Batch{NumDecode: 3, DecodeKVSum: 96, DecodeKVMax: 64, DecodeKVMin: 16}, 0.1, 38.4},
		// contexts 16, 56, 56, 64 (n=4): mean 48, sr (48-16)/48 = 0.667 →
		// sr>50%, n<=4, kvB>32, kp=0: alpha 0.25. n=4 extrapolates from
		// n 1,2: t(n, kvd) = 2*t(2) - t(1) … at kvd 48: n1 16, n2 32 → 64;
		// at kvd 64: n1 20, n2 40 → 80. t = 64 + 0.25*16 = 68.
		{"other bucket", Batch{NumDecode: 4, DecodeKVSum: 192, DecodeKVMax: 64, DecodeKVMin: 16}, 0.25, 68},
		// pc 8 is not a profiled pc value: alpha_default. t_mean: pc 0 →
		// 24, pc 16 (n=2 absent there: n grid {0,1}, extrapolate in n at kp 0,
		// kvd 32: n0 30, n1 44 → 58) → blend 41; t_max (kvd 48): pc0 32,
		// pc16 n1 48 → 66 → 49. t = 41 + 0.1*8 = 41.8.
		{"mixed uses default", Batch{PrefillTokens: 8, PrefillSeqs: 1, NumDecode: 2, DecodeKVSum: 64, DecodeKVMax: 48, DecodeKVMin: 16}, 0.1, 41.8},
		// uniform contexts: no correction.
		{"uniform", Batch{NumDecode: 2, DecodeKVSum: 64, DecodeKVMax: 32, DecodeKVMin: 32}, 0, 24},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.alpha != 0 {
				n := tc.b.NumDecode
				mean := float64(tc.b.DecodeKVSum / int64(n))
				a := p.skew.skewAlpha(float64(tc.b.PrefillTokens), float64(tc.b.PrefillKV), n, mean,
					float64(tc.b.DecodeKVMin), float64(tc.b.DecodeKVMax))
				if a != tc.alpha {
					t.Errorf("alpha = %v want %v", a, tc.alpha)
				}
			}
			if got, want := p.Breakdown(&tc.b).Attention, 2*tc.want*1000; !near(got, want) {
				t.Errorf("attention = %v ns want %v", got, want)
			}
		})
	}
	// Without skew_fit.csv alpha is 0.
	fsys := tinyFS()
	delete(fsys, tinyDir+"/skew_fit.csv")
	q := loadTiny(t, fsys)
	b := tests[0].b
	if got := q.Breakdown(&b).Attention; !near(got, 2*24*1000) {
		t.Errorf("no skew data: attention = %v want t_mean", got)
	}
}

func TestFindBundleErrors(t *testing.T) {
	fsys := tinyFS()
	if dir, err := FindBundle(fsys, "HW", "org/tiny", "bf16", 1); err != nil || dir != tinyDir {
		t.Fatalf("FindBundle = %q, %v", dir, err)
	}
	tests := []struct {
		hw, model, dtype string
		tp               int
		want             string
	}{
		{"HW", "org/tiny", "bf16", 2, "no profile for tp=2 of org/tiny on HW (bf16): available tp: 1, 4; use --profiles ROOT to point at a bundle root that has it"},
		{"H100", "org/tiny", "bf16", 1, "no profiles for hardware H100: available hardware: GPU2, HW; use --profiles ROOT"},
		{"HW", "org/huge", "bf16", 1, "no profile for org/huge on HW: available models: org/other, org/tiny; use --profiles ROOT"},
		{"HW", "org/tiny", "int4", 1, "no int4 profile of org/tiny on HW: available dtypes: bf16, fp8;"},
	}
	for _, tc := range tests {
		_, err := FindBundle(fsys, tc.hw, tc.model, tc.dtype, tc.tp)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.Is(err, ErrNoProfile) {
			t.Errorf("FindBundle(%s,%s,%s,%d) err = %v\nwant prefix %s", tc.hw, tc.model, tc.dtype, tc.tp, err, tc.want)
		}
	}
	if _, err := FindBundle(fsys, "HW", "../x", "bf16", 1); err == nil {
		t.Error("invalid model path accepted")
	}
	if _, err := FindBundle(fsys, "HW", "org/tiny", "bf16", 0); err == nil {
		t.Error("tp=0 accepted")
	}
}

func TestLoadErrors(t *testing.T) {
	cat, err := LoadCatalog(tinyFS(), "tiny")
	if err != nil {
		t.Fatal(err)
	}
	arch := Arch{ModelType: "tiny", NumLayers: 2}
	tests := []struct {
		name string
		file string // replaced file (under tinyDir unless it has a '/')
		data string
		arch *Arch
		want string
	}{
		{"bad number", "dense.csv", "layer,tokens,time_us\nmlp,1,10\nmlp,x,1\n", nil,
			tinyDir + `/dense.csv:3: column tokens: "x" is not a non-negative integer`},
		{"bad time", "dense.csv", "layer,tokens,time_us\nmlp,1,10\nmlp,2,NaN\n", nil,
			tinyDir + `/dense.csv:3: column time_us: "NaN" is not a finite number`},
		{"time beyond bound", "dense.csv", "layer,tokens,time_us\nmlp,1,10\nmlp,2,1e300\n", nil,
			tinyDir + `/dense.csv:3: column time_us: "1e300" exceeds 1e+07 us`},
		{"attention time beyond bound", "attention.csv", strings.Replace(tinyAttention, "0,0,1,32,12\n", "0,0,1,32,1e15\n", 1), nil,
			tinyDir + `/attention.csv:3: column time_us: "1e15" exceeds`},
		{"field count", "per_sequence.csv", "layer,sequences,time_us\nlm_head,1,100\nlm_head,2\n", nil,
			tinyDir + "/per_sequence.csv:3: wrong number of fields"},
		{"missing column", "attention.csv", "prefill_chunk,n_decode,kv_decode,time_us\n", nil,
			tinyDir + `/attention.csv:1: header "prefill_chunk,n_decode,kv_decode,time_us" lacks column(s) kv_prefill`},
		{"duplicate", "attention.csv", tinyAttention + "0,0,1,32,13\n", nil,
			tinyDir + "/attention.csv:18: duplicate row for prefill_chunk=0 kv_prefill=0 n_decode=1 kv_decode=32 (first on line 3)"},
		{"missing op", "dense.csv", "layer,tokens,time_us\nmlp,1,10\n", nil,
			tinyDir + "/dense.csv has no rows for op embedding"},
		{"unknown skew label", "skew_fit.csv", "pc,n_label,skew_rate_label,kv_big_label,kp_label,alpha\n0,n<=3,sr<=50%,kvB>32,kp=0,0.5\n", nil,
			tinyDir + `/skew_fit.csv:2: n_label "n<=3" is not one of meta.yaml skew_fit.bucket_axes n labels [n<=2 n<=4 n>4]`},
		{"empty file", "dense.csv", "", nil, tinyDir + "/dense.csv: empty file"},
		{"missing file", "attention.csv", "", nil, "open profile table"},
		{"moe arch on dense catalog", "", "", &Arch{ModelType: "tiny", NumLayers: 2, NumExperts: 8, ExpertsPerTok: 2},
			"layer catalog tiny has an empty mlp_moe sequence"},
		{"bad layers", "", "", &Arch{ModelType: "tiny"}, "NumLayers must be >= 1"},
		{"wrong model type", "", "", &Arch{ModelType: "llama", NumLayers: 2}, "catalog is for tiny, model type is llama"},
		{"wrong architecture", "HW/org/tiny/bf16/meta.yaml", "architecture: llama\n", nil,
			"bundle was profiled for architecture llama, not tiny"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := tinyFS()
			if tc.file != "" {
				name := tc.file
				if !strings.Contains(name, "/") {
					name = tinyDir + "/" + name
				}
				if tc.name == "missing file" {
					delete(fsys, name)
				} else {
					fsys[name] = &fstest.MapFile{Data: []byte(tc.data)}
				}
			}
			a := arch
			if tc.arch != nil {
				a = *tc.arch
			}
			_, err := LoadProfile(fsys, tinyDir, a, cat)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant it to contain %s", err, tc.want)
			}
		})
	}
}

func TestLoadCatalog(t *testing.T) {
	c, err := LoadCatalog(tinyFS(), "tiny")
	if err != nil {
		t.Fatal(err)
	}
	ops, err := c.stepOps(3, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, u := range ops {
		got[u.op] = u.count
	}
	want := map[string]float64{"embedding": 1, "layernorm": 6, "attention": 3, "mlp": 3, "final_layernorm": 1, "lm_head": 1}
	for op, n := range want {
		if got[op] != n {
			t.Errorf("%s runs %v times per step, want %v", op, got[op], n)
		}
	}
	_, err = LoadCatalog(tinyFS(), "gpt2")
	if err == nil || !strings.Contains(err.Error(), `no layer catalog for model type "gpt2" (available: tiny)`) {
		t.Errorf("err = %v", err)
	}
	bad := fstest.MapFS{"layer-catalogs/x.yaml": {Data: []byte("sequence:\n  pre_attn: [foo]\ncatalog:\n  dense:\n    bar: {}\n")}}
	if _, err := LoadCatalog(bad, "x"); err == nil || !strings.Contains(err.Error(), `sequence op "foo" is not declared`) {
		t.Errorf("err = %v", err)
	}
}
