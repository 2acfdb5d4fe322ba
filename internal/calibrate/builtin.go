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
// fitted efficiencies for (RTXPRO6000, fitted on the Qwen3-32B bundle with
// `servesim calibrate --profiles builtin:RTXPRO6000/Qwen/Qwen3-32B/bf16`).
// The returned File must not be modified.
func Builtin() (*File, error) { return builtin() }
