package calibrate

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/servesim/servesim/internal/perf"
)

// Input is one profile bundle's measurements with what the roofline needs to
// predict them: the model's shape, the accelerator and the tensor-parallel
// degree of the tables.
type Input struct {
	Points []perf.Point
	Model  perf.RooflineModel
	HW     perf.RooflineHW
	TP     int
	// Skew and DecodeSkew are the bundle's skew alphas at this TP for steps
	// with a prefill chunk and for pure-decode steps (see BundleSkew): how
	// far a batch of skewed decode contexts lies from the uniform batch at
	// the mean context towards the one at the longest
	// (perf.Efficiency.AttnSkew, AttnDecodeSkew). 0: not measured.
	Skew, DecodeSkew float64
}

// Stats summarises absolute relative errors |pred/meas - 1| of one table.
type Stats struct {
	Count  int
	Median float64
	P90    float64
	Bias   float64 // median of the signed relative error
}

func (s Stats) String() string {
	return fmt.Sprintf("n=%-6d median %5.1f%%  p90 %5.1f%%  bias %+5.1f%%", s.Count, 100*s.Median, 100*s.P90, 100*s.Bias)
}

// Report is the accuracy of a roofline against a bundle's tables: per table
// (perf.Category*) and per op.
type Report struct {
	Tables map[string]Stats
	Ops    map[string]Stats
}

// String renders the report as a fixed-width table, tables first, then ops,
// each sorted by name.
func (r *Report) String() string {
	var b strings.Builder
	for _, group := range []struct {
		title string
		m     map[string]Stats
	}{{"table", r.Tables}, {"op", r.Ops}} {
		keys := make([]string, 0, len(group.m))
		for k := range group.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%-5s %-16s %s\n", group.title, k, group.m[k])
		}
	}
	return b.String()
}

// predictOp is the roofline's time of the measured point p: OpNs on the
// step the point was measured on, or, for MoE table rows, the MoE block at
// the row's tokens and activated experts (moe.csv) or the per-module part a
// v0 profile timed (OpExpertGateUp, OpExpertDown, OpRouter).
func predictOp(r *perf.Roofline, p *perf.Point) float64 {
	if p.Category == perf.CategoryMoE {
		switch p.Op {
		case perf.OpMoE:
			return r.MoENs(p.X, p.N)
		case OpExpertGateUp:
			return r.ExpertNs(perf.OpGateUpProj, p.X)
		case OpExpertDown:
			return r.ExpertNs(perf.OpDownProj, p.X)
		case OpRouter:
			return r.ExpertNs("router", p.X)
		}
		return 0
	}
	b := p.Batch()
	if p.Category == CategoryV0Decode {
		b = perf.Batch{NumDecode: p.N, DecodeKVSum: int64(p.N) * int64(p.KVD), DecodeKVMax: p.KVD, DecodeKVMin: p.KVD}
	}
	return r.OpNs(p.Op, &b)
}

// Evaluate predicts every point with r and summarises the errors.
func Evaluate(r *perf.Roofline, pts []perf.Point) *Report {
	return report(relErrors(r, pts, nil, nil))
}

// relErrors appends the relative error of every point, by table and by op.
func relErrors(r *perf.Roofline, pts []perf.Point, byTable, byOp map[string][]float64) (map[string][]float64, map[string][]float64) {
	if byTable == nil {
		byTable, byOp = map[string][]float64{}, map[string][]float64{}
	}
	for i := range pts {
		p := &pts[i]
		if !(p.Ns > 0) {
			continue
		}
		e := predictOp(r, p)/p.Ns - 1
		byTable[p.Category] = append(byTable[p.Category], e)
		byOp[p.Op] = append(byOp[p.Op], e)
	}
	return byTable, byOp
}

func report(byTable, byOp map[string][]float64) *Report {
	rep := &Report{Tables: map[string]Stats{}, Ops: map[string]Stats{}}
	for k, v := range byTable {
		rep.Tables[k] = stats(v)
	}
	for k, v := range byOp {
		rep.Ops[k] = stats(v)
	}
	return rep
}

func stats(errs []float64) Stats {
	abs := make([]float64, len(errs))
	signed := append([]float64(nil), errs...)
	for i, e := range errs {
		abs[i] = math.Abs(e)
	}
	sort.Float64s(abs)
	sort.Float64s(signed)
	return Stats{Count: len(errs), Median: quantile(abs, 0.5), P90: quantile(abs, 0.9), Bias: quantile(signed, 0.5)}
}

// quantile of sorted xs by linear interpolation between closest ranks.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (pos-float64(i))*(xs[i+1]-xs[i])
}

// param is one fitted field of perf.Efficiency, searched in log space
// between min and max.
type param struct {
	name     string
	get      func(*perf.Efficiency) float64
	set      func(*perf.Efficiency, float64)
	init     float64
	min, max float64
}

func field(name string, f func(*perf.Efficiency) *float64, init, lo, hi float64) param {
	return param{name,
		func(e *perf.Efficiency) float64 { return *f(e) },
		func(e *perf.Efficiency, v float64) { *f(e) = v },
		init, lo, hi}
}

// opScale fits Efficiency.OpScale[op].
func opScale(op string) param {
	return param{"op_scale." + op,
		func(e *perf.Efficiency) float64 { return e.OpScale[op] },
		func(e *perf.Efficiency, v float64) { e.OpScale[op] = v },
		1, 0.05, 20}
}

// ScaledOps are the memory-bound ops whose traffic multiplier Fit fits.
var ScaledOps = []string{perf.OpEmbedding, perf.OpLayernorm, perf.OpFinalLayernorm, perf.OpQKNorm, perf.OpRotaryEmb, perf.OpActFn}

var denseParams = []param{
	field("compute", func(e *perf.Efficiency) *float64 { return &e.Compute }, 0.8, 0.05, 1.2),
	field("memory", func(e *perf.Efficiency) *float64 { return &e.Memory }, 0.9, 0.05, 1.2),
	field("launch", func(e *perf.Efficiency) *float64 { return &e.LaunchNs }, 2500, 100, 1e5),
	field("sharpness", func(e *perf.Efficiency) *float64 { return &e.Sharpness }, 2.5, 1, 50),
	field("cache_bytes", func(e *perf.Efficiency) *float64 { return &e.CacheBytes }, 50e6, 1e5, 1e10),
	field("cache_speed", func(e *perf.Efficiency) *float64 { return &e.CacheSpeed }, 2, 1, 100),
	field("sampler_passes", func(e *perf.Efficiency) *float64 { return &e.SamplerPasses }, 2, 0.1, 100),
	field("sampler", func(e *perf.Efficiency) *float64 { return &e.SamplerNs }, 10000, 100, 1e6),
}

var attnParams = []param{
	field("attn_compute", func(e *perf.Efficiency) *float64 { return &e.AttnCompute }, 0.55, 0.05, 1.2),
	field("attn_memory", func(e *perf.Efficiency) *float64 { return &e.AttnMemory }, 0.95, 0.05, 1.2),
	field("attn_launch", func(e *perf.Efficiency) *float64 { return &e.AttnLaunchNs }, 8000, 100, 1e5),
	field("attn_sharpness", func(e *perf.Efficiency) *float64 { return &e.AttnSharpness }, 6, 4, 50),
	field("attn_cache_bytes", func(e *perf.Efficiency) *float64 { return &e.AttnCacheBytes }, 50e6, 1e5, 1e10),
	field("attn_cache_speed", func(e *perf.Efficiency) *float64 { return &e.AttnCacheSpeed }, 1.5, 0.5, 100),
	field("attn_unit", func(e *perf.Efficiency) *float64 { return &e.AttnUnitNs }, 1000, 10, 1e5),
	field("attn_empty", func(e *perf.Efficiency) *float64 { return &e.AttnEmptyNs }, 300, 1, 1e4),
	field("attn_decode_memory", func(e *perf.Efficiency) *float64 { return &e.AttnDecodeMemory }, 0.95, 0.05, 1.2),
	field("attn_decode_launch", func(e *perf.Efficiency) *float64 { return &e.AttnDecodeLaunchNs }, 8000, 100, 1e5),
}

// Options tune Fit. The zero value is fine.
type Options struct {
	// TileQ lists the attention query-tile sizes tried (default 64, 128).
	TileQ []int
	// Units lists the attention wave widths tried (default 16..512 by 8).
	Units []int
	// UnitsPerSM, when set, lists the attention CTAs per SM tried
	// instead (perf.Efficiency.AttnUnitsPerSM: a wave of the
	// accelerator's own SM count times it); Units is then not searched.
	UnitsPerSM []int
	// DecodeUnitsPerSM lists the pure-decode kernel's CTAs per SM tried
	// with UnitsPerSM (perf.Efficiency.AttnDecodeUnitsPerSM; default: the
	// prefill kernel's).
	DecodeUnitsPerSM []int
	// FP8Waves fits the fp8 GEMM terms with the compute time in tile
	// waves (perf.Efficiency.FP8Waves).
	FP8Waves bool
	// QuantTables, when set, restricts FitPerfDBFP8 to these quantised
	// GEMM tables (TableGEMMFP8, TableGEMMFP8Block, TableGEMMNVFP4); the
	// terms of the others are kept from the base entry.
	QuantTables []string
	// Progress, if set, is told what the fit is doing as it moves to the
	// next stage (the fit takes tens of seconds).
	Progress func(stage string)
}

func (o Options) progress(stage string) {
	if o.Progress != nil {
		o.Progress(stage)
	}
}

// Fit fits the roofline's efficiencies for one accelerator to one or more
// bundles' tables measured on it (robust least squares on the log ratio of
// predicted to measured time, see robust). Each table group (dense and
// per-sequence rows; pure-prefill, pure-decode and mixed attention rows)
// weighs the same regardless of its row count. The dense and attention
// parameters are independent and fitted separately; the attention tile and
// wave width are discrete and searched on a grid. The attention skew
// coefficients are not fitted to the (uniform-batch) tables: they are the
// mean of the inputs' Skew and DecodeSkew. The report is the in-sample
// accuracy over all inputs' rows.
func Fit(inputs []Input, opt Options) (perf.Efficiency, *Report, error) {
	if len(inputs) == 0 {
		return perf.Efficiency{}, nil, errors.New("calibrate: no input bundles")
	}
	var dense, attn []sample
	for k := range inputs {
		in := &inputs[k]
		if _, err := perf.NewRoofline(in.Model, in.HW, perf.Efficiency{}, in.TP); err != nil {
			return perf.Efficiency{}, nil, fmt.Errorf("calibrate: input %d: %w", k, err)
		}
		for _, p := range in.Points {
			if !(p.Ns > 0) {
				continue
			}
			s := sample{in: in, p: p}
			switch p.Category {
			case perf.CategoryDense, perf.CategoryPerSequence, perf.CategoryMoE:
				dense = append(dense, s)
			case perf.CategoryAttention:
				attn = append(attn, s)
			}
		}
	}
	if len(dense) == 0 && len(attn) == 0 {
		return perf.Efficiency{}, nil, errors.New("calibrate: the bundles have no table rows")
	}
	eff := perf.DefaultEfficiency
	eff.OpScale = nil
	var err error
	if len(dense) > 0 {
		seen := map[string]bool{}
		for _, s := range dense {
			seen[s.p.Op] = true
		}
		// The sampler's constants only move with sampler rows (v0 profiles
		// have none): without them they keep their defaults instead of
		// drifting where no row constrains them.
		var params []param
		for _, p := range denseParams {
			if !seen[perf.OpSampler] && (p.name == "sampler" || p.name == "sampler_passes") {
				continue
			}
			params = append(params, p)
		}
		eff.OpScale = map[string]float64{}
		for _, op := range ScaledOps {
			if seen[op] {
				params = append(params, opScale(op))
				eff.OpScale[op] = 1
			}
		}
		fitRows := subsample(dense, maxDenseRows)
		opt.progress(fmt.Sprintf("fitting %d of %d dense, per-sequence and MoE rows (%d parameters)", len(fitRows), len(dense), len(params)))
		if eff, _, err = fitGroup(eff, params, fitRows); err != nil {
			return eff, nil, err
		}
	}
	if len(attn) > 0 {
		opt.progress(fmt.Sprintf("fitting %d attention rows (tile and wave-width grid, then a full fit)", len(attn)))
		if eff, err = fitAttention(eff, attn, opt); err != nil {
			return eff, nil, err
		}
	}
	eff.AttnSkew, eff.AttnDecodeSkew = skewOf(inputs)
	var errs map[string][]float64
	var opErrs map[string][]float64
	for _, in := range inputs {
		r, err := perf.NewRoofline(in.Model, in.HW, eff, in.TP)
		if err != nil {
			return eff, nil, err
		}
		errs, opErrs = relErrors(r, in.Points, errs, opErrs)
	}
	return eff, report(errs, opErrs), nil
}

// FitBundle fits one profile bundle: the tables of the tp<N> folder tpDir of
// the profile root fsys (see perf.FindBundle), measured for model m at
// tensor-parallel degree tp on an accelerator hw. The entry's Source is
// tpDir and its Fit the in-sample accuracy.
func FitBundle(fsys fs.FS, tpDir string, m perf.RooflineModel, hw perf.RooflineHW, tp int, opt Options) (*Entry, *Report, error) {
	pts, err := perf.ReadPoints(fsys, tpDir)
	if err != nil {
		return nil, nil, fmt.Errorf("calibrate: %w", err)
	}
	skew, decSkew, err := BundleSkew(fsys, tpDir, tp)
	if err != nil {
		return nil, nil, fmt.Errorf("calibrate: %w", err)
	}
	eff, rep, err := Fit([]Input{{Points: pts, Model: m, HW: hw, TP: tp, Skew: skew, DecodeSkew: decSkew}}, opt)
	if err != nil {
		return nil, nil, err
	}
	return NewEntry(eff, tpDir, rep), rep, nil
}

// fitAttention fits the attention parameters: a coarse grid of the discrete
// tile and wave width on a subsample with a short simplex run, two finer
// passes around the best width, then the full fit there.
func fitAttention(eff perf.Efficiency, attn []sample, opt Options) (perf.Efficiency, error) {
	return fitAttentionParams(eff, attnParams, attn, opt)
}

// fitAttentionParams is fitAttention over the attention parameters params
// (the others keep eff's values).
func fitAttentionParams(eff perf.Efficiency, params []param, attn []sample, opt Options) (perf.Efficiency, error) {
	tiles, units := opt.TileQ, opt.Units
	if len(tiles) == 0 {
		tiles = []int{64, 128}
	}
	if len(units) == 0 {
		for u := 32; u <= 512; u += 32 {
			units = append(units, u)
		}
	}
	best, bestCost := eff, math.Inf(1)
	try := func(e perf.Efficiency, pts []sample, evals int) error {
		e, c, err := fitGroupN(e, params, pts, evals, 1)
		if err == nil && c < bestCost {
			best, bestCost = e, c
		}
		return err
	}
	coarse := subsample(attn, 600)
	if len(opt.UnitsPerSM) > 0 {
		dec := opt.DecodeUnitsPerSM
		if len(dec) == 0 {
			dec = []int{0}
		}
		return fitOccupancy(eff, params, attn, tiles, opt.UnitsPerSM, dec)
	}
	for _, tq := range tiles {
		for _, u := range units {
			e := eff
			e.AttnTileQ, e.AttnUnits = tq, u
			if err := try(e, coarse, 80); err != nil {
				return eff, err
			}
		}
	}
	// The refinement stays within the coarse grid's range: a wave
	// narrower than its smallest width (32 units; every GPU servesim
	// knows has more SMs than that) is not a kernel's occupancy but a fit
	// that trades the wave model for the tables' noise.
	minUnits := slices.Min(units)
	fine := subsample(attn, 1500)
	for _, step := range []int{8, 2} {
		center := best
		bestCost = math.Inf(1)
		for k := -3; k <= 3; k++ {
			e := center
			if e.AttnUnits += k * step; e.AttnUnits < max(minUnits, 1) {
				continue
			}
			if err := try(e, fine, 150); err != nil {
				return eff, err
			}
		}
	}
	out, _, err := fitGroup(best, params, subsample(attn, 6000))
	return out, err
}

// fitOccupancy is fitAttentionParams with a wave of the accelerator's SM
// count times a CTA occupancy from occ (perf.Efficiency.AttnUnitsPerSM).
// Launches that fill the GPU cost the same whatever the occupancy (the
// throughput is the SMs'); only launches of fewer work units than SMs
// tell it apart, by the rate one CTA reaches alone (an SM's rate over
// its occupancy). So every (tile, occupancy, decode occupancy from
// decOcc) is fitted on all rows, and the occupancy kept is the one whose
// fit times the under-filled context rows best (median error; the whole
// fit's cost breaks ties and decides when no row is under-filled); the
// tile and the decode occupancy (a decode kernel of its own, told apart
// by the generation rows) are then the best fit's at that occupancy, and
// a full fit follows.
func fitOccupancy(eff perf.Efficiency, params []param, attn []sample, tiles, occ, decOcc []int) (perf.Efficiency, error) {
	coarse := subsample(attn, 600)
	var under []sample
	for _, s := range attn {
		if underFilled(s) {
			under = append(under, s)
		}
	}
	best, bestUnder, bestCost := eff, math.Inf(1), math.Inf(1)
	for _, k := range occ {
		atK, costK := eff, math.Inf(1)
		for _, kd := range decOcc {
			for _, tq := range tiles {
				e := eff
				e.AttnTileQ, e.AttnUnitsPerSM, e.AttnDecodeUnitsPerSM = tq, k, kd
				e, c, err := fitGroupN(e, params, coarse, 80, 1)
				if err != nil {
					return eff, err
				}
				if c < costK {
					atK, costK = e, c
				}
			}
		}
		u := 0.0
		if len(under) > 0 {
			rep, err := checkSamples(atK, under)
			if err != nil {
				return eff, err
			}
			u = rep.Median
		}
		if u < bestUnder-1e-9 || (math.Abs(u-bestUnder) <= 1e-9 && costK < bestCost) {
			best, bestUnder, bestCost = atK, u, costK
		}
	}
	out, _, err := fitGroup(best, params, subsample(attn, 6000))
	return out, err
}

// underFilled reports a context (prefill) attention row of one sequence
// whose query tiles at the largest tile (128 rows, one per query head and
// tile) number fewer than the accelerator's SMs: the launch leaves SMs
// idle, and its time is its longest tile's at the rate one CTA reaches.
// (Batches of short prompts also leave SMs idle, but their time is
// dominated by the per-unit cost instead.)
func underFilled(s sample) bool {
	b := s.batch()
	if s.p.Op != perf.OpAttention || b.PrefillTokens <= 0 || b.NumDecode > 0 || b.PrefillSeqs > 1 || s.in.HW.SMs <= 0 {
		return false
	}
	return s.in.Model.Heads*((b.PrefillTokens+127)/128) < s.in.HW.SMs
}

// checkSamples is the relative error of e on samples.
func checkSamples(e perf.Efficiency, samples []sample) (Stats, error) {
	rs := map[*Input]*perf.Roofline{}
	var errs []float64
	for i := range samples {
		s := &samples[i]
		r, ok := rs[s.in]
		if !ok {
			var err error
			if r, err = perf.NewRoofline(s.in.Model, s.in.HW, e, s.in.TP); err != nil {
				return Stats{}, err
			}
			rs[s.in] = r
		}
		b := s.batch()
		errs = append(errs, s.predict(r, &b)/s.p.Ns-1)
	}
	return stats(errs), nil
}

// maxDenseRows caps the dense rows one fit evaluates: per-layer profiles
// with every token count from 1 to 2048 hold ~100k rows, whose evenly spaced
// subsample (every op, the whole token range) fits the same parameters in a
// tenth of the time. The report still covers every row.
const maxDenseRows = 8000

// robustScale is the log error (about 10 %) beyond which the fit's loss
// grows linearly rather than quadratically.
const robustScale = 0.1

// robust is the soft-L1 loss of a log error d: d² for small errors, linear
// beyond robustScale, so that a few anomalous table rows (a kernel that hit
// a different code path, a noisy measurement) do not drag the fit away from
// the bulk of the rows.
func robust(d float64) float64 {
	z := d / robustScale
	return 2 * robustScale * robustScale * (math.Sqrt(1+z*z) - 1)
}

// groupOf is the weighting group of a point: its table, with attention
// split into pure prefill, pure decode and mixed steps so that the few
// pure-decode rows (the steps that dominate a serving run) weigh as much as
// the many mixed ones.
func groupOf(p perf.Point) string {
	if p.Category != perf.CategoryAttention {
		return p.Category
	}
	switch {
	case p.N == 0:
		return "attention/prefill"
	case p.PC == 0:
		return "attention/decode"
	}
	return "attention/mixed"
}

func copyMap(m map[string]float64) map[string]float64 {
	if m == nil {
		return nil
	}
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// subsample keeps about n evenly spaced samples.
func subsample(s []sample, n int) []sample {
	if len(s) <= n {
		return s
	}
	out := make([]sample, 0, n+1)
	step := float64(len(s)) / float64(n)
	for x := 0.0; int(x) < len(s); x += step {
		out = append(out, s[int(x)])
	}
	return out
}

type sample struct {
	in *Input
	p  perf.Point
	// b, when set, is the step the row was measured on, in place of
	// p.Batch() (performance-database attention rows: several sequences).
	b *perf.Batch
	// mkn is a GEMM row's M, K and N (p.Op is OpGEMM).
	mkn [3]int
	// coll is what the row's collection timed besides the served op.
	coll collected
}

// batch is the step the sample was measured on.
func (s *sample) batch() perf.Batch {
	if s.b != nil {
		return *s.b
	}
	return s.p.Batch()
}

// predict is the roofline's time of sample s measured on step b.
func (s *sample) predict(r *perf.Roofline, b *perf.Batch) float64 {
	switch {
	case s.p.Op == OpGEMM:
		return s.coll.ns(r, s.mkn)
	case s.p.Category == perf.CategoryMoE:
		return predictOp(r, &s.p)
	}
	return r.OpNs(s.p.Op, b)
}

// fitGroup minimises the weighted squared log error of samples over params
// (the other fields of start stay fixed). It returns the fitted efficiency
// and the cost.
func fitGroup(start perf.Efficiency, params []param, samples []sample) (perf.Efficiency, float64, error) {
	return fitGroupN(start, params, samples, 300, 4)
}

// fitGroupN is fitGroup with evalsPerParam simplex evaluations per fitted
// parameter and at most restarts restarts.
func fitGroupN(start perf.Efficiency, params []param, samples []sample, evalsPerParam, restarts int) (perf.Efficiency, float64, error) {
	weight := map[string]float64{}
	for _, s := range samples {
		weight[groupOf(s.p)]++
	}
	for k, v := range weight {
		weight[k] = 1 / v
	}
	w := make([]float64, len(samples))
	for i, s := range samples {
		w[i] = weight[groupOf(s.p)]
	}
	batches := make([]perf.Batch, len(samples))
	for i := range samples {
		batches[i] = samples[i].batch()
	}
	decode := func(x []float64) perf.Efficiency {
		e := start
		e.OpScale = copyMap(start.OpScale)
		for i, p := range params {
			p.set(&e, math.Min(p.max, math.Max(p.min, math.Exp(x[i]))))
		}
		return e
	}
	// One Roofline per distinct input, rebuilt at every evaluation.
	var inputs []*Input
	idx := make([]int, len(samples))
	for i := range samples {
		j := 0
		for j < len(inputs) && inputs[j] != samples[i].in {
			j++
		}
		if j == len(inputs) {
			inputs = append(inputs, samples[i].in)
		}
		idx[i] = j
	}
	rs := make([]*perf.Roofline, len(inputs))
	cost := func(x []float64) float64 {
		e := decode(x)
		for j, in := range inputs {
			var err error
			if rs[j], err = perf.NewRoofline(in.Model, in.HW, e, in.TP); err != nil {
				return math.Inf(1)
			}
		}
		var c float64
		for i := range samples {
			s := &samples[i]
			pred := s.predict(rs[idx[i]], &batches[i])
			if !(pred > 0) {
				return math.Inf(1)
			}
			d := math.Log(pred / s.p.Ns)
			c += w[i] * robust(d)
		}
		return c
	}
	x0 := make([]float64, len(params))
	for i, p := range params {
		v := p.get(&start)
		if v == 0 {
			v = p.init
		}
		x0[i] = math.Log(math.Min(p.max, math.Max(p.min, v)))
	}
	best, bestCost := x0, cost(x0)
	// Restart from the optimum while it improves: the simplex stalls easily
	// on the kinks of the max and ceil terms.
	for range restarts {
		x, c := nelderMead(cost, best, 0.3, evalsPerParam*len(params), 1e-10)
		if c >= bestCost-1e-12 {
			break
		}
		best, bestCost = x, c
	}
	return decode(best), bestCost, nil
}

// TableString renders the per-table part of the report: one line per table
// (dense, attention, per_sequence, moe) in that order, "-" for tables the
// bundle does not have.
func (r *Report) TableString() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %-19s %7s %8s %8s %8s\n", "table", "rows", "median", "p90", "bias")
	cats := []string{perf.CategoryDense, perf.CategoryAttention, perf.CategoryPerSequence, perf.CategoryMoE}
	if _, ok := r.Tables[TableGEMM]; ok {
		cats = PerfDBTables
	}
	if _, ok := r.Tables[CategoryV0Decode]; ok {
		cats = append(cats, CategoryV0Decode)
	}
	for _, k := range cats {
		s, ok := r.Tables[k]
		if !ok {
			fmt.Fprintf(&b, "  %-19s %7s %8s %8s %8s\n", k, "-", "-", "-", "-")
			continue
		}
		fmt.Fprintf(&b, "  %-19s %7d %7.1f%% %7.1f%% %+7.1f%%\n", k, s.Count, 100*s.Median, 100*s.P90, 100*s.Bias)
	}
	return b.String()
}
