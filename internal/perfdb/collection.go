package perfdb

// NativeQuantFP8 reports whether db's per-tensor fp8 GEMM rows were timed
// with vLLM's PyTorch-native activation quantisation: the vLLM 0.14
// collections, whose collector built its layers under a default
// VllmConfig() (compile mode, custom_ops "none") and never compiled them,
// so each row ran the quantisation as four elementwise kernels through an
// fp32 copy of the activations (docs/calibration.md). A served step runs
// one fused kernel instead, and the rows do not separate the two, so
// Kernels leaves them out (the calibrated roofline, whose fit models that
// cost, times those GEMMs).
func (db *DB) NativeQuantFP8() bool {
	for _, t := range db.Tables {
		if t.Name == "gemm_perf" {
			return compareVersions(t.Version, "0.14.0") >= 0 && compareVersions(t.Version, "0.15.0") < 0
		}
	}
	return false
}
