package assemble

import (
	"errors"
	"fmt"
	"io/fs"
	"math"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/moe"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/perfdb"
	"github.com/servesim/servesim/internal/quant"
)

// checkSpan refuses a data-parallel instance larger than one node (or
// NVLink domain) that does not fill whole nodes: vLLM places
// data_parallel_size_local ranks on each node, and servesim's all-to-all
// model counts the ranks per node as equal.
func checkSpan(gs *groupShape, acc hw.Accelerator) error {
	dp, tp, pp, link := gs.dp, gs.tp, gs.pp, gs.linkGPUs
	gpus := dp * tp * pp
	if dp <= 1 || link <= 0 || gpus <= link {
		return nil
	}
	if acc.NIC.HostPath {
		return fmt.Errorf("dp %d x tp %d = %d GPUs exceed one node of %d %s GPUs, and %s has no network card to cross nodes; use fewer ranks", dp, tp, gpus, link, acc.Name, acc.Name)
	}
	if gpus%link != 0 || link%tp != 0 {
		return fmt.Errorf("dp %d x tp %d = %d GPUs span nodes of %d %s GPUs unevenly; a data-parallel instance across nodes fills whole nodes (vLLM's data_parallel_size_local ranks on each): use dp x tp a multiple of %d", dp, tp, gpus, link, acc.Name, link)
	}
	return nil
}

// deepEPDispatchBytes is one token's hidden state as DeepEP dispatches it:
// FP8 with one float32 scale per 128 elements when the experts run block
// FP8 (vLLM quantises before the dispatch), BF16 otherwise.
func deepEPDispatchBytes(hidden int64, qf quant.Format) float64 {
	if qf.Method == quant.FP8 && qf.Block != [2]int{} {
		return float64(hidden) + float64((hidden+127)/128*4)
	}
	return float64(2 * hidden)
}

// redundantExpertBytes is the weight memory one GPU spends on its share of
// EPLB's redundant experts: redundant/E of the routed experts' weights,
// over ep ranks.
func redundantExpertBytes(m *model.Config, redundant, ep int, qf quant.Format) int64 {
	if redundant <= 0 || ep <= 1 || m.NumExperts <= 0 {
		return 0
	}
	perExpert := float64(m.RoutedExpertParams()) * qf.WeightBytes() / float64(m.NumExperts)
	return int64(math.Ceil(perExpert * float64(redundant) / float64(ep)))
}

// epTimer is the per-rank MoE block timer of the group's expert-parallel
// ranks: the profile's moe.csv, else the roofline's EP rank (only the
// routed pairs under DeepEP), through the measured MoE tables with the
// perfdb predictor.
func (bl *builder) epTimer(gs *groupShape, key predictorKey) (moe.LayerTimer, error) {
	if t, ok := bl.timers[key]; ok {
		return t, nil
	}
	rl := bl.rooflines[key]
	if rl == nil {
		return nil, fmt.Errorf("dp/ep need a per-rank MoE time: the profile predictor's moe.csv measured in the scenario's weight format (format_scaling does not carry it), or predictor.kind: roofline")
	}
	t, err := rl.EPRank(gs.dp, gs.ep)
	if err != nil {
		return nil, err
	}
	if gs.g.All2AllBackend.DeepEP() {
		t = t.RoutedOnly()
	}
	if bl.dbs == nil {
		return t, nil
	}
	return perfdbEPTimer(bl.s, bl.dbs, bl.m, gs.acc, gs.ep, bl.qf, t)
}

// commSpec is what the group's all-to-all is timed from: its links, NIC,
// node size, backend and token sizes.
func (bl *builder) commSpec(gs *groupShape) (groupSpec, error) {
	m := bl.m
	g := groupSpec{hiddenBytes: m.HiddenSize * int64(bl.bpe), link: gs.acc.Link, linkBWOverride: bl.s.Links.TPBandwidthGBps * 1e9,
		nic: gs.acc.NIC, linkGPUs: gs.linkGPUs, tp: gs.tp, wide: gs.g.WideEP, dispatchBytes: deepEPDispatchBytes(m.HiddenSize, bl.qf), hidden: m.HiddenSize}
	var err error
	g.deepEP, g.shape, err = bl.deepEPTable(gs)
	return g, err
}

// deepEPTable is the measured DeepEP table for the group: under the
// perfdb predictor, a DeepEP backend and an EP group of exactly one node
// of the catalog (the tables' one-node rows), the system's table when it
// measured the model's shape; nil otherwise.
func (bl *builder) deepEPTable(gs *groupShape) (*perfdb.DeepEPTable, perfdb.DeepEPShape, error) {
	w, m := gs.g.WideEP, bl.m
	shape := perfdb.DeepEPShape{Hidden: int(m.HiddenSize), TopK: int(m.ExpertsPerTok), Experts: int(m.NumExperts) + w.NumRedundantExperts}
	if bl.dbs == nil || !w.All2AllBackend.DeepEP() || gs.ep != gs.acc.Node.GPUs || gs.g.NodeGPUs > 0 {
		return nil, shape, nil
	}
	name := bl.s.Predictor.System
	if name == "" {
		name = gs.acc.PerfDBSystem
	}
	key := fmt.Sprintf("%s/%v", name, w.All2AllBackend.LowLatency())
	t, seen := bl.deepEPs[key]
	if !seen {
		var err error
		t, err = perfdb.OpenDeepEP(bl.dbs.fsys, name, w.All2AllBackend.LowLatency())
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, shape, fmt.Errorf("%s: %w", gs.path, err)
		}
		bl.deepEPs[key] = t // nil when the system has none
	}
	if !t.Has(shape) {
		return nil, shape, nil // the model answers (docs/wide-ep.md)
	}
	return t, shape, nil
}

// measuredDeepEP is the group's DeepEP table as a moe.DeepEP lookup (nil
// without one).
func (g *groupSpec) measuredDeepEP() func(float64) (float64, float64, bool) {
	if g.deepEP == nil {
		return nil
	}
	t, s := g.deepEP, g.shape
	return func(tokens float64) (float64, float64, bool) { return t.At(s, tokens) }
}

// epHeadSpec adapts a one-layer proposer head (MTP, EAGLE) of an MoE
// target to an expert-parallel group: the head's routed experts are
// sharded over the ep ranks like the target's (vLLM builds the MTP module's
// MoE with the same expert-parallel group), so a GPU holds 1/ep of them,
// and each of its passes runs the MoE block on the gathered tokens of all
// dp ranks with the group's all-to-all, under a balanced load.
func (bl *builder) epHeadSpec(gs *groupShape, key predictorKey, sb specBuild) (specBuild, error) {
	m := bl.m
	if m.NumExperts == 0 {
		return sb, nil
	}
	head := *m
	head.NumLayers, head.FirstDenseLayers, head.MLPOnlyLayers, head.DecoderSparseStep = 1, 0, nil, 0
	shared := head.VocabSize * head.HiddenSize * int64(bl.bpe)
	sb.weights = weightsPerGPU(&head, gs.tp, 1, gs.ep, bl.bpe, bl.qf.WeightBytes()) - shared/int64(gs.tp)
	timer, err := bl.epTimer(gs, key)
	if err != nil {
		return sb, fmt.Errorf("%s: %w", specPath(bl.s, gs.gi), err)
	}
	spec, err := bl.commSpec(gs)
	if err != nil {
		return sb, err
	}
	cfg := moe.Config{Layers: 1, Experts: int(m.NumExperts), TopK: int(m.ExpertsPerTok), EP: gs.ep, Timer: timer}
	if gs.dp > 1 {
		cfg.Dispatch = spec.dispatch(gs.dp, gs.ep, cfg.Experts, cfg.TopK)
		if gs.g.All2AllBackend.LowLatency() {
			cfg.ChunkTokens, cfg.DP = moe.VLLMMoEDPChunkSize, gs.dp
		}
	}
	mm, err := moe.New(cfg, 0)
	if err != nil {
		return sb, fmt.Errorf("%s: %w", specPath(bl.s, gs.gi), err)
	}
	sb.cfg.Draft = epHead{base: sb.cfg.Draft, moe: mm, dp: gs.dp}
	sb.desc += fmt.Sprintf("; its MoE over ep %d with the group's all-to-all", gs.ep)
	return sb, nil
}

// epHead prices a one-layer proposer head of an expert-parallel group:
// base with the head's MoE block replaced by the group's, at the pass's
// tokens on every one of the dp ranks.
type epHead struct {
	base perf.Predictor
	moe  *moe.Model
	dp   int
}

// StepTime implements perf.Predictor.
func (h epHead) StepTime(b *perf.Batch) int64 {
	c := *b
	c.MoENs = max(h.moe.BalancedLayerNs(b.Tokens()*h.dp), 1)
	return h.base.StepTime(&c)
}

// wideEPDesc describes a group's wide expert parallelism for the summary:
// the nodes it spans, its all-to-all backend, EPLB and DBO ("" for a group
// inside one node that sets none of them).
func wideEPDesc(gs *groupShape, measured *perfdb.DeepEPTable) string {
	w := gs.g.WideEP
	gpus := gs.dp * gs.tp
	spans := gs.linkGPUs > 0 && gpus > gs.linkGPUs
	if gs.ep <= 1 || (!spans && w == (config.WideEP{})) {
		return ""
	}
	nodes := 1
	if spans {
		nodes = gpus / gs.linkGPUs
	}
	backend := w.All2AllBackend
	if backend == "" {
		backend = config.All2AllAllgatherReduceScatter
	}
	noun := "node"
	if nodes > 1 {
		noun = "nodes"
	}
	d := fmt.Sprintf("ep %d over %d %s of %d GPUs (dp %d a node); all-to-all %s", gs.ep, nodes, noun, max(gs.linkGPUs, 1), gs.dp/nodes, backend)
	if spans {
		d += " across the NICs"
	}
	if measured != nil {
		d += fmt.Sprintf(" (DeepEP times from the database's %s, sglang %s)", measured.Path, measured.Version)
	}
	if w.EnableEPLB {
		d += fmt.Sprintf("; EPLB: %d redundant experts, rebalanced every %d steps", w.NumRedundantExperts, w.StepInterval())
	}
	if w.EnableDBO {
		dec, pre := w.DBOThresholds()
		d += fmt.Sprintf("; dual-batch overlap from %d decode / %d prefill tokens a rank", dec, pre)
	}
	return d
}
