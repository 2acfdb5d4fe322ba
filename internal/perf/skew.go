package perf

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// bundleMeta is the part of a bundle's meta.yaml the predictor reads.
type bundleMeta struct {
	Hardware     string    `yaml:"hardware"`
	Model        string    `yaml:"model"`
	Variant      string    `yaml:"variant"`
	Architecture string    `yaml:"architecture"`
	TPDegrees    []int     `yaml:"tp_degrees"`
	SkewFit      skewBlock `yaml:"skew_fit"`
}

type skewBlock struct {
	Enabled    bool                 `yaml:"enabled"`
	BucketAxes *skewAxesYAML        `yaml:"bucket_axes"`
	PerTP      map[int]skewTPFitYML `yaml:"per_tp"`
}

type skewTPFitYML struct {
	AlphaDefault *float64      `yaml:"alpha_default"`
	BucketAxes   *skewAxesYAML `yaml:"bucket_axes"`
}

type skewAxesYAML struct {
	NBins          []float64 `yaml:"n_bins"`
	NLabels        []string  `yaml:"n_labels"`
	SkewRateBins   []float64 `yaml:"skew_rate_bins"`
	SkewRateLabels []string  `yaml:"skew_rate_labels"`
	KVBigBins      []float64 `yaml:"kv_big_bins"`
	KVBigLabels    []string  `yaml:"kv_big_labels"`
	KPBins         []float64 `yaml:"kp_bins"`
	KPLabels       []string  `yaml:"kp_labels"`
}

// skewAxis buckets a value into (bins[i], bins[i+1]] -> labels[i]; values
// above the last edge fall in the last bucket, values at or below the first
// edge in the first.
type skewAxis struct {
	name   string
	bins   []float64
	labels []string
}

func (a *skewAxis) index(v float64) int {
	for i := range a.labels {
		if v <= a.bins[i+1] {
			return i
		}
	}
	return len(a.labels) - 1
}

func (a *skewAxis) labelIndex(label string) int {
	for i, l := range a.labels {
		if l == label {
			return i
		}
	}
	return -1
}

func newSkewAxis(name string, bins []float64, labels []string) (skewAxis, error) {
	if len(labels) == 0 || len(bins) != len(labels)+1 {
		return skewAxis{}, fmt.Errorf("skew_fit.bucket_axes: %s has %d bins and %d labels, want labels+1 bins",
			name, len(bins), len(labels))
	}
	for i := 1; i < len(bins); i++ {
		if !(bins[i] > bins[i-1]) {
			return skewAxis{}, fmt.Errorf("skew_fit.bucket_axes: %s bins are not increasing: %v", name, bins)
		}
	}
	return skewAxis{name: name, bins: bins, labels: labels}, nil
}

// Skew axes, in the order of the skew_fit.csv key columns after pc.
const (
	axN = iota
	axSkewRate
	axKVBig
	axKP
	numSkewAxes
)

// skewTable is skew_fit.csv: alpha per bucket (pc, n, skew rate, kv_big, kp),
// with the per-TP pooled alpha_default for buckets without a fit.
type skewTable struct {
	alphaDefault float64
	axes         [numSkewAxes]skewAxis
	pcs          []float64 // profiled pc values (the key is the exact raw pc)
	pcsG         guide     // of pcs
	stride       [numSkewAxes]int
	alpha        []float64 // [pcIndex*stride0 + ...]; NaN = no fitted bucket
}

// lookup returns alpha for a batch. pc must equal a profiled pc value to hit
// a bucket; anything else uses alphaDefault, as the reference simulator does.
func (s *skewTable) lookup(pc, n, skewRate, kvBig, kp float64) float64 {
	p := s.pcsG.find(s.pcs, pc)
	if p < 0 {
		return s.alphaDefault
	}
	idx := p * s.stride[0] * len(s.axes[0].labels)
	v := [numSkewAxes]float64{n, skewRate, kvBig, kp}
	for i := range s.axes {
		idx += s.axes[i].index(v[i]) * s.stride[i]
	}
	if a := s.alpha[idx]; !math.IsNaN(a) {
		return a
	}
	return s.alphaDefault
}

// newSkewTable builds the bucket axes for tp from meta. It returns nil when
// the bundle has no skew fit for tp (alpha is then 0).
func newSkewTable(meta *bundleMeta, tp int) (*skewTable, error) {
	if !meta.SkewFit.Enabled {
		return nil, nil
	}
	entry, ok := meta.SkewFit.PerTP[tp]
	if !ok {
		return nil, nil
	}
	ax := entry.BucketAxes
	if ax == nil {
		ax = meta.SkewFit.BucketAxes
	}
	if ax == nil {
		return nil, fmt.Errorf("skew_fit is enabled for tp=%d but has no bucket_axes", tp)
	}
	s := &skewTable{}
	if entry.AlphaDefault != nil {
		s.alphaDefault = *entry.AlphaDefault
	}
	var err error
	spec := [numSkewAxes]struct {
		name   string
		bins   []float64
		labels []string
	}{
		{"n", ax.NBins, ax.NLabels},
		{"skew_rate", ax.SkewRateBins, ax.SkewRateLabels},
		{"kv_big", ax.KVBigBins, ax.KVBigLabels},
		{"kp", ax.KPBins, ax.KPLabels},
	}
	for i, sp := range spec {
		if s.axes[i], err = newSkewAxis(sp.name, sp.bins, sp.labels); err != nil {
			return nil, err
		}
	}
	stride := 1
	for i := numSkewAxes - 1; i >= 0; i-- {
		s.stride[i] = stride
		stride *= len(s.axes[i].labels)
	}
	return s, nil
}

// readSkewFitCSV fills s from skew_fit.csv
// ("pc,n_label,skew_rate_label,kv_big_label,kp_label,alpha,...").
func (s *skewTable) readSkewFitCSV(name string, r io.Reader) error {
	tb, err := newTable(name, r, "pc", "n_label", "skew_rate_label", "kv_big_label", "kp_label", "alpha")
	if err != nil {
		return err
	}
	type row struct {
		pc   float64
		idx  [numSkewAxes]int
		a    float64
		line int
	}
	var rows []row
	pcSet := map[float64]bool{}
	cols := [numSkewAxes]string{"n_label", "skew_rate_label", "kv_big_label", "kp_label"}
	for err := range tb.Rows() {
		if err != nil {
			return err
		}
		var rw row
		if rw.pc, err = tb.key("pc"); err != nil {
			return err
		}
		for i, c := range cols {
			lab := tb.Str(c)
			if rw.idx[i] = s.axes[i].labelIndex(lab); rw.idx[i] < 0 {
				return tb.Errorf("%s %q is not one of meta.yaml skew_fit.bucket_axes %s labels [%s]",
					c, lab, s.axes[i].name, strings.Join(s.axes[i].labels, " "))
			}
		}
		if rw.a, err = tb.num("alpha", false); err != nil {
			return err
		}
		rw.line = tb.Line()
		rows = append(rows, rw)
		pcSet[rw.pc] = true
	}
	s.pcs = sortedKeys(pcSet)
	s.pcsG = newGuide(s.pcs)
	per := s.stride[0] * len(s.axes[0].labels)
	s.alpha = make([]float64, len(s.pcs)*per)
	lines := make([]int, len(s.alpha))
	for i := range s.alpha {
		s.alpha[i] = math.NaN()
	}
	for _, rw := range rows {
		idx := sort.SearchFloat64s(s.pcs, rw.pc) * per
		for i := range rw.idx {
			idx += rw.idx[i] * s.stride[i]
		}
		if lines[idx] != 0 {
			return fmt.Errorf("%s:%d: duplicate bucket (first on line %d)", name, rw.line, lines[idx])
		}
		s.alpha[idx], lines[idx] = rw.a, rw.line
	}
	return nil
}

// skewAlpha returns the alpha for a batch with n > 1 decodes whose context
// lengths have mean kvMean, min kvMin and max kvMax (kvMax > kvMean).
// Skew rate is (mean - min) / (max - min), clamped to [0, 1].
func (s *skewTable) skewAlpha(pc, kp float64, n int, kvMean, kvMin, kvMax float64) float64 {
	sr := 0.5
	if gap := kvMax - kvMin; gap > 0 {
		sr = (kvMean - kvMin) / gap
	}
	sr = max(0, min(1, sr))
	return s.lookup(pc, float64(n), sr, kvMax, kp)
}
