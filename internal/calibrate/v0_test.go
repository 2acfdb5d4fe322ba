package calibrate

import (
	"math"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/servesim/servesim/internal/perf"
)

// The v0 reader against rows read off the fixture by hand (A6000,
// Llama-3.1-8B, tp1, 64 tokens).
func TestReadV0PointsByHand(t *testing.T) {
	pts, err := ReadV0Points(os.DirFS("testdata/v0/A6000/meta-llama/Llama-3.1-8B/tp1"), ".")
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		cat, op string
		x       int
	}
	got := map[key][]float64{}
	for _, p := range pts {
		x := p.X
		if p.Category == perf.CategoryAttention && p.N == 0 && p.KP == 0 {
			x = p.PC
		}
		got[key{p.Category, p.Op, x}] = append(got[key{p.Category, p.Op, x}], p.Ns)
	}
	for _, c := range []struct {
		k    key
		want []float64
	}{
		{key{perf.CategoryDense, perf.OpQKVProj, 64}, []float64{57050 + 18581 + 18833}}, // q + k + v, unfused
		{key{perf.CategoryDense, perf.OpLayernorm, 64}, []float64{25490, 26075}},        // input, post
		{key{perf.CategoryPerSequence, perf.OpLMHead, 64}, []float64{1465618}},
		{key{perf.CategoryAttention, perf.OpAttention, 64}, []float64{5062}}, // layers.csv attn: fresh prefill
	} {
		if g := got[c.k]; len(g) != len(c.want) || !equalish(g, c.want) {
			t.Errorf("%v: got %v, want %v", c.k, g, c.want)
		}
	}
	// attention.csv: a prefill chunk of 512 over 512 cached tokens, median
	// 0.05584 ms; decode rows go to their own (never fitted) table.
	var sawPrefill, sawDecode bool
	for _, p := range pts {
		if p.Category == perf.CategoryAttention && p.PC == 512 && p.KP == 512 {
			sawPrefill = sawPrefill || math.Abs(p.Ns-55840) < 1e-6
		}
		if p.Category == CategoryV0Decode && p.N == 64 && p.KVD == 4096 {
			sawDecode = sawDecode || math.Abs(p.Ns-84161) < 1
		}
	}
	if !sawPrefill || !sawDecode {
		t.Errorf("attention.csv rows: prefill %v, decode %v", sawPrefill, sawDecode)
	}
}

func equalish(a, b []float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}

func TestReadV0PointsMoE(t *testing.T) {
	pts, err := ReadV0Points(os.DirFS("testdata/v0/A6000/microsoft/Phi-mini-MoE-instruct/tp1"), ".")
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, p := range pts {
		if p.Category == perf.CategoryMoE {
			n[p.Op]++
		}
	}
	// 6 token counts; w1 + w3 fused into one row per count.
	if n[OpExpertGateUp] != 6 || n[OpExpertDown] != 6 || n[OpRouter] != 6 {
		t.Errorf("MoE rows %v, want 6 of each", n)
	}
}

func TestReadV0PointsErrors(t *testing.T) {
	for _, c := range []struct{ name, csv, want string }{
		{"unknown op", "layer_name,input,kv_cache,tp_size,latency(ns)\nfoo,1,0,1,5\n", `layers.csv:2: unknown layer_name "foo"`},
		{"bad time", "layer_name,input,kv_cache,tp_size,latency(ns)\nembedding,1,0,1,x\n", `layers.csv:2: column latency(ns): "x" is not a finite number`},
		{"no header", "", "layers.csv: empty file"},
		{"missing part", "layer_name,input,kv_cache,tp_size,latency(ns)\nq_proj,1,0,1,5\nk_proj,1,0,1,5\n", "qkv_proj at 1 tokens has 2 of its 3 parts"},
		{"zero tokens", "layer_name,input,kv_cache,tp_size,latency(ns)\nembedding,0,0,1,5\n", "must be a positive integer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadV0Points(fstest.MapFS{"layers.csv": {Data: []byte(c.csv)}}, ".")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestParseV0Path(t *testing.T) {
	ref, err := ParseV0Path("/data/profiles-v0/RTX3090/meta-llama/Llama-3.1-8B/tp2")
	if err != nil || ref != (V0Ref{"RTX3090", "meta-llama/Llama-3.1-8B", 2}) {
		t.Fatalf("got %+v, %v", ref, err)
	}
	for _, p := range []string{"Llama/tp1", "/a/b/c/d/tpx"} {
		if _, err := ParseV0Path(p); err == nil {
			t.Errorf("%s: no error", p)
		}
	}
}

// LoadTables resolves the accelerator and model of a v0 folder from its
// path, and a tp mismatch is an error.
func TestLoadTablesV0(t *testing.T) {
	dir := "testdata/v0/RTX3090/meta-llama/Llama-3.1-8B"
	tb, err := LoadTables(os.DirFS(dir), dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Accelerator != "RTX3090" || tb.TP != 2 || tb.Format != FormatV0 || tb.HW.PeakFLOPS != 71e12 {
		t.Fatalf("tables %s tp%d %s %g", tb.Accelerator, tb.TP, tb.Format, tb.HW.PeakFLOPS)
	}
	if _, err := LoadTables(os.DirFS(dir+"/tp2"), dir+"/tp2", 1); err == nil || !strings.Contains(err.Error(), "holds tp2 tables but tp 1") {
		t.Fatalf("tp mismatch: %v", err)
	}
}

// A PyTorch-derived calibration is labelled and never lent.
func TestFallbackSkipsDerived(t *testing.T) {
	f := &File{Version: 1, Accelerators: map[string]*Entry{
		"A6000":      {Derived: DerivedPyTorch},
		"RTX3090":    {Derived: DerivedPyTorch},
		"RTXPRO6000": {},
	}}
	if got, ok := f.Fallback(); !ok || got != "RTXPRO6000" {
		t.Fatalf("Fallback = %q, %v; want RTXPRO6000", got, ok)
	}
	delete(f.Accelerators, "RTXPRO6000")
	if got, ok := f.Fallback(); ok {
		t.Fatalf("Fallback = %q with only derived entries; want none", got)
	}
	if en, _ := f.Entry("a6000"); !strings.Contains(en.Label(), "PyTorch-derived") {
		t.Fatalf("label %q", en.Label())
	}
}

// The embedded calibration lends only its vLLM-kernel entry; the
// PyTorch-derived ones are its own accelerators' and labelled.
func TestBuiltinLendsOnlyVLLMKernelCalibration(t *testing.T) {
	f, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := f.Fallback(); !ok || got != "RTXPRO6000" {
		t.Fatalf("Fallback = %q, %v; want RTXPRO6000", got, ok)
	}
	for _, name := range []string{"A6000", "RTX3090"} {
		en, ok := f.Entry(name)
		if !ok || en.Derived != DerivedPyTorch {
			t.Fatalf("%s: entry %v, derived %q", name, ok, en.Derived)
		}
	}
}
