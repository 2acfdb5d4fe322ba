package perf

// StepPair receives, for one step, the batch and the times two predictors
// give it: own, the time the simulation uses, and other, a second
// predictor's time for the same batch (see WithShadow).
type StepPair func(b *Batch, own, other int64)

// WithShadow returns a predictor that times every step with p and also
// with other, reporting both to rec; the simulation runs on p's times.
// It compares two latency sources on the very batches one of them
// schedules (servesim validate --steps-vs). other's table counts are not
// kept: a run's counts are p's.
func WithShadow(p, other Predictor, rec StepPair) Predictor {
	return shadow{p: p, other: other, rec: rec}
}

type shadow struct {
	p, other Predictor
	rec      StepPair
}

func (s shadow) StepTime(b *Batch) int64 {
	own := s.p.StepTime(b)
	s.rec(b, own, s.other.StepTime(b))
	return own
}

// ForRun implements RunScoped: p counts into c, other into a scratch
// count of its own.
func (s shadow) ForRun(c *TableCounts) Predictor {
	return shadow{p: ForRun(s.p, c), other: ForRun(s.other, &TableCounts{}), rec: s.rec}
}
