package perf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"sync/atomic"

	"github.com/goccy/go-yaml"
)

// Arch is what the profile predictor needs to know about the model; the
// caller fills it from the model's config.json.
type Arch struct {
	// ModelType is config.json's model_type ("llama", "qwen3_moe", ...); it
	// names the layer catalog and must match the bundle's architecture.
	ModelType string
	// NumLayers is num_hidden_layers: per-layer ops are charged this often.
	NumLayers int
	// NumExperts is the number of routed experts; 0 for a dense model.
	NumExperts int
	// ExpertsPerTok is top-k routing (num_experts_per_tok); MoE models only.
	ExpertsPerTok int
}

// Validate checks the fields for consistency.
func (a Arch) Validate() error {
	switch {
	case a.NumLayers < 1:
		return fmt.Errorf("arch %s: NumLayers must be >= 1, got %d", a.ModelType, a.NumLayers)
	case a.NumExperts < 0:
		return fmt.Errorf("arch %s: NumExperts must be >= 0, got %d", a.ModelType, a.NumExperts)
	case a.NumExperts > 0 && (a.ExpertsPerTok < 1 || a.ExpertsPerTok > a.NumExperts):
		return fmt.Errorf("arch %s: ExpertsPerTok must be in [1, NumExperts=%d], got %d",
			a.ModelType, a.NumExperts, a.ExpertsPerTok)
	}
	return nil
}

// Profile is the profile-table step-latency predictor for one model on one
// GPU at one tensor-parallel degree. It is immutable after LoadProfile and
// safe for concurrent use.
type Profile struct {
	// TP is the tensor-parallel degree of the tables.
	TP int
	// Hardware, Model and Variant identify the bundle (from meta.yaml).
	Hardware, Model, Variant string

	dense  pwl // all dense ops of a step summed, ns by total tokens
	perSeq pwl // all per-sequence ops summed, ns by sequences
	// denseMemo and perSeqMemo hold dense and perSeq at whole-number
	// counts (see memoAt).
	denseMemo, perSeqMemo []atomic.Uint64
	attn                  *attnTable
	attnCount             float64   // attention kernels per step (NumLayers)
	moe                   *moeTable // per expert-parallel rank: all of its experts whole (tp1/moe.csv)
	moeTP                 *moeTable // tensor-parallel MoE (ep = 1): tp<N>/moe.csv, else moe scaled by moeTPScale
	moeTPScale            float64   // 1, or 1/tp when moeTP is the tp1 table (see docs/moe.md)
	moeCount              float64   // MoE blocks per step (NumLayers)
	skew                  *skewTable
	experts               int
	topK                  int
	minOp                 float64 // shortest dense op at one token, ns
}

// MinKernelNs is the shortest dense op of the tables at one token, in ns:
// what one minimal kernel costs on this GPU. Engine-side kernels that no
// table measures (input uploads, sampler internals) are charged at it.
func (p *Profile) MinKernelNs() float64 { return p.minOp }

// StepBreakdown splits a predicted step into its table contributions, in
// nanoseconds (already multiplied by the number of layers).
type StepBreakdown struct {
	Dense       float64 // dense.csv ops (per-layer ops x layers + embedding + final norm)
	PerSequence float64 // lm_head, sampler
	Attention   float64 // attention x layers, skew-corrected
	MoE         float64 // MoE block x layers
}

// Total is the step time in nanoseconds, rounded, never negative and
// saturating at math.MaxInt64 (absurd batches far off every grid).
func (s StepBreakdown) Total() int64 {
	return roundNs(s.Dense + s.PerSequence + s.Attention + s.MoE)
}

// StepTime implements Predictor. An empty batch takes no time.
func (p *Profile) StepTime(b *Batch) int64 { return p.Breakdown(b).Total() }

// Breakdown predicts a step and reports each table's share. It does not
// allocate.
func (p *Profile) Breakdown(b *Batch) StepBreakdown { return p.breakdown(b, nil) }

// breakdown is Breakdown, with the per-run memo of r when r is not nil
// (the same values).
func (p *Profile) breakdown(b *Batch, r *profileRun) StepBreakdown {
	var s StepBreakdown
	if b == nil {
		return s
	}
	tokens, seqs := max(b.Tokens(), 0), max(b.Seqs(), 0)
	if tokens == 0 && seqs == 0 && b.PadTokens <= 0 {
		return s
	}
	s.Dense = memoAt(p.denseMemo, &p.dense, max(tokens+max(b.PadTokens, 0), 1))
	s.PerSequence = memoAt(p.perSeqMemo, &p.perSeq, max(seqs+max(b.SpecTokens, 0), 1))
	if p.attn != nil {
		s.Attention = p.attnCount * max(0, p.attention(b, r))
	}
	if b.MoENs > 0 && p.moe != nil {
		s.MoE = float64(b.MoENs)
	} else if p.moeTP != nil && tokens > 0 {
		// vLLM 0.19 captures the MoE layer inside its CUDA graphs (the
		// default piecewise splitting ops are the attention ops), so a
		// graph-padded step routes its padding rows and runs their experts
		// too: the block runs at the padded count (docs/moe.md).
		s.MoE = p.moeCount * p.moeTPScale * p.moeBlockAt(tokens+max(b.PadTokens, 0))
	}
	return s
}

// moeBlockAt is one tensor-parallel MoE block's time at t padded tokens
// (never negative), before the block count and the table's scale.
func (p *Profile) moeBlockAt(t int) float64 {
	ae := ActivatedExperts(t, p.experts, p.topK)
	return max(0, p.moeTP.at(float64(t), float64(ae)))
}

// attention is one layer's attention time with the skew correction:
// t = t_mean + alpha*(t_max - t_mean), where t_mean is the lookup at the
// integer mean decode context and t_max the lookup at the longest one.
// With r, a step without prefill takes its positions on every axis but
// the contexts' from r's plan for its decode count (the same values).
func (p *Profile) attention(b *Batch, r *profileRun) float64 {
	pc := float64(max(b.PrefillTokens, 0))
	kp := float64(max(b.PrefillKV, 0))
	n := b.NumDecode
	if n <= 0 {
		return p.attn.at(pc, kp, 0, 0)
	}
	mean := float64(max(b.DecodeKVSum, 0) / int64(n))
	kvMax := float64(b.DecodeKVMax)
	alpha := 0.0
	// Both lookups at once: they share every axis position but kvd's.
	kvd := [2]float64{mean, kvMax}
	var t [2]float64
	if r != nil && pc == 0 && kp == 0 && n < decodePlanLimit {
		h := r.plan(n)
		if p.skew != nil && n > 1 && kvMax > mean {
			alpha = r.alpha(p.skew, int(h.skew), mean, float64(max(b.DecodeKVMin, 0)), b.DecodeKVMax)
		}
		t = r.plans[n].at2(&kvd, alpha != 0)
	} else {
		if p.skew != nil && n > 1 && kvMax > mean {
			alpha = p.skew.skewAlpha(pc, kp, n, mean, float64(max(b.DecodeKVMin, 0)), kvMax)
		}
		t = p.attn.at2(pc, kp, n, &kvd, alpha != 0)
	}
	tMean, tMax := t[0], t[1]
	if alpha == 0 || tMax <= tMean {
		return tMean
	}
	return tMean + alpha*(tMax-tMean)
}

// LoadProfile reads a bundle's tables. bundleDir is the tp<N> folder returned
// by FindBundle (its parent holds meta.yaml); cat is the layer catalog of
// arch.ModelType. Required files: meta.yaml, tp<N>/dense.csv,
// per_sequence.csv and attention.csv (each only if the catalog has ops of
// that category), and tp1/moe.csv for MoE models (the MoE block of one
// expert-parallel rank holding its experts whole). A tp<N>/moe.csv, when
// the bundle has one, times tensor-parallel MoE (every expert sharded over
// the N ranks, ep = 1); without it that is tp1's table divided by N (the
// experts' weights and FLOPs split N ways; the unsharded router and
// routing kernels make this slightly optimistic). skew_fit.csv is
// optional: without it alpha is 0.
func LoadProfile(fsys fs.FS, bundleDir string, arch Arch, cat *Catalog) (*Profile, error) {
	if cat == nil {
		return nil, errors.New("load profile: nil layer catalog")
	}
	if err := arch.Validate(); err != nil {
		return nil, fmt.Errorf("load profile %s: %w", bundleDir, err)
	}
	if arch.ModelType != "" && cat.ModelType != arch.ModelType {
		return nil, fmt.Errorf("load profile %s: catalog is for %s, model type is %s",
			bundleDir, cat.ModelType, arch.ModelType)
	}
	tp, ok := parseTPDir(path.Base(bundleDir))
	if !ok {
		return nil, fmt.Errorf("load profile %s: the bundle folder must be named tp<N>", bundleDir)
	}
	root := path.Dir(bundleDir)
	meta, err := readMeta(fsys, path.Join(root, "meta.yaml"))
	if err != nil {
		return nil, fmt.Errorf("load profile: %w", err)
	}
	if meta.Architecture != "" && cat.ModelType != meta.Architecture {
		return nil, fmt.Errorf("load profile %s: bundle was profiled for architecture %s, not %s",
			bundleDir, meta.Architecture, cat.ModelType)
	}
	p := &Profile{TP: tp, Hardware: meta.Hardware, Model: meta.Model, Variant: meta.Variant,
		experts: arch.NumExperts, topK: arch.ExpertsPerTok}
	if err := p.loadTables(fsys, bundleDir, arch, cat); err != nil {
		return nil, fmt.Errorf("load profile: %w", err)
	}
	if p.skew, err = loadSkew(fsys, bundleDir, meta, tp); err != nil {
		return nil, fmt.Errorf("load profile: %w", err)
	}
	return p, nil
}

func (p *Profile) loadTables(fsys fs.FS, dir string, arch Arch, cat *Catalog) error {
	ops, err := cat.stepOps(arch.NumLayers, arch.NumExperts > 0)
	if err != nil {
		return err
	}
	need := map[string]bool{}
	for _, u := range ops {
		need[u.category] = true
	}
	var denseOps, seqOps map[string]*pwl
	if need[CategoryDense] {
		lt := layerTables[0]
		if denseOps, err = loadLayers(fsys, dir, lt.csv, lt.compact, lt.axis); err != nil {
			return err
		}
	}
	if need[CategoryPerSequence] {
		lt := layerTables[1]
		if seqOps, err = loadLayers(fsys, dir, lt.csv, lt.compact, lt.axis); err != nil {
			return err
		}
	}
	if need[CategoryAttention] {
		if p.attn, err = loadAttention(fsys, dir); err != nil {
			return err
		}
	}
	if need[CategoryMoE] {
		if err := p.loadMoE(fsys, dir); err != nil {
			return err
		}
	}
	var denseTerms, seqTerms []weighted
	for _, u := range ops {
		switch u.category {
		case CategoryDense:
			f, ok := denseOps[u.op]
			if !ok {
				return fmt.Errorf("%s has no rows for op %s (layer catalog %s)", path.Join(dir, "dense.csv"), u.op, cat.ModelType)
			}
			if v := f.at(1); v > 0 && (p.minOp == 0 || v < p.minOp) {
				p.minOp = v
			}
			denseTerms = append(denseTerms, weighted{u.count, f})
		case CategoryPerSequence:
			f, ok := seqOps[u.op]
			if !ok {
				return fmt.Errorf("%s has no rows for op %s (layer catalog %s)", path.Join(dir, "per_sequence.csv"), u.op, cat.ModelType)
			}
			seqTerms = append(seqTerms, weighted{u.count, f})
		case CategoryAttention:
			p.attnCount += u.count
		case CategoryMoE:
			p.moeCount += u.count
		}
	}
	p.dense, p.perSeq = sumPWL(denseTerms), sumPWL(seqTerms)
	p.denseMemo = make([]atomic.Uint64, opCacheLimit+1)
	p.perSeqMemo = make([]atomic.Uint64, opCacheLimit+1)
	return nil
}

// memoAt is f.at(float64(n)), memoised in tab for 0 <= n < len(tab). A
// step's token and sequence counts are whole numbers that repeat, and the
// memo holds the value f.at computes, bit for bit; entries are atomic (0 =
// not yet computed, or a zero value, recomputed each time) so that the
// Profile stays safe for concurrent use.
func memoAt(tab []atomic.Uint64, f *pwl, n int) float64 {
	if n < 0 || n >= len(tab) {
		return f.at(float64(n))
	}
	e := &tab[n]
	if v := e.Load(); v != 0 {
		return math.Float64frombits(v)
	}
	v := f.at(float64(n))
	e.Store(math.Float64bits(v))
	return v
}

// loadMoE reads the per-EP-rank table (tp1/moe.csv, required) and the
// tensor-parallel one (tp<N>/moe.csv if present, else the tp1 table at 1/N).
func (p *Profile) loadMoE(fsys fs.FS, dir string) error {
	tp1 := path.Join(path.Dir(dir), "tp1", "moe.csv")
	if p.TP == 1 {
		tp1 = path.Join(dir, "moe.csv")
	}
	var err error
	if p.moe, err = readFile(fsys, tp1, readMoECSV); err != nil {
		return err
	}
	p.moeTP, p.moeTPScale = p.moe, 1/float64(p.TP)
	own := path.Join(dir, "moe.csv")
	if _, serr := fs.Stat(fsys, own); p.TP == 1 || serr != nil {
		return nil
	}
	if p.moeTP, err = readFile(fsys, own, readMoECSV); err != nil {
		return err
	}
	p.moeTPScale = 1
	return nil
}

// readFile opens name in fsys and parses it with parse.
func readFile[T any](fsys fs.FS, name string, parse func(string, io.Reader) (T, error)) (T, error) {
	var zero T
	f, err := fsys.Open(name)
	if err != nil {
		return zero, fmt.Errorf("open profile table: %w", err)
	}
	defer f.Close()
	return parse(name, f)
}

func readMeta(fsys fs.FS, name string) (*bundleMeta, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("read bundle metadata: %w", err)
	}
	var m bundleMeta
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &m, nil
}

func loadSkew(fsys fs.FS, dir string, meta *bundleMeta, tp int) (*skewTable, error) {
	s, err := newSkewTable(meta, tp)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path.Join(path.Dir(dir), "meta.yaml"), err)
	}
	if s == nil {
		return nil, nil
	}
	name := path.Join(dir, "skew_fit.csv")
	csv, err := fs.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no skew data: alpha 0
	}
	if err != nil {
		return nil, fmt.Errorf("open profile table: %w", err)
	}
	// The compact form (compact.go), when one made from this meta.yaml
	// and CSV is beside them.
	if b, err := fs.ReadFile(fsys, path.Join(dir, skewCompactName)); err == nil {
		metaBytes, err := fs.ReadFile(fsys, path.Join(path.Dir(dir), "meta.yaml"))
		if err != nil {
			return nil, fmt.Errorf("read bundle metadata: %w", err)
		}
		ok, err := decodeSkew(s, b, sumOf(metaBytes, csv))
		if err != nil {
			return nil, fmt.Errorf("%s: %w (delete it, or regenerate it with go generate ./internal/assets)", path.Join(dir, skewCompactName), err)
		}
		if ok {
			return s, nil
		}
	}
	if err := s.readSkewFitCSV(name, bytes.NewReader(csv)); err != nil {
		return nil, err
	}
	return s, nil
}

// MoELayerNs is one MoE block's time on one expert-parallel rank, in ns:
// tp1/moe.csv (experts whole, whatever the ranks' tp) at tokens (the tokens the block runs on, gathered from every
// data-parallel rank) and activated (distinct local experts that receive
// tokens). It is 0 for a dense model.
func (p *Profile) MoELayerNs(tokens, activated float64) float64 {
	if p.moe == nil || tokens <= 0 {
		return 0
	}
	return max(0, p.moe.at(tokens, activated))
}

// MoETPScaled reports that tensor-parallel MoE (ep = 1) is priced from the
// tp1 table divided by the tp degree, the bundle having no tp<N>/moe.csv.
func (p *Profile) MoETPScaled() bool { return p.moeTP != nil && p.TP > 1 && p.moeTPScale != 1 }

// MoELayers is the number of MoE blocks a step runs (0 for a dense model).
func (p *Profile) MoELayers() int { return int(p.moeCount) }
