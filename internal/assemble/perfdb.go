package assemble

import (
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/moe"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/perfdb"
	"github.com/servesim/servesim/internal/quant"
)

// The perfdb predictor: the roofline's ops timed from a per-op kernel
// database measured on the accelerator (package perfdb).

// perfdbs opens each system of the scenario's database once per build.
type perfdbs struct {
	fsys fs.FS
	name string // for descriptions: "embedded" or the path
	dbs  map[string]*perfdb.DB
}

// newPerfDBs resolves predictor.path.
func newPerfDBs(s *config.Scenario, src config.Source) (*perfdbs, error) {
	p := &perfdbs{dbs: map[string]*perfdb.DB{}}
	if s.Predictor.Path == "" {
		p.fsys, p.name = perfdb.Embedded(), "embedded"
		return p, nil
	}
	dir := resolve(src, s.Predictor.Path)
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("predictor.path: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("predictor.path: %s is not a directory; give the database's systems folder (holding <system>.yaml and data/)", dir)
	}
	p.fsys, p.name = os.DirFS(dir), dir
	return p, nil
}

// system opens the database of acc (predictor.system, else the catalog's
// perfdb_system).
func (p *perfdbs) system(s *config.Scenario, acc hw.Accelerator) (*perfdb.DB, error) {
	name := s.Predictor.System
	if name == "" {
		name = acc.PerfDBSystem
	}
	if name == "" {
		return nil, fmt.Errorf("predictor.kind perfdb: accelerator %s has no per-op database system (catalog perfdb_system); set predictor.system to one of %s, or use predictor.kind roofline",
			acc.Name, strings.Join(perfdb.EmbeddedSystems(), ", "))
	}
	if db, ok := p.dbs[name]; ok {
		return db, nil
	}
	db, err := perfdb.Open(p.fsys, name, "vllm", s.Predictor.Version)
	if err != nil {
		return nil, fmt.Errorf("predictor.kind perfdb (%s database): %w", p.name, err)
	}
	p.dbs[name] = db
	return db, nil
}

// gemmDtype is the gemm_perf dtype of qf's linear layers on acc: fp8
// (per-tensor) or fp8_block where the part has FP8 tensor cores, nvfp4;
// "" for formats the table does not measure (awq, gptq, mxfp4, fp8 weight-only),
// whose linear layers are then timed by the roofline.
func gemmDtype(qf quant.Format, acc hw.Accelerator) string {
	switch qf.Method {
	case quant.None:
		return "bfloat16"
	case quant.FP8:
		if acc.PeakFLOPSFP8 == 0 {
			return ""
		}
		if qf.Block[0] > 0 {
			return "fp8_block"
		}
		return "fp8"
	case quant.NVFP4:
		return "nvfp4"
	}
	return ""
}

// measuredPredictor builds the perfdb predictor of model m on acc at tp
// (ep expert-parallel ranks) in format qf: its calibrated roofline times
// what the tables lack.
func measuredPredictor(s *config.Scenario, src config.Source, dbs *perfdbs, m *model.Config, acc hw.Accelerator, tp, ep int, qf quant.Format) (perf.Predictor, *perf.Roofline, *perfdb.DB, error) {
	db, err := dbs.system(s, acc)
	if err != nil {
		return nil, nil, nil, err
	}
	base, err := roofline(s, src, m, acc, tp, qf)
	if err != nil {
		return nil, nil, nil, err
	}
	r, ok := base.(*perf.Roofline)
	if !ok {
		return nil, nil, nil, fmt.Errorf("predictor.kind perfdb: internal error: the roofline is a %T", base)
	}
	shape, err := kernelShape(s, m, acc, tp, qf)
	if err != nil {
		return nil, nil, nil, err
	}
	if m.NumExperts > 0 && ep == 1 {
		shape.MoE = moeShape(s, m, shape.GEMMDtype, tp, 1)
	}
	k, err := db.Kernels(shape)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("predictor.kind perfdb: %w", err)
	}
	pred, err := perf.NewMeasured(r, k, qf.Quantized())
	if err != nil {
		return nil, nil, nil, err
	}
	return pred, r, db, nil
}

// epTimer times the MoE block of one expert-parallel rank from the
// database's moe_perf rows at moe_ep_size ep (moe_tp_size 1): vLLM's
// all-gather dispatch hands every rank the gathered tokens, and the rows
// time one rank's fused MoE over num_tokens gathered tokens with its
// local experts, routed by the row's distribution. The moe package asks
// for the block at the gathered count its busiest rank's load
// corresponds to, which is the row's num_tokens. Counts outside the
// table use the roofline's rank timer.
type epTimer struct {
	k        *perfdb.Kernels
	fallback moe.LayerTimer
}

// MoELayerNs implements moe.LayerTimer.
func (t epTimer) MoELayerNs(tokens, activated float64) float64 {
	if ns, ok := t.k.MoEAt(tokens); ok {
		return ns
	}
	return t.fallback.MoELayerNs(tokens, activated)
}

// perfdbEPTimer is the expert-parallel MoE timer of model m on acc at ep
// ranks, falling back to fallback outside the table (or when the table
// lacks the model's MoE shape altogether).
func perfdbEPTimer(s *config.Scenario, dbs *perfdbs, m *model.Config, acc hw.Accelerator, ep int, qf quant.Format, fallback moe.LayerTimer) (moe.LayerTimer, error) {
	db, err := dbs.system(s, acc)
	if err != nil {
		return nil, err
	}
	shape, err := kernelShape(s, m, acc, 1, qf)
	if err != nil {
		return nil, err
	}
	shape.MoE = moeShape(s, m, shape.GEMMDtype, 1, ep)
	k, err := db.Kernels(shape)
	if err != nil {
		return nil, fmt.Errorf("predictor.kind perfdb: %w", err)
	}
	return epTimer{k: k, fallback: fallback}, nil
}

// kernelShape is what a step of m at tp asks of the tables.
func kernelShape(s *config.Scenario, m *model.Config, acc hw.Accelerator, tp int, qf quant.Format) (perfdb.Shape, error) {
	heads := int(m.NumHeads)
	kvHeads := int(m.NumKVHeads)
	if kvHeads == 0 {
		kvHeads = heads
	}
	hd := int(m.HeadDim)
	if hd == 0 && heads > 0 {
		hd = int(m.HiddenSize) / heads
	}
	if tp < 1 || heads%tp != 0 {
		return perfdb.Shape{}, fmt.Errorf("predictor.kind perfdb: %d attention heads do not split over tp %d", heads, tp)
	}
	shape := perfdb.Shape{GEMMDtype: gemmDtype(qf, acc), Heads: heads / tp, KVHeads: max(1, kvHeads/tp), HeadDim: hd, KVDtype: "bfloat16"}
	if qf.KVBytes() == 1 {
		shape.KVDtype = "fp8"
	}
	shape.MLA = deepSeekV3MLA(m)
	return shape, nil
}

// deepSeekV3MLA reports an MLA of DeepSeek-V3's dimensions (hidden 7168,
// q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v 128; any
// head count), the module AIConfigurator's MLA tables measure.
func deepSeekV3MLA(m *model.Config) bool {
	return m.IsMLA() && m.HiddenSize == 7168 && m.QLoraRank == 1536 && m.KVLoraRank == 512 &&
		m.QKNopeHeadDim == 128 && m.QKRopeHeadDim == 64 && m.VHeadDim == 128
}

// moeShape selects the moe_perf rows of m's MoE block split over tp
// tensor-parallel and ep expert-parallel ranks.
func moeShape(s *config.Scenario, m *model.Config, gemm string, tp, ep int) *perfdb.MoEShape {
	dist := s.Predictor.MoEDistribution
	if dist == "" {
		dist = "balanced"
	}
	inter := int(m.MoEIntermediateSize)
	if inter == 0 {
		inter = int(m.IntermediateSize)
	}
	if gemm == "" {
		gemm = "unmeasured" // a format the tables lack: no rows match
	}
	return &perfdb.MoEShape{Dtype: gemm, Distribution: dist, Hidden: int(m.HiddenSize), Inter: inter,
		TopK: int(m.ExpertsPerTok), Experts: int(m.NumExperts), TP: tp, EP: ep}
}

// describePerfDB says which tables time a run on db.
func describePerfDB(db *perfdb.DB, where string) string {
	var t []string
	for _, tb := range db.Tables {
		t = append(t, tb.Name+" "+tb.Version)
	}
	return fmt.Sprintf("perfdb %s (%s database, %s; tables: %s)", db.System, where, db.Framework, strings.Join(t, ", "))
}
