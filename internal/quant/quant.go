package quant

import (
	"fmt"
	"strings"
)

// Weight quantization methods, as vLLM's --quantization names them.
const (
	// None keeps the weights in the compute dtype.
	None = ""
	// FP8 is FP8 E4M3 weights with FP8 activations (W8A8): per-tensor
	// scales, or per 2-D block of WeightBlockSize (DeepSeek-V3 style).
	FP8 = "fp8"
	// AWQ is 4-bit integer weights with an fp16 scale and a packed zero
	// point per group of GroupSize input channels; bf16/fp16 activations.
	AWQ = "awq"
	// GPTQ is 4- or 8-bit integer weights with an fp16 scale and a packed
	// zero point per group (or per output channel); bf16/fp16 activations.
	GPTQ = "gptq"
	// NVFP4 (vLLM "modelopt_fp4") is FP4 E2M1 weights and activations
	// with an FP8 E4M3 scale per 16 values (W4A4).
	NVFP4 = "modelopt_fp4"
	// MXFP4 is OCP microscaling FP4: E2M1 values with one E8M0 (1-byte)
	// scale per 32, as the gpt-oss checkpoints store their experts. vLLM
	// runs it weight-only (values dequantised in the kernel) with bf16
	// activations on Hopper and older parts.
	MXFP4 = "mxfp4"
)

// KV-cache dtypes, as vLLM's --kv-cache-dtype names them.
const (
	KVAuto    = "auto"
	KVFP8     = "fp8"
	KVFP8E4M3 = "fp8_e4m3"
	KVFP8E5M2 = "fp8_e5m2"
)

// GEMM compute classes: the tensor-core rate a quantised linear layer
// runs at.
const (
	GEMMCompute = "compute" // the compute dtype's rate (bf16/fp16)
	GEMMFP8     = "fp8"
	GEMMFP4     = "fp4"
)

// Spec is the scenario's description of the formats, as written.
type Spec struct {
	// Dtype is the compute dtype: bf16 or fp16.
	Dtype string
	// Quantization is the weight method: "" (none), fp8, awq, gptq or
	// modelopt_fp4.
	Quantization string
	// WeightBlockSize is fp8's block shape [rows, cols] (empty: per-tensor
	// scales).
	WeightBlockSize []int
	// Bits is the integer width of awq (4) or gptq (4 or 8); 0 means 4.
	Bits int
	// GroupSize is the number of input channels sharing one scale for awq
	// and gptq (0 means 128; -1, gptq only, one scale per output channel).
	GroupSize int
	// KVCacheDtype is the KV-cache element type: "" or auto (the compute
	// dtype), fp8 (= fp8_e4m3), fp8_e4m3 or fp8_e5m2.
	KVCacheDtype string
}

// Format is a validated Spec with defaults filled in. The zero value is
// not valid; use Parse. Default() is bf16 with nothing quantised.
type Format struct {
	Dtype     string // bf16 or fp16
	Method    string // one of the method constants
	Block     [2]int // fp8 block shape; zero for per-tensor
	Bits      int    // awq/gptq integer width; 8 for fp8, 4 for nvfp4, 0 for none
	GroupSize int    // values sharing one scale (awq/gptq group, 16 for nvfp4); -1 per output channel
	KV        string // auto, fp8_e4m3 or fp8_e5m2
}

// Default is the unquantised bf16 format.
func Default() Format { return Format{Dtype: "bf16", KV: KVAuto} }

// Methods lists the accepted quantization values for error messages.
const Methods = "none (omit the field), fp8, awq, gptq, modelopt_fp4 or mxfp4"

// KVDtypes lists the accepted kv_cache_dtype values for error messages.
const KVDtypes = "auto, fp8, fp8_e4m3 or fp8_e5m2"

// Parse validates s. Errors name the scenario field (dtype, quantization,
// quantization_config.*, kv_cache_dtype), the value and the valid values.
func Parse(s Spec) (Format, error) {
	f := Format{Dtype: s.Dtype, Method: s.Quantization}
	switch s.Dtype {
	case "bf16", "fp16":
	default:
		return Format{}, fmt.Errorf("dtype: must be bf16 or fp16 (got %q)", s.Dtype)
	}
	switch s.KVCacheDtype {
	case "", KVAuto:
		f.KV = KVAuto
	case KVFP8, KVFP8E4M3:
		f.KV = KVFP8E4M3 // vLLM: fp8 is fp8_e4m3 on CUDA
	case KVFP8E5M2:
		f.KV = KVFP8E5M2
	default:
		return Format{}, fmt.Errorf("kv_cache_dtype: unknown value %q; want %s", s.KVCacheDtype, KVDtypes)
	}
	intOnly := func() error {
		if len(s.WeightBlockSize) > 0 {
			return fmt.Errorf("quantization_config.weight_block_size: applies to quantization fp8 only (quantization is %q); remove it", s.Quantization)
		}
		return nil
	}
	noInt := func() error {
		if s.Bits != 0 || s.GroupSize != 0 {
			return fmt.Errorf("quantization_config.bits and group_size: apply to awq and gptq only (quantization is %q); remove them", s.Quantization)
		}
		return nil
	}
	switch s.Quantization {
	case None:
		if err := intOnly(); err != nil {
			return Format{}, err
		}
		if err := noInt(); err != nil {
			return Format{}, err
		}
	case FP8:
		if err := noInt(); err != nil {
			return Format{}, err
		}
		f.Bits = 8
		switch len(s.WeightBlockSize) {
		case 0:
		case 2:
			if s.WeightBlockSize[0] < 1 || s.WeightBlockSize[1] < 1 || s.WeightBlockSize[0] > 1<<16 || s.WeightBlockSize[1] > 1<<16 {
				return Format{}, fmt.Errorf("quantization_config.weight_block_size: entries must be in [1, 65536] (got %v); DeepSeek-V3 uses [128, 128]", s.WeightBlockSize)
			}
			f.Block = [2]int{s.WeightBlockSize[0], s.WeightBlockSize[1]}
		default:
			return Format{}, fmt.Errorf("quantization_config.weight_block_size: want two entries [rows, cols], e.g. [128, 128] (got %v)", s.WeightBlockSize)
		}
	case AWQ, GPTQ:
		if err := intOnly(); err != nil {
			return Format{}, err
		}
		f.Bits, f.GroupSize = s.Bits, s.GroupSize
		if f.Bits == 0 {
			f.Bits = 4
		}
		if f.GroupSize == 0 {
			f.GroupSize = 128
		}
		switch {
		case s.Quantization == AWQ && f.Bits != 4:
			return Format{}, fmt.Errorf("quantization_config.bits: awq supports 4 bits only (got %d); use gptq for 8-bit weights", f.Bits)
		case f.Bits != 4 && f.Bits != 8:
			return Format{}, fmt.Errorf("quantization_config.bits: gptq supports 4 or 8 bits (got %d)", f.Bits)
		case s.Quantization == AWQ && f.GroupSize < 1:
			return Format{}, fmt.Errorf("quantization_config.group_size: awq needs a group size >= 1 (got %d); 128 is usual", f.GroupSize)
		case f.GroupSize < -1 || f.GroupSize == 0 || f.GroupSize > 1<<16:
			return Format{}, fmt.Errorf("quantization_config.group_size: must be in [1, 65536], or -1 for one scale per output channel (got %d)", f.GroupSize)
		}
	case NVFP4:
		if err := intOnly(); err != nil {
			return Format{}, err
		}
		if err := noInt(); err != nil {
			return Format{}, err
		}
		f.Bits, f.GroupSize = 4, 16
	case MXFP4:
		if err := intOnly(); err != nil {
			return Format{}, err
		}
		if err := noInt(); err != nil {
			return Format{}, err
		}
		f.Bits, f.GroupSize = 4, 32
	default:
		hint := ""
		switch strings.ToLower(s.Quantization) {
		case "nvfp4", "fp4":
			hint = " (NVFP4 checkpoints use modelopt_fp4)"
		case "none":
			hint = " (omit the field for unquantised weights)"
		case "awq_marlin", "gptq_marlin":
			hint = " (the Marlin kernels are how vLLM runs awq and gptq; use the method name)"
		}
		return Format{}, fmt.Errorf("quantization: unknown method %q%s; want %s", s.Quantization, hint, Methods)
	}
	return f, nil
}

// Quantized reports whether the weights are quantised.
func (f Format) Quantized() bool { return f.Method != None }

// Off reports whether neither the weights nor the KV cache leave the
// compute dtype: the simulator then behaves exactly as without this
// package.
func (f Format) Off() bool { return f.Method == None && f.KV == KVAuto }

// ComputeBytes is the size of one element in the compute dtype: weights
// that stay unquantised, activations, and KV under kv_cache_dtype auto.
func (f Format) ComputeBytes() int { return 2 }

// KVBytes is the size of one KV-cache element. The per-layer fp32 k/v
// scales of an fp8 cache are ignored (8 bytes per layer).
func (f Format) KVBytes() int {
	if f.KV == KVAuto {
		return f.ComputeBytes()
	}
	return 1
}

// WeightBytes is the storage, and the bytes read per use, of one quantised
// weight of a linear layer, scales and zero points included:
//
//   - none: the compute dtype (2);
//   - fp8 per-tensor: 1 (one fp32 scale per matrix, ignored);
//   - fp8 block-wise [r, c]: 1 + 4/(r·c) (one fp32 scale per block);
//   - awq, gptq with b bits and group g: b/8 + (2 + b/8)/g (an fp16 scale
//     and a b-bit zero point per group); per-channel groups (-1) count
//     only the b/8 of the values (their scales are under 0.1 % for any
//     input width of 2048 or more);
//   - nvfp4: 0.5 + 1/16 (an FP8 E4M3 scale per 16 values; the fp32
//     per-tensor scale is ignored);
//   - mxfp4: 0.5 + 1/32 (an E8M0 scale per 32 values).
func (f Format) WeightBytes() float64 {
	switch f.Method {
	case FP8:
		if f.Block[0] > 0 {
			return 1 + 4/float64(f.Block[0]*f.Block[1])
		}
		return 1
	case AWQ, GPTQ:
		v := float64(f.Bits) / 8
		if f.GroupSize > 0 {
			v += (2 + float64(f.Bits)/8) / float64(f.GroupSize)
		}
		return v
	case NVFP4:
		return 0.5 + 1.0/16
	case MXFP4:
		return 0.5 + 1.0/32
	}
	return float64(f.ComputeBytes())
}

// GEMM is the class of tensor-core rate the quantised linear layers run
// at on an accelerator with (hasFP8, hasFP4) tensor cores, and a note
// when vLLM falls back to another kernel. fp8 runs at the FP8 rate where
// the part has FP8 tensor cores and, on older parts, as a weight-only
// W8A16 GEMM (vLLM's FP8 Marlin kernel) at the compute rate; awq and gptq
// always run at the compute rate on dequantised weights; nvfp4 needs FP4
// tensor cores and is refused without them.
func (f Format) GEMM(accel string, hasFP8, hasFP4 bool) (class, note string, err error) {
	switch f.Method {
	case FP8:
		if hasFP8 {
			return GEMMFP8, "", nil
		}
		return GEMMCompute, fmt.Sprintf("%s has no FP8 tensor cores: fp8 weights run weight-only (W8A16, FP8 Marlin) at the %s rate", accel, f.Dtype), nil
	case NVFP4:
		if !hasFP4 {
			return "", "", fmt.Errorf("quantization: modelopt_fp4 (NVFP4) needs FP4 tensor cores, which %s lacks (Blackwell parts such as B200 and RTXPRO6000 have them); use fp8, awq or gptq on %s", accel, accel)
		}
		return GEMMFP4, "", nil
	}
	return GEMMCompute, "", nil
}

// PerTensorFP8 reports fp8 weights with per-tensor scales (no block
// shape): vLLM's Fp8LinearMethod, which quantises each layer's input
// activations dynamically (one scale per tensor) before a scaled-mm GEMM.
func (f Format) PerTensorFP8() bool { return f.Method == FP8 && f.Block == [2]int{} }

// Variant names the format as a profile bundle variant (the <dtype>
// folder and meta.yaml "variant"): the compute dtype when nothing is
// quantised ("bf16"), else the method with its parameters ("fp8",
// "fp8-block128x128", "awq-int4-g128", "gptq-int8-g128", "nvfp4"), then
// "-kv-<dtype>" when the KV cache is not in the compute dtype.
func (f Format) Variant() string {
	var v string
	switch f.Method {
	case None:
		v = f.Dtype
	case FP8:
		v = "fp8"
		if f.Block[0] > 0 {
			v = fmt.Sprintf("fp8-block%dx%d", f.Block[0], f.Block[1])
		}
	case AWQ, GPTQ:
		g := fmt.Sprintf("g%d", f.GroupSize)
		if f.GroupSize < 0 {
			g = "channel"
		}
		v = fmt.Sprintf("%s-int%d-%s", f.Method, f.Bits, g)
	case NVFP4:
		v = "nvfp4"
	case MXFP4:
		v = "mxfp4"
	}
	if f.KV != KVAuto {
		v += "-kv-" + f.KV
	}
	return v
}

// String describes the format in one line, e.g. "bf16 compute, fp8 weights
// (1.000 B/weight), fp8_e4m3 KV cache".
func (f Format) String() string {
	w := "unquantised weights"
	if f.Quantized() {
		w = fmt.Sprintf("%s weights (%.4f B/weight)", f.WeightVariant(), f.WeightBytes())
	}
	kv := "KV cache in " + f.Dtype
	if f.KV != KVAuto {
		kv = f.KV + " KV cache"
	}
	return fmt.Sprintf("%s compute, %s, %s", f.Dtype, w, kv)
}

// WeightVariant is Variant without the KV suffix: the weight format alone.
func (f Format) WeightVariant() string {
	g := f
	g.KV = KVAuto
	return g.Variant()
}
