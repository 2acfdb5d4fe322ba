package validate

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/calibrate"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/workload"
)

// Error bars. The step-latency model's error on the accelerator's measured
// tables (calibrate.StepResiduals: per-layer op sums and attention rows) is
// summarised as a 90 % band [Lo, Hi] of predicted/measured - 1. The run is
// simulated twice more with every step time scaled to the band's ends,
// predicted/(1+Hi) and predicted/(1+Lo); a statistic's interval spans its
// values in the three runs, so queueing amplifies or damps the step error
// as it does in the engine. Replaying a measured trace has no seed
// variance; synthetic workloads would add it (not done here).

// StepBand is the 90 % band of the step-latency model's relative error
// for scenario s: the roofline's residuals on the measured tables of its
// first instance group's deployment; when there are none, on an
// accelerator that borrows a calibration, the transfer band of that
// calibration on the embedded tables of other accelerators
// (calibrate.TransferBand) and, on an accelerator with a calibration of its
// own, the cross-model band of that calibration on the accelerator's
// tables of other models (calibrate.CrossModelBand); both are labelled. It
// fails when s does not use the roofline or no band can be given.
func StepBand(s *config.Scenario) (*calibrate.Band, error) {
	return errorBand(true, s)
}

// errorBand returns the band for scenario s, or nil when error bars are
// off. Only the roofline predictor has residuals to take it from.
func errorBand(on bool, s *config.Scenario) (*calibrate.Band, error) {
	if !on {
		return nil, nil
	}
	if s.Predictor.Kind != config.PredictorRoofline {
		return nil, fmt.Errorf("--error-bars needs --predictor roofline: the intervals come from the roofline's residuals on the accelerator's profile tables (predictor %q)", s.Predictor.Kind)
	}
	if len(s.Instances) == 0 || s.Instances[0].TP == nil {
		return nil, fmt.Errorf("error bars: the scenario has no instance group")
	}
	hwName, tp := s.Instances[0].Hardware, *s.Instances[0].TP
	if hwName == "" {
		hwName = s.Hardware
	}
	var root fs.FS
	if s.Predictor.Profiles != "" && s.Predictor.Profiles != "builtin" {
		root = os.DirFS(s.Predictor.Profiles)
	} else {
		sub, err := fs.Sub(assets.FS(), "profiles")
		if err != nil {
			return nil, err
		}
		root = sub
	}
	file, err := calibrationFile(s.Predictor.Calibration)
	if err != nil {
		return nil, err
	}
	dir, err := perf.FindBundle(root, hwName, s.Model, s.Dtype, tp)
	if err != nil {
		return noTablesBand(file, root, hwName, s.Model, err)
	}
	bundleDir := path.Dir(dir)
	bundle, err := fs.Sub(root, bundleDir)
	if err != nil {
		return nil, err
	}
	t, err := calibrate.LoadTables(bundle, bundleDir, tp)
	if err != nil {
		return nil, fmt.Errorf("error bars: %w", err)
	}
	en, ok := file.Entry(t.Accelerator)
	if !ok {
		lender, ok := file.Fallback()
		if !ok {
			return nil, fmt.Errorf("error bars: %s is not calibrated and no calibration may be lent", t.Accelerator)
		}
		en, _ = file.Entry(lender)
	}
	res, err := calibrate.StepResiduals(en.Efficiency(), t)
	if err != nil {
		return nil, err
	}
	b, err := calibrate.NewBand(res, 0.9)
	if err != nil {
		return nil, err
	}
	return &b, nil
}

// noTablesBand is the band of a deployment of model on accelerator hwName
// without measured tables of its own (noTables says why). An accelerator
// with a calibration of its own gets the cross-model band: that
// calibration's residuals on the accelerator's tables of other models under
// root (the embedded or --profiles bundles). One that borrows a
// calibration gets the transfer band: the lent calibration's band on the
// embedded tables of the accelerators other than the lender and hwName; so
// does one whose own calibration was fitted on per-op tables
// (calibrate.Entry.Kept) when it has no step tables to take a band from.
func noTablesBand(file *calibrate.File, root fs.FS, hwName, model string, noTables error) (*calibrate.Band, error) {
	acc, accErr := hw.Lookup(hwName)
	if accErr == nil {
		hwName = acc.Name
	}
	en, own := file.Entry(hwName)
	if own {
		b, err := crossModelBand(en, root, hwName, model, noTables)
		if err == nil || en.Kept == "" {
			return b, err
		}
		// A calibration fitted on per-op tables (a performance database)
		// has no step tables of the accelerator to take a band from: the
		// band of a calibration carried to an accelerator without tables
		// (the transfer band of the one it keeps fields from) stands in.
	}
	lender, ok := file.Fallback()
	if !own && accErr == nil {
		// The calibration a run borrows (calibration_from, else the
		// nearest calibrated architecture): its transfer band.
		if cat, err := hw.Default(); err == nil {
			if l, _, lok, lerr := file.Lender(acc, cat); lerr == nil && lok {
				lender, ok = l, true
			}
		}
	}
	if !ok {
		return nil, fmt.Errorf("error bars: %s is not calibrated and no calibration may be lent: no band", hwName)
	}
	en, _ = file.Entry(lender)
	sub, err := fs.Sub(assets.FS(), "profiles")
	if err != nil {
		return nil, err
	}
	ts, err := calibrate.EmbeddedTables(sub, lender)
	if err != nil {
		return nil, fmt.Errorf("error bars: %w", err)
	}
	b, err := calibrate.TransferBand(en.Efficiency(), lender, hwName, ts)
	if err != nil {
		return nil, fmt.Errorf("error bars: %s has no measured tables of its own (%v) and %w", hwName, noTables, err)
	}
	return &b, nil
}

// crossModelBand is the cross-model band of accelerator acc's own
// calibration en for a deployment of model without tables (noTables says
// why): its residuals on acc's tp-1 tables of other models under root.
func crossModelBand(en *calibrate.Entry, root fs.FS, acc, model string, noTables error) (*calibrate.Band, error) {
	ts, err := calibrate.AcceleratorTables(root, acc)
	if err != nil {
		return nil, fmt.Errorf("error bars: %w", err)
	}
	b, err := calibrate.CrossModelBand(en.Efficiency(), acc, model, ts)
	if err != nil {
		return nil, fmt.Errorf("error bars: %v (%s has a calibration of its own, so its band would come from its tables of other models: %w)", noTables, acc, err)
	}
	return &b, nil
}

func calibrationFile(p string) (*calibrate.File, error) {
	if p == "" {
		return calibrate.Builtin()
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("--calibration: %w", err)
	}
	defer f.Close()
	return calibrate.Load(f, p)
}

// addIntervals simulates the run at both ends of the band and sets every
// row's interval, whether the measured value lies in it, and the coverage.
func addIntervals(rep *Report, built *assemble.Built, band calibrate.Band, newSrc func() (workload.Source, error), offsetMs float64) error {
	fast, slow := band.StepScales()
	lo := make([]float64, len(rep.Stats))
	hi := make([]float64, len(rep.Stats))
	for i, r := range rep.Stats {
		lo[i], hi[i] = r.Simulated, r.Simulated
	}
	for _, f := range []float64{fast, slow} {
		ttft, tpot, e2e, err := simStats(built.Scaled(f), newSrc, offsetMs)
		if err != nil {
			return fmt.Errorf("error bars (steps x%.3f): %w", f, err)
		}
		stats := map[string]metrics.Stat{"TTFT": metrics.Stats(ttft), "TPOT": metrics.Stats(tpot), "E2E": metrics.Stats(e2e)}
		for i, r := range rep.Stats {
			st := stats[r.Metric]
			v := map[string]float64{"mean": st.Mean, "p50": st.P50, "p90": st.P90, "p95": st.P95, "p99": st.P99}[r.Stat]
			lo[i], hi[i] = math.Min(lo[i], v), math.Max(hi[i], v)
		}
	}
	inside := 0
	for i := range rep.Stats {
		l, h := round3(lo[i]), round3(hi[i])
		in := rep.Stats[i].Measured >= l && rep.Stats[i].Measured <= h
		if in {
			inside++
		}
		rep.Stats[i].Lo, rep.Stats[i].Hi, rep.Stats[i].Inside = &l, &h, &in
	}
	rep.Band = band.String()
	rep.Coverage = float64(inside) / float64(len(rep.Stats))
	return nil
}

func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}
