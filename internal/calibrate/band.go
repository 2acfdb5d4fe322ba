package calibrate

import (
	"fmt"
	"math"
	"sort"

	"github.com/servesim/servesim/internal/perf"
)

// Error bars of the step-latency model. A step's time is dominated by the
// per-layer ops and attention; the relative error of the roofline on a
// step is therefore close to its error on one layer's ops summed at the
// step's token count (launch-dominated small ops weigh what they take, not
// one row each), or on attention. StepResiduals collects those errors,
// e = predicted/measured - 1, on a bundle's tables; a Band is their 5th
// and 95th percentiles, so that a measured step lies in [predicted/(1+Hi),
// predicted/(1+Lo)] with 90 % nominal coverage.

// perStepOps are the dense ops that run once a step (not once a layer).
var perStepOps = map[string]bool{perf.OpEmbedding: true, perf.OpFinalLayernorm: true}

// StepResiduals returns the step-level relative errors of efficiencies eff
// on tables t: one per token count of the dense table (the per-layer ops'
// predicted sum over their measured sum) and one per attention row.
func StepResiduals(eff perf.Efficiency, t *Tables) ([]float64, error) {
	r, err := perf.NewRoofline(t.Model, t.HW, eff, t.TP)
	if err != nil {
		return nil, fmt.Errorf("residuals on %s: %w", t.Source, err)
	}
	type sum struct{ pred, meas float64 }
	layer := map[int]*sum{}
	var out []float64
	for i := range t.Points {
		p := &t.Points[i]
		if !(p.Ns > 0) {
			continue
		}
		switch p.Category {
		case perf.CategoryDense:
			if perStepOps[p.Op] {
				continue
			}
			s := layer[p.X]
			if s == nil {
				s = &sum{}
				layer[p.X] = s
			}
			s.pred += predictOp(r, p)
			s.meas += p.Ns
		case perf.CategoryAttention:
			out = append(out, predictOp(r, p)/p.Ns-1)
		}
	}
	xs := make([]int, 0, len(layer))
	for x := range layer {
		xs = append(xs, x)
	}
	sort.Ints(xs)
	for _, x := range xs {
		out = append(out, layer[x].pred/layer[x].meas-1)
	}
	return out, nil
}

// Band is a nominal-coverage interval of the step model's relative error
// e = predicted/measured - 1.
type Band struct {
	Lo, Hi   float64 // quantiles of e
	Coverage float64 // nominal coverage, e.g. 0.9
	Rows     int     // residuals it was taken from
	// Label says where the band comes from when it is not the deployment's
	// own tables (a transfer band, TransferLabel); empty otherwise.
	Label string
}

// NewBand takes the central coverage interval of residuals.
func NewBand(residuals []float64, coverage float64) (Band, error) {
	if len(residuals) == 0 {
		return Band{}, fmt.Errorf("error band: no residuals (the tables have no dense or attention rows)")
	}
	if !(coverage > 0 && coverage < 1) {
		return Band{}, fmt.Errorf("error band: coverage %v, want a fraction in (0, 1)", coverage)
	}
	s := append([]float64(nil), residuals...)
	sort.Float64s(s)
	tail := (1 - coverage) / 2
	return Band{Lo: quantile(s, tail), Hi: quantile(s, 1-tail), Coverage: coverage, Rows: len(s)}, nil
}

// StepScales are the factors that turn a predicted step time into the ends
// of its interval: measured = predicted/(1+e), so the fastest plausible
// step is predicted/(1+Hi) and the slowest predicted/(1+Lo).
func (b Band) StepScales() (fast, slow float64) {
	return 1 / (1 + b.Hi), 1 / (1 + math.Max(b.Lo, -0.99))
}

// Inside is the share of residuals inside the band.
func (b Band) Inside(residuals []float64) float64 {
	if len(residuals) == 0 {
		return math.NaN()
	}
	n := 0
	for _, e := range residuals {
		if e >= b.Lo && e <= b.Hi {
			n++
		}
	}
	return float64(n) / float64(len(residuals))
}

// Outside is the share of residuals below the band (the model too fast:
// e < Lo) and above it (too slow: e > Hi).
func (b Band) Outside(residuals []float64) (below, above float64) {
	if len(residuals) == 0 {
		return math.NaN(), math.NaN()
	}
	nb, na := 0, 0
	for _, e := range residuals {
		switch {
		case e < b.Lo:
			nb++
		case e > b.Hi:
			na++
		}
	}
	return float64(nb) / float64(len(residuals)), float64(na) / float64(len(residuals))
}

func (b Band) String() string {
	if b.Label != "" {
		return fmt.Sprintf("%s: step error %+.1f%% .. %+.1f%% (%.0f%% nominal, %d residuals)", b.Label, 100*b.Lo, 100*b.Hi, 100*b.Coverage, b.Rows)
	}
	return fmt.Sprintf("step error %+.1f%% .. %+.1f%% (%.0f%% nominal, %d residuals)", 100*b.Lo, 100*b.Hi, 100*b.Coverage, b.Rows)
}
