package quant

import (
	"fmt"
	"math"
	"strings"
	"testing"

	_ "github.com/servesim/servesim/internal/testseed"
	"pgregory.net/rapid"
)

func TestWeightBytes(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		want float64 // hand-computed from the format definitions
		gemm string  // on a part with FP8 and FP4 tensor cores
		vari string
	}{
		{Spec{Dtype: "bf16"}, 2, GEMMCompute, "bf16"},
		{Spec{Dtype: "fp16", KVCacheDtype: "fp8"}, 2, GEMMCompute, "fp16-kv-fp8_e4m3"},
		{Spec{Dtype: "bf16", Quantization: "fp8"}, 1, GEMMFP8, "fp8"},
		// one fp32 scale per 128x128 block: 4/16384 B per weight.
		{Spec{Dtype: "bf16", Quantization: "fp8", WeightBlockSize: []int{128, 128}}, 1 + 4.0/16384, GEMMFP8, "fp8-block128x128"},
		// 4-bit values + (fp16 scale + 4-bit zero) per 128: 0.5 + 2.5/128.
		{Spec{Dtype: "bf16", Quantization: "awq"}, 0.5 + 2.5/128, GEMMCompute, "awq-int4-g128"},
		{Spec{Dtype: "bf16", Quantization: "gptq", Bits: 8, GroupSize: 64}, 1 + 3.0/64, GEMMCompute, "gptq-int8-g64"},
		{Spec{Dtype: "bf16", Quantization: "gptq", GroupSize: -1}, 0.5, GEMMCompute, "gptq-int4-channel"},
		// FP4 values + one FP8 scale per 16: 0.5 + 1/16.
		{Spec{Dtype: "bf16", Quantization: "modelopt_fp4", KVCacheDtype: "fp8_e5m2"}, 0.5625, GEMMFP4, "nvfp4-kv-fp8_e5m2"},
	} {
		f, err := Parse(c.spec)
		if err != nil {
			t.Fatalf("%+v: %v", c.spec, err)
		}
		if got := f.WeightBytes(); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%+v: WeightBytes %v, want %v", c.spec, got, c.want)
		}
		g, _, err := f.GEMM("X", true, true)
		if err != nil || g != c.gemm {
			t.Errorf("%+v: GEMM %q, %v; want %q", c.spec, g, err, c.gemm)
		}
		if v := f.Variant(); v != c.vari {
			t.Errorf("%+v: Variant %q, want %q", c.spec, v, c.vari)
		}
		wantKV := 2
		if c.spec.KVCacheDtype != "" {
			wantKV = 1
		}
		if f.KVBytes() != wantKV {
			t.Errorf("%+v: KVBytes %d, want %d", c.spec, f.KVBytes(), wantKV)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Dtype: "fp32"}, "dtype: must be bf16 or fp16"},
		{Spec{Dtype: "bf16", Quantization: "int4"}, `quantization: unknown method "int4"`},
		{Spec{Dtype: "bf16", Quantization: "nvfp4"}, "use modelopt_fp4"},
		{Spec{Dtype: "bf16", KVCacheDtype: "int8"}, "kv_cache_dtype: unknown value \"int8\"; want auto, fp8, fp8_e4m3 or fp8_e5m2"},
		{Spec{Dtype: "bf16", Quantization: "awq", Bits: 8}, "awq supports 4 bits only"},
		{Spec{Dtype: "bf16", Quantization: "gptq", Bits: 3}, "gptq supports 4 or 8 bits"},
		{Spec{Dtype: "bf16", Quantization: "awq", GroupSize: -1}, "awq needs a group size"},
		{Spec{Dtype: "bf16", Quantization: "fp8", Bits: 4}, "apply to awq and gptq only"},
		{Spec{Dtype: "bf16", Quantization: "awq", WeightBlockSize: []int{128, 128}}, "applies to quantization fp8 only"},
		{Spec{Dtype: "bf16", Quantization: "fp8", WeightBlockSize: []int{128}}, "want two entries"},
		{Spec{Dtype: "bf16", Quantization: "fp8", WeightBlockSize: []int{0, 128}}, "entries must be in [1, 65536]"},
	} {
		_, err := Parse(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want it to contain %q", c.spec, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error spans lines: %q", c.spec, err)
		}
	}
}

func TestGEMMSupport(t *testing.T) {
	fp8, _ := Parse(Spec{Dtype: "bf16", Quantization: "fp8"})
	if g, note, err := fp8.GEMM("A100", false, false); err != nil || g != GEMMCompute || !strings.Contains(note, "weight-only") {
		t.Errorf("fp8 on a part without FP8: %q %q %v; want the weight-only fallback", g, note, err)
	}
	fp4, _ := Parse(Spec{Dtype: "bf16", Quantization: "modelopt_fp4"})
	if _, _, err := fp4.GEMM("H100", true, false); err == nil || !strings.Contains(err.Error(), "FP4 tensor cores") {
		t.Errorf("nvfp4 on H100: %v; want a refusal", err)
	}
	if !Default().Off() || fp8.Off() {
		t.Error("Off: want true for the default and false for fp8")
	}
}

// TestWeightBytesProperties: for any valid integer format, the bytes per
// weight exceed the bare values (bits/8), shrink as groups grow, and stay
// below the compute dtype's 2 bytes; the variant names the parameters.
func TestWeightBytesProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		method := rapid.SampledFrom([]string{AWQ, GPTQ}).Draw(t, "method")
		bits := 4
		if method == GPTQ {
			bits = rapid.SampledFrom([]int{4, 8}).Draw(t, "bits")
		}
		g := rapid.IntRange(1, 1<<16-1).Draw(t, "group")
		f, err := Parse(Spec{Dtype: "bf16", Quantization: method, Bits: bits, GroupSize: g})
		if err != nil {
			t.Fatal(err)
		}
		f2, err := Parse(Spec{Dtype: "bf16", Quantization: method, Bits: bits, GroupSize: g + 1})
		if err != nil {
			t.Fatal(err)
		}
		w, w2 := f.WeightBytes(), f2.WeightBytes()
		if !(w > float64(bits)/8 && w2 < w && w <= 2+float64(bits)/8+float64(bits)/8) {
			t.Fatalf("bits %d group %d: %v B (group+1: %v B)", bits, g, w, w2)
		}
		if g >= 4 && w >= 2 {
			t.Fatalf("bits %d group %d: %v B, not smaller than bf16", bits, g, w)
		}
		if !strings.Contains(f.Variant(), fmt.Sprintf("int%d-g%d", bits, g)) {
			t.Fatalf("variant %q", f.Variant())
		}
	})
}
