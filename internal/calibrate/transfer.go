package calibrate

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/servesim/servesim/internal/perf"
)

// Transfer bands. A deployment on an accelerator without measured tables
// borrows another accelerator's calibration (File.Fallback). Its step band
// cannot come from its own tables, and the lender's band, taken on the
// lender's own tables, states the error of the roofline where it was
// fitted, not where it is lent: it is far too narrow there. The transfer
// band is taken instead from the lent calibration's step residuals on the
// tables of accelerators other than the one it was fitted on: the error of
// lending a calibration across GPUs, measured where it can be.
//
// LeaveOneAccelerator checks that band without fitting anything: each
// accelerator in turn is held out, the band is taken from the others, and
// the share of the held-out accelerator's steps inside it is its coverage.

// TransferLabel names a transfer band: which calibration, lent to which
// accelerator, with the band taken from which accelerators' tables.
func TransferLabel(lender, target string, from []string) string {
	return fmt.Sprintf("transfer band: calibration of %s lent to %s, band from tables of %s", lender, target, strings.Join(from, ", "))
}

// TransferBand is the 90 % band of efficiencies eff, the calibration of
// accelerator lender, lent to accelerator target: pooled step residuals on
// every table in ts whose accelerator is neither the lender nor the target.
// The band is labelled (TransferLabel). It fails when no such table exists.
func TransferBand(eff perf.Efficiency, lender, target string, ts []*Tables) (Band, error) {
	from, groups, err := groupResiduals(eff, ts, func(t *Tables) (string, bool) {
		return t.Accelerator, !strings.EqualFold(t.Accelerator, lender) && !strings.EqualFold(t.Accelerator, target)
	})
	if err != nil {
		return Band{}, err
	}
	var res []float64
	for _, r := range groups {
		res = append(res, r...)
	}
	if len(res) == 0 {
		return Band{}, fmt.Errorf("transfer band for %s lent to %s: no measured tables of a third accelerator to take it from", lender, target)
	}
	b, err := NewBand(res, 0.9)
	if err != nil {
		return Band{}, err
	}
	b.Label = TransferLabel(lender, target, from)
	return b, nil
}

// groupResiduals computes the step residuals of eff on every table of ts
// that key keeps and pools them by the table's key, in order of first
// appearance: keys[i] names the pool res[i].
func groupResiduals(eff perf.Efficiency, ts []*Tables, key func(*Tables) (string, bool)) (keys []string, res [][]float64, err error) {
	idx := map[string]int{}
	for _, t := range ts {
		k, keep := key(t)
		if !keep {
			continue
		}
		r, err := StepResiduals(eff, t)
		if err != nil {
			return nil, nil, err
		}
		i, ok := idx[k]
		if !ok {
			i = len(keys)
			idx[k] = i
			keys = append(keys, k)
			res = append(res, nil)
		}
		res[i] = append(res[i], r...)
	}
	return keys, res, nil
}

// EmbeddedTables loads the tp-1 tables of every profile bundle under root
// (laid out <hw>/<org>/<model>/<dtype>/meta.yaml, as the embedded
// profiles), in path order, leaving out the bundles of accelerator skip
// (case-insensitive; "" keeps all).
func EmbeddedTables(root fs.FS, skip string) ([]*Tables, error) {
	return bundleTables(root, "*", skip)
}

// ErrAcceleratorName is returned (wrapped) by AcceleratorTables for a name
// that cannot be one folder of the profile tree.
var ErrAcceleratorName = errors.New("invalid accelerator name")

// AcceleratorTables loads the tp-1 tables of the profile bundles of
// accelerator acc under root (laid out as EmbeddedTables reads), in path
// order; none is not an error. acc names one folder literally: glob
// metacharacters in it match only themselves.
func AcceleratorTables(root fs.FS, acc string) ([]*Tables, error) {
	if acc == "" || acc == "." || !fs.ValidPath(acc) || strings.Contains(acc, "/") {
		return nil, fmt.Errorf("profile tables: %w %q", ErrAcceleratorName, acc)
	}
	return bundleTables(root, globLiteral(acc), "")
}

// globLiteral escapes the metacharacters of path.Match in s, so that the
// pattern it returns matches s only.
func globLiteral(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\*?[]`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// bundleTables loads the tp-1 tables of the bundles <hw>/*/*/*/meta.yaml
// under root for the glob pattern hw, leaving out accelerator skip.
func bundleTables(root fs.FS, hw, skip string) ([]*Tables, error) {
	metas, err := fs.Glob(root, hw+"/*/*/*/meta.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(metas)
	var out []*Tables
	for _, m := range metas {
		dir := path.Dir(m)
		if skip != "" && strings.EqualFold(strings.SplitN(dir, "/", 2)[0], skip) {
			continue
		}
		sub, err := fs.Sub(root, dir)
		if err != nil {
			return nil, err
		}
		t, err := LoadTables(sub, dir, 1)
		if err != nil {
			return nil, fmt.Errorf("embedded bundle %s: %w", dir, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// AcceleratorResiduals are the step residuals of one accelerator's tables.
type AcceleratorResiduals struct {
	Accelerator string
	Residuals   []float64
}

// LOAOResult is one accelerator held out of a transfer band.
type LOAOResult struct {
	HeldOut string
	// From are the accelerators the band was taken from.
	From    []string
	Band    Band
	Covered float64 // share of HeldOut's Steps residuals inside Band
	Steps   int
}

// LeaveOneAccelerator holds each accelerator of groups out in turn, takes
// the 90 % band of the others' pooled residuals and reports the share of
// the held-out accelerator's residuals inside it. It needs two accelerators
// or more, each with residuals.
func LeaveOneAccelerator(groups []AcceleratorResiduals) ([]LOAOResult, error) {
	if len(groups) < 2 {
		return nil, fmt.Errorf("leave-one-accelerator-out needs the tables of two accelerators or more besides the calibration's own (have %d)", len(groups))
	}
	names := make([]string, len(groups))
	res := make([][]float64, len(groups))
	for i, g := range groups {
		if len(g.Residuals) == 0 {
			return nil, fmt.Errorf("leave-one-accelerator-out: %s has no step residuals", g.Accelerator)
		}
		names[i], res[i] = g.Accelerator, g.Residuals
	}
	return holdEachOut(names, res)
}

// holdEachOut holds each group of residuals res (named names) out in turn
// from a 90 % band pooled over the others; every group has residuals.
func holdEachOut(names []string, res [][]float64) ([]LOAOResult, error) {
	out := make([]LOAOResult, 0, len(names))
	for i := range names {
		var pool []float64
		var from []string
		for j := range names {
			if j != i {
				pool = append(pool, res[j]...)
				from = append(from, names[j])
			}
		}
		b, err := NewBand(pool, 0.9)
		if err != nil {
			return nil, err
		}
		out = append(out, LOAOResult{HeldOut: names[i], From: from, Band: b, Covered: b.Inside(res[i]), Steps: len(res[i])})
	}
	return out, nil
}

// GroupResiduals computes the step residuals of eff on each table and
// pools them by accelerator (in order of first appearance), leaving out
// the tables of accelerator lender: the input of LeaveOneAccelerator for
// the calibration of lender.
func GroupResiduals(eff perf.Efficiency, lender string, ts []*Tables) ([]AcceleratorResiduals, error) {
	keys, res, err := groupResiduals(eff, ts, func(t *Tables) (string, bool) {
		return t.Accelerator, !strings.EqualFold(t.Accelerator, lender)
	})
	if err != nil {
		return nil, err
	}
	out := make([]AcceleratorResiduals, len(keys))
	for i := range keys {
		out[i] = AcceleratorResiduals{Accelerator: keys[i], Residuals: res[i]}
	}
	return out, nil
}
