package calibrate

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"

	"github.com/servesim/servesim/internal/csvtable"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/perf"
)

// Bundle formats LoadInput reads.
const (
	// FormatBundle is the profile bundle of servesim's measured tables
	// (meta.yaml, tp<N>/dense.csv, per_sequence.csv, attention.csv,
	// moe.csv, skew_fit.csv): vLLM kernels.
	FormatBundle = "bundle"
	// FormatV0 is LLMServingSim's first per-layer format (tp<N>/layers.csv
	// and attention.csv): HuggingFace modules in PyTorch eager mode.
	FormatV0 = "v0"
)

// Tables is one set of measured tables at one tensor-parallel degree, ready
// for the roofline: the fit or check Input, the accelerator's catalog name,
// where it came from and its format.
type Tables struct {
	Input
	Accelerator string
	// ModelName is the model the tables were measured on, as the model
	// catalog names it (e.g. meta-llama/Llama-3.1-8B).
	ModelName string
	Source    string
	Format    string
}

// LoadTables reads the tables at tensor-parallel degree tp of the folder
// fsys, whose path (slash-separated, for names and for the v0 layout) is
// source. The folder is a profile bundle (holding meta.yaml), a v0 model
// folder (holding tp<N>/layers.csv) or a v0 tp<N> folder (then tp may be 0
// or must match). The accelerator and model are resolved in the embedded
// catalogs.
func LoadTables(fsys fs.FS, source string, tp int) (*Tables, error) {
	if IsV0Dir(fsys, ".") {
		ref, err := ParseV0Path(source)
		if err != nil {
			return nil, err
		}
		if tp != 0 && tp != ref.TP {
			return nil, fmt.Errorf("%s holds tp%d tables but tp %d was asked for", source, ref.TP, tp)
		}
		return loadV0(fsys, ".", source, ref)
	}
	if tp < 1 {
		tp = 1
	}
	tpDir := "tp" + strconv.Itoa(tp)
	if IsV0Dir(fsys, tpDir) {
		ref, err := ParseV0Path(path.Join(source, tpDir))
		if err != nil {
			return nil, err
		}
		return loadV0(fsys, tpDir, path.Join(source, tpDir), ref)
	}
	meta, err := ReadBundleMeta(fsys, source)
	if err != nil {
		return nil, fmt.Errorf("%w (or a v0 profile folder holding %s/layers.csv)", err, tpDir)
	}
	acc, err := hw.Lookup(meta.Hardware)
	if err != nil {
		return nil, fmt.Errorf("%s/meta.yaml hardware: %w", source, err)
	}
	t := &Tables{Accelerator: acc.Name, ModelName: meta.Model, Source: path.Join(source, tpDir), Format: FormatBundle}
	if t.Input, err = inputFor(acc, meta.Model, meta.Variant, tp, source+"/meta.yaml"); err != nil {
		return nil, err
	}
	if _, err := fs.Stat(fsys, tpDir); err != nil {
		return nil, fmt.Errorf("%s has no %s/ tables (tp %d); pick a degree the bundle was measured at", source, tpDir, tp)
	}
	if t.Points, err = perf.ReadPoints(fsys, tpDir); err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	moe, err := readMoECSV(fsys, path.Join(tpDir, "moe.csv"))
	if err != nil {
		return nil, err
	}
	t.Points = append(t.Points, moe...)
	if t.Skew, t.DecodeSkew, err = BundleSkew(fsys, tpDir, tp); err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	return t, nil
}

func loadV0(fsys fs.FS, dir, source string, ref V0Ref) (*Tables, error) {
	acc, err := hw.Lookup(ref.Hardware)
	if err != nil {
		return nil, fmt.Errorf("%s: hardware folder %s: %w", source, ref.Hardware, err)
	}
	t := &Tables{Accelerator: acc.Name, ModelName: ref.Model, Source: source, Format: FormatV0}
	if t.Input, err = inputFor(acc, ref.Model, "", ref.TP, source); err != nil {
		return nil, err
	}
	if t.Points, err = ReadV0Points(fsys, dir); err != nil {
		return nil, err
	}
	return t, nil
}

func inputFor(acc hw.Accelerator, modelName, variant string, tp int, where string) (Input, error) {
	m, err := model.Load(model.Builtin(), modelName)
	if err != nil {
		return Input{}, fmt.Errorf("%s: model: %w", where, err)
	}
	rm, err := ModelOf(m, variant)
	if err != nil {
		return Input{}, err
	}
	if variant == "" {
		variant = m.Dtype
	}
	rh, err := HWOf(acc, variant)
	if err != nil {
		return Input{}, fmt.Errorf("%s: %w", where, err)
	}
	return Input{Model: rm, HW: rh, TP: tp}, nil
}

// openTable opens one CSV table of fsys (csvtable: header columns by name,
// errors at file:line).
func openTable(fsys fs.FS, name string, required ...string) (*csvtable.Table, io.Closer, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, nil, err
	}
	t, err := csvtable.New(name, f, required...)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return t, f, nil
}

// optNum parses column c of t's current row as a number >= 0; an empty
// field is ok=false.
func optNum(t *csvtable.Table, c string) (float64, bool, error) {
	if t.Str(c) == "" {
		return 0, false, nil
	}
	v, err := t.NonNeg(c)
	return v, err == nil, err
}

// readOptionalPoints reads the optional table name of fsys (a missing
// file is no rows) into points, one per row for which row returns ok.
func readOptionalPoints(fsys fs.FS, name string, cols []string, row func(t *csvtable.Table) (p perf.Point, ok bool, err error)) ([]perf.Point, error) {
	t, c, err := openTable(fsys, name, cols...)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out []perf.Point
	for err := range t.Rows() {
		if err != nil {
			return nil, err
		}
		p, ok, err := row(t)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// readMoECSV reads a bundle's moe.csv (tokens, activated experts, µs per
// layer on one rank); a missing file is no rows.
func readMoECSV(fsys fs.FS, name string) ([]perf.Point, error) {
	cols := []string{"tokens", "activated_experts", "time_us"}
	return readOptionalPoints(fsys, name, cols, func(t *csvtable.Table) (perf.Point, bool, error) {
		var v [3]float64
		for i, cn := range cols {
			f, ok, err := optNum(t, cn)
			if err != nil {
				return perf.Point{}, false, err
			}
			if !ok || f == 0 {
				return perf.Point{}, false, t.Errorf("%s is empty or zero", cn)
			}
			v[i] = f
		}
		return perf.Point{Category: perf.CategoryMoE, Op: perf.OpMoE, X: int(v[0]), N: int(v[1]), Ns: v[2] * 1e3}, true, nil
	})
}

// FitTables fits one accelerator's calibration on one or more tables
// measured on it (see Fit). The entry's Source lists them; it is labelled
// PyTorch-derived when any table is v0.
func FitTables(ts []*Tables, opt Options) (*Entry, *Report, error) {
	if len(ts) == 0 {
		return nil, nil, errors.New("calibrate: no tables")
	}
	inputs := make([]Input, len(ts))
	src := ""
	derived := ""
	for i, t := range ts {
		if t.Accelerator != ts[0].Accelerator {
			return nil, nil, fmt.Errorf("calibrate: %s is %s but %s is %s; a calibration is fitted on one accelerator's tables", t.Source, t.Accelerator, ts[0].Source, ts[0].Accelerator)
		}
		inputs[i] = t.Input
		if i > 0 {
			src += ", "
		}
		src += t.Source
		if t.Format == FormatV0 {
			derived = DerivedPyTorch
		}
	}
	eff, rep, err := Fit(inputs, opt)
	if err != nil {
		return nil, nil, err
	}
	en := NewEntry(eff, src, rep)
	en.Derived = derived
	return en, rep, nil
}

// LeaveOneOut fits on all tables but one and checks the fit on the one left
// out, for each table in turn: the out-of-sample accuracy of a calibration
// on a model (or degree) it was not fitted on. It needs two tables or more.
//
// Each result also holds the coverage of the 90 % step-error band of the
// fit (taken from its step residuals on the tables it was fitted on) on the
// step residuals of the table left out: the share of held-out steps whose
// error lies inside the band, against the nominal 90 %.
func LeaveOneOut(ts []*Tables, opt Options) ([]LOOResult, error) {
	if len(ts) < 2 {
		return nil, errors.New("calibrate: leave-one-out needs two tables or more")
	}
	out := make([]LOOResult, len(ts))
	for i := range ts {
		rest := make([]*Tables, 0, len(ts)-1)
		rest = append(rest, ts[:i]...)
		rest = append(rest, ts[i+1:]...)
		opt.progress(fmt.Sprintf("leave-one-out: fitting without %s", ts[i].Source))
		en, _, err := FitTables(rest, opt)
		if err != nil {
			return nil, err
		}
		eff := en.Efficiency()
		if out[i].Report, err = Check(eff, ts[i]); err != nil {
			return nil, err
		}
		if out[i].Band, out[i].Covered, out[i].Steps, err = BandCoverage(eff, rest, ts[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// BandCoverage is the 90 % step-error band of efficiencies eff on the
// tables train (their step residuals pooled) and the share of held's Steps
// step residuals that lie inside it: the band's coverage on tables it was
// not taken from, against the nominal 90 %.
func BandCoverage(eff perf.Efficiency, train []*Tables, held *Tables) (b Band, covered float64, steps int, err error) {
	var res []float64
	for _, t := range train {
		r, err := StepResiduals(eff, t)
		if err != nil {
			return Band{}, 0, 0, err
		}
		res = append(res, r...)
	}
	if b, err = NewBand(res, 0.9); err != nil {
		return Band{}, 0, 0, err
	}
	h, err := StepResiduals(eff, held)
	if err != nil {
		return Band{}, 0, 0, err
	}
	return b, b.Inside(h), len(h), nil
}

// LOOResult is the check of one table against a fit on the others.
type LOOResult struct {
	Report *Report
	// Band is the fit's 90 % step-error band on its own tables, Covered the
	// share of the held-out table's Steps step residuals inside it.
	Band    Band
	Covered float64
	Steps   int
}

// Check is the accuracy of efficiencies eff on tables t: the roofline of
// t's model on t's accelerator with eff, against every row.
func Check(eff perf.Efficiency, t *Tables) (*Report, error) {
	r, err := perf.NewRoofline(t.Model, t.HW, eff, t.TP)
	if err != nil {
		return nil, fmt.Errorf("check %s: %w", t.Source, err)
	}
	return Evaluate(r, t.Points), nil
}
