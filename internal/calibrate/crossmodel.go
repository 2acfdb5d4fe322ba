package calibrate

import (
	"fmt"
	"path"
	"strings"

	"github.com/servesim/servesim/internal/perf"
)

// Cross-model bands. A deployment on an accelerator that has a calibration
// of its own but no measured tables for the deployment's model (or tp)
// has no own-tables band, and no transfer band applies: its calibration is
// not lent. The step model's error there is the error of the accelerator's
// calibration on a model it has no tables of. The cross-model band
// measures that where it can: the calibration's step residuals on the
// accelerator's tables of its other models, pooled, 5th to 95th
// percentile.
//
// LeaveOneModel checks that band without fitting anything: each model in
// turn is held out, the band is taken from the others' tables, and the
// share of the held-out model's steps inside it is its coverage.

// CrossModelLabel names a cross-model band: the calibration of accelerator
// acc, with the band taken from its tables of models (short names).
func CrossModelLabel(acc string, models []string) string {
	return fmt.Sprintf("cross-model band: %s calibration, band from tables of %s", acc, strings.Join(models, ", "))
}

// ModelResiduals are the step residuals of one model's tables.
type ModelResiduals struct {
	Model     string
	Residuals []float64
}

// GroupByModel computes the step residuals of eff on every table in ts
// of accelerator acc (case-insensitive) and pools them by model, in order
// of first appearance, leaving out the tables of model skip ("" keeps
// all). Tables of other accelerators are ignored.
func GroupByModel(eff perf.Efficiency, acc, skip string, ts []*Tables) ([]ModelResiduals, error) {
	keys, res, err := groupResiduals(eff, ts, func(t *Tables) (string, bool) {
		return t.ModelName, strings.EqualFold(t.Accelerator, acc) && (skip == "" || !strings.EqualFold(t.ModelName, skip))
	})
	if err != nil {
		return nil, err
	}
	out := make([]ModelResiduals, len(keys))
	for i := range keys {
		out[i] = ModelResiduals{Model: keys[i], Residuals: res[i]}
	}
	return out, nil
}

// CrossModelBand is the 90 % band of efficiencies eff, the calibration of
// accelerator acc, for a deployment of model on acc without tables: pooled
// step residuals on every table in ts of acc whose model is not model. The
// band is labelled (CrossModelLabel). It fails when no such table exists.
func CrossModelBand(eff perf.Efficiency, acc, model string, ts []*Tables) (Band, error) {
	groups, err := GroupByModel(eff, acc, model, ts)
	if err != nil {
		return Band{}, err
	}
	var res []float64
	var from []string
	for _, g := range groups {
		res = append(res, g.Residuals...)
		from = append(from, path.Base(g.Model))
	}
	if len(res) == 0 {
		return Band{}, fmt.Errorf("cross-model band for %s on %s: no measured %s tables of another model to take it from", model, acc, acc)
	}
	b, err := NewBand(res, 0.9)
	if err != nil {
		return Band{}, err
	}
	b.Label = CrossModelLabel(acc, from)
	return b, nil
}

// LeaveOneModel holds each model of groups out in turn, takes the 90 %
// band of the others' pooled residuals and reports the share of the
// held-out model's residuals inside it (HeldOut and From name models). It
// needs two models or more, each with residuals.
func LeaveOneModel(groups []ModelResiduals) ([]LOAOResult, error) {
	if len(groups) < 2 {
		return nil, fmt.Errorf("leave-one-model-out needs the tables of two models or more (have %d)", len(groups))
	}
	names := make([]string, len(groups))
	res := make([][]float64, len(groups))
	for i, g := range groups {
		if len(g.Residuals) == 0 {
			return nil, fmt.Errorf("leave-one-model-out: %s has no step residuals", g.Model)
		}
		names[i], res[i] = g.Model, g.Residuals
	}
	return holdEachOut(names, res)
}
