package assemble

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/perf"
)

func buildYAML(t *testing.T, y string) (*Built, error) {
	t.Helper()
	s, err := config.Parse([]byte(y), "q.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return Build(s, config.Source{})
}

// TestQuantizedKVCapacity: on one H100 with Llama-3.1-8B, an fp8 KV cache
// doubles num_gpu_blocks for the same free memory (within the rounding
// of the floor), and fp8 weights free exactly the linear layers' half:
// 6979321856 B = 3328 blocks of 16 tokens x 131072 B.
func TestQuantizedKVCapacity(t *testing.T) {
	const base = "predictor: {kind: roofline}\nhardware: H100\n"
	blocks := func(extra string) int {
		b, err := buildYAML(t, base+extra)
		if err != nil {
			t.Fatalf("%q: %v", extra, err)
		}
		return b.instances[0].NumBlocks
	}
	bf := blocks("")
	kv8 := blocks("kv_cache_dtype: fp8\n")
	if kv8 != 2*bf && kv8 != 2*bf+1 {
		t.Errorf("fp8 KV: %d blocks, bf16 KV: %d; want 2x (+1 for rounding)", kv8, bf)
	}
	// The KV bytes per token that cross the P/D links follow the KV dtype:
	// 2 x 32 layers x 8 heads x 128 x 1 B = 65536 B (131072 in bf16).
	for y, want := range map[string]int64{"": 131072, "kv_cache_dtype: fp8\n": 65536} {
		b, err := buildYAML(t, base+y)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.instances[0].kvPerToken; got != want {
			t.Errorf("%q: %d KV bytes per token, want %d", y, got, want)
		}
	}
	if e5 := blocks("kv_cache_dtype: fp8_e5m2\n"); e5 != kv8 {
		t.Errorf("fp8_e5m2 KV: %d blocks, want %d (same element size as e4m3)", e5, kv8)
	}
	if w8 := blocks("quantization: fp8\n"); w8-bf != 3328 {
		t.Errorf("fp8 weights: %d blocks, bf16: %d; want +3328", w8, bf)
	}
	// awq int4 g128 frees (2 - 0.51953125) x 6979321856 B = 10332667904 B
	// = 4927.0 blocks.
	if w4 := blocks("quantization: awq\n"); w4-bf != 4927 {
		t.Errorf("awq weights: %d blocks, bf16: %d; want +4927", w4, bf)
	}
}

// TestProfileRefusesUnmeasuredFormat: the embedded bundles are bf16; fp8
// weights or an fp8 cache are refused with the fix named, and accepted
// with the stated approximation, which then speeds up a decode step.
func TestProfileRefusesUnmeasuredFormat(t *testing.T) {
	for _, extra := range []string{"quantization: fp8\n", "kv_cache_dtype: fp8\n"} {
		_, err := buildYAML(t, extra)
		if err == nil || !strings.Contains(err.Error(), "predictor.format_scaling: roofline-ratio") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line naming predictor.format_scaling: roofline-ratio", extra, err)
		}
	}
	plain, err := buildYAML(t, "")
	if err != nil {
		t.Fatal(err)
	}
	scaled, err := buildYAML(t, "quantization: fp8\npredictor: {format_scaling: roofline-ratio}\n")
	if err != nil {
		t.Fatal(err)
	}
	d := scaled.Describe()
	if !strings.Contains(strings.Join(d.Warnings, "|"), "scaled to fp8") || d.Format == "" {
		t.Errorf("description lacks the format or the approximation warning: %+v", d)
	}
	b := perf.Batch{NumDecode: 32, DecodeKVSum: 32000, DecodeKVMax: 1000, DecodeKVMin: 1000}
	p, q := plain.instances[0].Predictor.StepTime(&b), scaled.instances[0].Predictor.StepTime(&b)
	if !(q < p && q > p/2) {
		t.Errorf("decode step: bf16 %d ns, fp8 scaled %d ns; want between half and all of it", p, q)
	}
	if plain.Describe().Format != "" {
		t.Error("an unquantised scenario describes a format")
	}
}

// TestFormatSupportPerAccelerator: NVFP4 needs Blackwell; fp8 on A100
// falls back to weight-only with a warning.
func TestFormatSupportPerAccelerator(t *testing.T) {
	if _, err := buildYAML(t, "predictor: {kind: roofline}\nhardware: H100\nquantization: modelopt_fp4\n"); err == nil || !strings.Contains(err.Error(), "FP4 tensor cores") {
		t.Errorf("nvfp4 on H100: %v; want a refusal", err)
	}
	if _, err := buildYAML(t, "predictor: {kind: roofline}\nhardware: B200\nquantization: modelopt_fp4\n"); err != nil {
		t.Errorf("nvfp4 on B200: %v", err)
	}
	b, err := buildYAML(t, "predictor: {kind: roofline}\nhardware: A100\nquantization: fp8\n")
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(b.Describe().Warnings, "|"); !strings.Contains(w, "weight-only") {
		t.Errorf("fp8 on A100: warnings %q, want the weight-only note", w)
	}
}
