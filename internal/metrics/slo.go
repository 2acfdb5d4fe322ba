package metrics

import (
	"math"
	"strconv"
)

// This file holds the service-level objective (per-request bounds and
// goodput) and the percentile targets a summary checks.

// SLO holds per-request latency bounds in ns; a zero bound is not checked.
// A finished request meets the SLO when its TTFT, TPOT (if it has one) and
// E2E are each within their bounds.
type SLO struct {
	TTFT int64
	TPOT int64
	E2E  int64
}

func (s SLO) set() bool { return s.TTFT > 0 || s.TPOT > 0 || s.E2E > 0 }

func (s SLO) met(r *Record) bool {
	if r.Outcome != Finished {
		return false
	}
	if s.TTFT > 0 && r.TTFT() > s.TTFT {
		return false
	}
	if s.TPOT > 0 && r.TPOT() > s.TPOT {
		return false
	}
	return s.E2E <= 0 || r.E2E() <= s.E2E
}

// SLOResult is SLO attainment and the verdict on percentile targets.
//
// With per-request bounds, Met finished requests met every bound,
// Attainment = Met / requests_total (failed and rejected requests are
// misses) and GoodputRPS = Met / the run's duration including the drain,
// vLLM's bench serve definition. Without per-request bounds (only
// percentile targets) the three are nil: attainment and goodput do not
// exist for a run-level target.
type SLOResult struct {
	TTFTMs     float64  `json:"ttft_ms"`
	TPOTMs     float64  `json:"tpot_ms"`
	E2EMs      float64  `json:"e2e_ms"`
	Met        *int64   `json:"met,omitempty"`
	Attainment *float64 `json:"attainment,omitempty"`
	GoodputRPS *float64 `json:"goodput_rps,omitempty"`
	// Targets are the percentile targets and whether they were met.
	Targets []TargetResult `json:"targets,omitempty"`
}

// Metric names a latency distribution of a Result.
type Metric string

// The latency metrics a target can bound.
const (
	TTFT Metric = "ttft"
	TPOT Metric = "tpot"
	ITL  Metric = "itl"
	E2E  Metric = "e2e"
)

// Target is a percentile latency target, e.g. p99 TTFT <= 2000 ms.
type Target struct {
	Metric     Metric  // TTFT, TPOT, ITL or E2E
	Percentile int     // 50, 90, 95 or 99
	MaxMs      float64 // bound in ms
}

// TargetResult is a Target with the run's value and verdict.
type TargetResult struct {
	Metric     Metric  `json:"metric"`
	Percentile int     `json:"percentile"`
	MaxMs      float64 `json:"max_ms"`
	// ValueMs is the run's percentile; nil (JSON null) when the metric
	// has no samples (nothing finished), and then the target is missed.
	ValueMs *float64 `json:"value_ms"`
	Met     bool     `json:"met"`
	// Count is the metric's samples and Within those <= MaxMs, counted
	// exactly; Met compares Within with the percentile's rank.
	Count  int64 `json:"count"`
	Within int64 `json:"within"`
}

// Straddles reports whether the shown value and the exact verdict
// disagree: the histogram's bucket holding the percentile spans the
// bound, so the value rounds to the other side of it.
func (t TargetResult) Straddles() bool {
	return t.ValueMs != nil && (*t.ValueMs <= t.MaxMs) != t.Met
}

// ValueString renders ValueMs with prec decimals, or "-" without samples.
func (t TargetResult) ValueString(prec int) string {
	if t.ValueMs == nil {
		return "-"
	}
	return strconv.FormatFloat(*t.ValueMs, 'f', prec, 64)
}

// SetTargets registers percentile targets, checked exactly at Finish:
// a target "pP <= X ms" is met when at least HdrHistogram's nearest rank
// of the values, max(1, round(P/100 x count)), are <= X, counted value by
// value as they arrive. The percentile shown beside the verdict is the
// histogram's (within 0.05 %), so a value within that rounding of the
// bound cannot turn a miss into "met". A target on a metric without
// samples is missed. Call before the first Add.
func (s *Summary) SetTargets(ts []Target) {
	for _, t := range ts {
		d := s.targetDist(t.Metric)
		if d == nil {
			continue // validated before; an unknown metric is reported missed
		}
		s.targets = append(s.targets, watchedTarget{t, d, d.watch(int64(math.Round(t.MaxMs * 1e6)))})
	}
}

// targetDist is the distribution a target's metric names (nil if none).
func (s *Summary) targetDist(metric Metric) *dist {
	switch metric {
	case TTFT:
		return &s.ttft
	case TPOT:
		return &s.tpot
	case ITL:
		return &s.itl
	case E2E:
		return &s.e2e
	}
	return nil
}

// watchedTarget is a registered target, its distribution and the index
// of its bound there.
type watchedTarget struct {
	Target
	d *dist
	i int
}

// targetResults returns the registered targets' verdicts, showing the
// percentiles of res.
func (s *Summary) targetResults(res *Result) []TargetResult {
	stats := map[Metric]Stat{TTFT: res.TTFT, TPOT: res.TPOT, ITL: res.ITL, E2E: res.E2E}
	out := make([]TargetResult, 0, len(s.targets))
	for _, w := range s.targets {
		tr := TargetResult{Metric: w.Metric, Percentile: w.Percentile, MaxMs: w.MaxMs, Count: w.d.n, Within: w.d.within[w.i]}
		if w.d.n > 0 {
			st := stats[w.Metric]
			v := map[int]float64{50: st.P50, 90: st.P90, 95: st.P95, 99: st.P99}[w.Percentile]
			rank := max(int64(float64(w.Percentile)/100*float64(w.d.n)+0.5), 1)
			tr.ValueMs, tr.Met = &v, tr.Within >= rank
		}
		out = append(out, tr)
	}
	return out
}

// SetSLO sets the latency bounds used for SLO attainment and goodput. Call
// it before the first Add. Without it Result.SLO is nil.
func (s *Summary) SetSLO(slo SLO) { s.slo = slo }
