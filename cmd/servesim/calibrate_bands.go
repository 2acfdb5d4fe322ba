package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/calibrate"
	"github.com/servesim/servesim/internal/perf"
)

// runTransfer prints the transfer band of a lent calibration and its
// leave-one-accelerator-out coverage on the embedded bundles of the other
// accelerators and the bundles refs.
func runTransfer(w io.Writer, refs []string, calFile, use string, tp int, tpSet bool) error {
	_, name, lender, en, err := pickCalibration(calFile, use, "no calibration that may be lent (all are PyTorch-derived)")
	if err != nil {
		return err
	}
	how := ""
	if use == "" {
		how = " (the one an uncalibrated accelerator borrows)"
	}
	sub, err := fs.Sub(assets.FS(), "profiles")
	if err != nil {
		return err
	}
	ts, err := calibrate.EmbeddedTables(sub, lender)
	if err != nil {
		return err
	}
	embedded := len(ts)
	for _, r := range refs {
		t, err := loadTables("--profiles", r, tp, tpSet)
		if err != nil {
			return err
		}
		ts = append(ts, t)
	}
	groups, err := calibrate.GroupResiduals(en.Efficiency(), lender, ts)
	if err != nil {
		return badInput(err)
	}
	printCalibrationHeader(w, lender, name, how, en)
	fmt.Fprintf(w, "\nstep residuals on the tables of other accelerators:\n")
	for _, t := range ts {
		if strings.EqualFold(t.Accelerator, lender) {
			continue
		}
		if err := printOwnBand(w, fmt.Sprintf("%-10s", t.Accelerator), en.Efficiency(), t); err != nil {
			return err
		}
	}
	if len(groups) == 0 {
		return badInput(fmt.Errorf("no tables of an accelerator other than %s: give --profiles BUNDLE of other accelerators", lender))
	}
	var all []float64
	var accs []string
	for _, g := range groups {
		all = append(all, g.Residuals...)
		accs = append(accs, g.Accelerator)
	}
	b, err := calibrate.NewBand(all, 0.9)
	if err != nil {
		return badInput(err)
	}
	fmt.Fprintf(w, "90%% band from all of them (%s): %s\n", strings.Join(accs, ", "), b)
	if embedded > 0 && len(ts) > embedded {
		// the band a run uses is taken from the embedded tables alone: its
		// coverage on the accelerators only --profiles gave is independent
		eb, err := calibrate.TransferBand(en.Efficiency(), lender, "an accelerator without tables", ts[:embedded])
		if err != nil {
			return badInput(err)
		}
		fmt.Fprintf(w, "the band a run uses (embedded tables only): %s\n", eb)
		inEmbedded := map[string]bool{}
		for _, t := range ts[:embedded] {
			inEmbedded[t.Accelerator] = true
		}
		for _, g := range groups {
			if !inEmbedded[g.Accelerator] {
				below, above := eb.Outside(g.Residuals)
				fmt.Fprintf(w, "  %s steps inside it: %.1f%% of %d (below %.1f%%, above %.1f%%)\n", g.Accelerator, 100*eb.Inside(g.Residuals), len(g.Residuals), 100*below, 100*above)
			}
		}
	}
	if len(groups) < 2 {
		fmt.Fprintf(w, "leave-one-accelerator-out: needs the tables of two accelerators other than %s (have %s); give --profiles BUNDLE of another\n", lender, strings.Join(accs, ", "))
		return nil
	}
	loao, err := calibrate.LeaveOneAccelerator(groups)
	if err != nil {
		return badInput(err)
	}
	fmt.Fprintf(w, "leave-one-accelerator-out (90%% band from the others; held-out steps inside, nominal 90%%):\n")
	fmt.Fprintf(w, "  %-10s %-24s %-18s %s\n", "held out", "band from", "band", "inside (below, above)")
	for _, r := range loao {
		below, above := r.Band.Outside(groups[indexOf(groups, r.HeldOut)].Residuals)
		fmt.Fprintf(w, "  %-10s %-24s %+6.1f%% .. %+6.1f%%  %.1f%% of %d (%.1f%%, %.1f%%)\n", r.HeldOut, strings.Join(r.From, ", "), 100*r.Band.Lo, 100*r.Band.Hi, 100*r.Covered, r.Steps, 100*below, 100*above)
	}
	return nil
}

// runCrossModel prints the cross-model band of an accelerator's own
// calibration and its leave-one-model-out coverage on the accelerator's
// embedded bundles and the bundles refs.
func runCrossModel(w io.Writer, refs []string, calFile, use string, tp int, tpSet bool) error {
	file, name, acc, en, err := pickCalibration(calFile, use, "no vLLM-fitted calibration to default to")
	if err != nil {
		return err
	}
	how := ""
	if use == "" {
		how = " (the one an uncalibrated accelerator borrows; --use NAME for another)"
	}
	acc = canonicalAccelerator(file, acc)
	sub, err := fs.Sub(assets.FS(), "profiles")
	if err != nil {
		return err
	}
	ts, err := calibrate.AcceleratorTables(sub, acc)
	if err != nil {
		return err
	}
	for _, r := range refs {
		t, err := loadTables("--profiles", r, tp, tpSet)
		if err != nil {
			return err
		}
		if !strings.EqualFold(t.Accelerator, acc) {
			return badInput(fmt.Errorf("--profiles %s: tables of %s, but --cross-model checks the calibration of %s on its own tables; give --use %s or bundles of %s", r, t.Accelerator, acc, t.Accelerator, acc))
		}
		ts = append(ts, t)
	}
	eff := en.Efficiency()
	printCalibrationHeader(w, acc, name, how, en)
	fmt.Fprintf(w, "\nstep residuals on the %s tables, by model:\n", acc)
	for _, t := range ts {
		if err := printOwnBand(w, fmt.Sprintf("%-36s", t.ModelName), eff, t); err != nil {
			return err
		}
	}
	if len(ts) == 0 {
		return badInput(fmt.Errorf("no tables of %s: give --profiles BUNDLE of it", acc))
	}
	b, err := calibrate.CrossModelBand(eff, acc, "", ts)
	if err != nil {
		return badInput(err)
	}
	fmt.Fprintf(w, "band of a model without tables: %s\n", b)
	groups, err := calibrate.GroupByModel(eff, acc, "", ts)
	if err != nil {
		return badInput(err)
	}
	if len(groups) < 2 {
		fmt.Fprintf(w, "leave-one-model-out: needs the tables of two models of %s (have %s); give --profiles BUNDLE of another\n", acc, groups[0].Model)
		return nil
	}
	lomo, err := calibrate.LeaveOneModel(groups)
	if err != nil {
		return badInput(err)
	}
	fmt.Fprintf(w, "leave-one-model-out (90%% band from the others; held-out steps inside, nominal 90%%):\n")
	fmt.Fprintf(w, "  %-36s %-18s %s\n", "held out", "band", "inside (below, above)")
	for i, r := range lomo {
		below, above := r.Band.Outside(groups[i].Residuals)
		fmt.Fprintf(w, "  %-36s %+6.1f%% .. %+6.1f%%  %.1f%% of %d (%.1f%%, %.1f%%)\n", r.HeldOut, 100*r.Band.Lo, 100*r.Band.Hi, 100*r.Covered, r.Steps, 100*below, 100*above)
	}
	return nil
}

// printBandCoverage prints the coverage, on t's steps, of the 90 % step
// band that the calibration of accelerator acc has on acc's embedded
// bundles (tp 1), t's own bundle left out: how often a step of tables the
// band was not taken from lies inside it, against the nominal 90 %.
func printBandCoverage(w io.Writer, eff perf.Efficiency, acc string, t *calibrate.Tables) error {
	root, err := fs.Sub(assets.FS(), "profiles")
	if err != nil {
		return err
	}
	// A name that can be no folder of the tree has no tables (said below).
	all, err := calibrate.AcceleratorTables(root, acc)
	if err != nil && !errors.Is(err, calibrate.ErrAcceleratorName) {
		return err
	}
	var train []*calibrate.Tables
	var names []string
	for _, bt := range all {
		rel := path.Dir(bt.Source) // the bundle folder, above its tp1
		if strings.Contains(t.Source+"/", rel+"/") {
			continue // the checked bundle itself
		}
		train, names = append(train, bt), append(names, rel)
	}
	if len(train) == 0 {
		fmt.Fprintf(w, "  90%% band: no other embedded %s tables to take it from\n", acc)
		return nil
	}
	b, covered, steps, err := calibrate.BandCoverage(eff, train, t)
	if err != nil {
		return badInput(err)
	}
	fmt.Fprintf(w, "  90%% band on the embedded %s tables (%s): %s; this bundle's steps inside: %.1f%% of %d\n",
		acc, strings.Join(names, ", "), b, 100*covered, steps)
	return nil
}
