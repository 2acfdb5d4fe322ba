package calibrate

import (
	"bytes"
	_ "embed"
	"sync"
)

//go:embed builtin.yaml
var builtinYAML []byte

var builtin = sync.OnceValues(func() (*File, error) {
	return Load(bytes.NewReader(builtinYAML), "builtin calibration")
})

// Builtin returns the embedded calibration: the accelerators servesim ships
// fitted efficiencies for: RTXPRO6000, fitted on the Qwen3-32B bundle with
// `servesim calibrate --profiles builtin:RTXPRO6000/Qwen/Qwen3-32B/bf16`
// (vLLM kernels, the default lent to uncalibrated accelerators); A6000
// and RTX3090, each fitted on the four v0 per-layer profiles of
// profiles-v0/<hw>/ (Llama-3.1-8B and Phi-mini-MoE-instruct at tp 1 and 2;
// PyTorch-derived, never lent); and H100, H200, B200, B300, GB200, GB300,
// A100 and L40S, each fitted on its system's tables in the embedded
// per-op performance database with `servesim calibrate --perfdb builtin
// --system <perfdb_system>` (with --fp8-waves for H100 and H200,
// --sm-wave for B200, B300, GB200 and GB300; GEMM and attention kernels; the other fields
// kept from RTXPRO6000, never lent; see docs/calibration.md).
// The returned File must not be modified.
func Builtin() (*File, error) { return builtin() }
