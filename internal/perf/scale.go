package perf

import "math"

// Scale returns a predictor whose step times are p's multiplied by f
// (rounded to the nanosecond). Error bars use it to run a scenario with
// every step at one end of the step-latency model's error band.
func Scale(p Predictor, f float64) Predictor {
	return scaledPredictor{p: p, f: f}
}

type scaledPredictor struct {
	p Predictor
	f float64
}

func (s scaledPredictor) StepTime(b *Batch) int64 {
	return int64(math.Round(float64(s.p.StepTime(b)) * s.f))
}

// ForRun implements RunScoped.
func (s scaledPredictor) ForRun(c *TableCounts) Predictor {
	return scaledPredictor{ForRun(s.p, c), s.f}
}
