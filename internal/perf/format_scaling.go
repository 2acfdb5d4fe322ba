package perf

import "math"

// WithFormatScaling returns a predictor that times a step as measured
// times target/ref: the measured (profile) kernel time of the step, scaled
// by the ratio of two analytical predictions of the same step, ref in the
// format the measurement was taken in and target in the format to
// simulate (for example two rooflines of one model, bf16 and fp8). It
// carries the measured tables over to a weight or KV-cache format nobody
// profiled, on the assumption that the measured kernels deviate from the
// roofline by the same factor in both formats; docs/quantization.md says
// where that fails. A step ref times at 0 keeps its measured time.
//
// The result reports the measured predictor's MinKernelNs when it has one.
func WithFormatScaling(measured, ref, target Predictor) Predictor {
	return formatScaled{measured: measured, ref: ref, target: target}
}

type formatScaled struct {
	measured, ref, target Predictor
}

func (f formatScaled) StepTime(b *Batch) int64 {
	m := f.measured.StepTime(b)
	r := f.ref.StepTime(b)
	if r <= 0 || m <= 0 {
		return m
	}
	return clampNs(math.Round(float64(m) * (float64(f.target.StepTime(b)) / float64(r))))
}

// MinKernelNs is the measured predictor's shortest kernel (see
// Profile.MinKernelNs), or 0.
func (f formatScaled) MinKernelNs() float64 {
	if mk, ok := f.measured.(interface{ MinKernelNs() float64 }); ok {
		return mk.MinKernelNs()
	}
	return 0
}

// ForRun implements RunScoped.
func (f formatScaled) ForRun(c *TableCounts) Predictor {
	return formatScaled{ForRun(f.measured, c), f.ref, f.target}
}
