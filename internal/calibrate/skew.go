package calibrate

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"sort"

	"github.com/goccy/go-yaml"
	"github.com/servesim/servesim/internal/csvtable"
)

// The attention tables are measured on uniform batches (every decode request
// with the same context). A bundle's skew profile also measures batches of
// skewed contexts and condenses them, per bucket of (prefill chunk, decode
// count, skew rate, longest context, prefill history), into an alpha: the
// time of a skewed batch is t(mean) + alpha·(t(max) − t(mean)), t being the
// uniform-batch time (tp<N>/skew_fit.csv). The alphas describe the attention
// kernel on the accelerator, so they become the roofline's AttnSkew (steps
// with a prefill chunk: the varlen launch) and AttnDecodeSkew (pure-decode
// steps: the GQA-packed decode launch).
//
// Each bucket is fitted on a few samples and the bucket alphas scatter
// widely; the per-path estimate is their median weighted by the bucket's
// sample count, which the few wild buckets do not move. A bundle without a
// skew table for a path falls back to the pooled alpha of meta.yaml
// (skew_fit.per_tp.<tp>.alpha_default), and to 0 without either.

// skewMeta is the part of a bundle's meta.yaml BundleSkew reads.
type skewMeta struct {
	SkewFit struct {
		Enabled bool `yaml:"enabled"`
		PerTP   map[int]struct {
			AlphaDefault *float64 `yaml:"alpha_default"`
			BucketTable  string   `yaml:"bucket_table"`
		} `yaml:"per_tp"`
	} `yaml:"skew_fit"`
}

// BundleSkew returns the skew alphas of steps with a prefill chunk (mixed)
// and of pure-decode steps (decode) for the bundle whose tp<N> folder is
// tpDir (meta.yaml in its parent) at tensor-parallel degree tp; 0 when the
// bundle has no skew fit for tp.
func BundleSkew(fsys fs.FS, tpDir string, tp int) (mixed, decode float64, err error) {
	root := path.Dir(tpDir)
	name := path.Join(root, "meta.yaml")
	data, err := fs.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	var m skewMeta
	if err := yaml.Unmarshal(data, &m); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", name, err)
	}
	e, ok := m.SkewFit.PerTP[tp]
	if !m.SkewFit.Enabled || !ok {
		return 0, 0, nil
	}
	if e.AlphaDefault != nil {
		mixed, decode = *e.AlphaDefault, *e.AlphaDefault
	}
	table := e.BucketTable
	if table == "" {
		table = path.Join(path.Base(tpDir), "skew_fit.csv")
	}
	table = path.Join(root, table)
	rows, err := readSkewTable(fsys, table)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, 0, err
	}
	var mix, dec []skewRow
	for _, r := range rows {
		if r.pc == 0 {
			dec = append(dec, r)
		} else {
			mix = append(mix, r)
		}
	}
	if len(mix) > 0 {
		mixed = weightedMedian(mix)
	}
	if len(dec) > 0 {
		decode = weightedMedian(dec)
	}
	for _, a := range []float64{mixed, decode} {
		if math.IsNaN(a) || a < 0 || a > 1 {
			return 0, 0, fmt.Errorf("%s: skew alpha %g: want [0, 1]", table, a)
		}
	}
	return mixed, decode, nil
}

type skewRow struct {
	pc, alpha, weight float64
}

// readSkewTable reads the pc, alpha and n_samples columns of skew_fit.csv.
func readSkewTable(fsys fs.FS, name string) ([]skewRow, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := csvtable.New(name, f, "pc", "alpha", "n_samples")
	if errors.Is(err, csvtable.ErrEmpty) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []skewRow
	for err := range t.Rows() {
		if err != nil {
			return nil, err
		}
		var v [3]float64
		for j, c := range []string{"pc", "alpha", "n_samples"} {
			if v[j], err = t.Float(c); err != nil {
				return nil, err
			}
		}
		if v[2] > 0 {
			out = append(out, skewRow{pc: v[0], alpha: v[1], weight: v[2]})
		}
	}
	return out, nil
}

// weightedMedian is the median of the rows' alphas weighted by their sample
// counts, clamped to [0, 1].
func weightedMedian(rows []skewRow) float64 {
	rows = append([]skewRow(nil), rows...)
	sort.Slice(rows, func(i, j int) bool { return rows[i].alpha < rows[j].alpha })
	var total float64
	for _, r := range rows {
		total += r.weight
	}
	var c float64
	for _, r := range rows {
		if c += r.weight; c >= total/2 {
			return math.Max(0, math.Min(1, r.alpha))
		}
	}
	return 0
}

// skewOf is the mean skew alphas of the inputs that measured one.
func skewOf(inputs []Input) (mixed, decode float64) {
	var n, nd int
	for _, in := range inputs {
		if in.Skew > 0 {
			mixed += in.Skew
			n++
		}
		if in.DecodeSkew > 0 {
			decode += in.DecodeSkew
			nd++
		}
	}
	if n > 0 {
		mixed /= float64(n)
	}
	if nd > 0 {
		decode /= float64(nd)
	}
	return mixed, decode
}
