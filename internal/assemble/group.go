package assemble

import (
	"fmt"
	"math"
	"slices"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/moe"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/perfdb"
)

// The per-group pipeline of Build: each instance group is resolved,
// given its predictor, KV capacity, engine configuration and NICs, and
// placed as instances.

// groupShape is one instance group resolved: its accelerator, engine
// settings and parallel degrees, checked against the model.
type groupShape struct {
	gi       int
	g        *config.Group
	path     string // instances[gi], for errors
	acc      hw.Accelerator
	eng      config.Engine
	memBytes int64
	maxLen   int
	origin   BatchOrigin
	tp, pp   int
	dp, ep   int
	nodeGPUs int
	// linkGPUs is the number of GPUs whose collectives stay on the
	// intra-node link: the node, or a larger NVLink Switch domain
	// (GB200/GB300 NVL72).
	linkGPUs int
	et       perf.EngineTime
}

// addGroup builds instance group gi and appends its instances.
func (bl *builder) addGroup(gi int) error {
	gs, err := bl.resolveGroup(gi)
	if err != nil {
		return err
	}
	key, pred, err := bl.groupPredictor(gs)
	if err != nil {
		return err
	}
	sb, err := bl.groupSpeculative(gs, key)
	if err != nil {
		return err
	}
	kv, err := bl.groupMemory(gs, sb)
	if err != nil {
		return err
	}
	cfg, pushBuf, err := bl.engineConfig(gs, kv.blocks, sb)
	if err != nil {
		return err
	}
	cfg.Local = kv.local
	resolved := gs.eng
	resolved.NumGPUBlocks, resolved.MaxModelLen = kv.blocks, gs.maxLen
	resolveGraphs(&resolved, gs.et)
	bl.b.engines = append(bl.b.engines, resolved)
	spec, err := bl.dpSpec(gs, key, pred)
	if err != nil {
		return err
	}
	m, tp, pp := bl.m, gs.tp, gs.pp
	tmpl := Instance{Group: gs.g.Name, Role: gs.g.Role, Hardware: gs.acc.Name,
		TP: tp, PP: pp, DP: gs.dp, EP: gs.ep, NumBlocks: kv.blocks, PredictedBlocks: kv.predicted, KVLayout: kv.layout, PredictErr: kv.predictErr, BlockSize: gs.eng.BlockSize, Engine: cfg, Predictor: pred, BatchOrigin: gs.origin,
		nics: repeatNIC(bl.groupNIC(gs.acc), tp*pp), kvPerToken: kvPerTokenPerGPU(m, bl.qf.KVBytes(), tp, pp) + sb.kvPerToken, prefillRate: prefillRate(pred, gs.eng), pushBuf: pushBuf, localKV: kv.localKV,
		Speculative: sb.desc, TPNodes: tpNodes(tp, gs.linkGPUs), WideEP: wideEPDesc(gs, spec.deepEP)}
	bl.placeInstances(gs, tmpl, spec)
	return nil
}

// resolveGroup resolves group gi's accelerator, engine settings and
// parallelism, and refuses shapes the simulator does not model.
func (bl *builder) resolveGroup(gi int) (*groupShape, error) {
	s, m := bl.s, bl.m
	g := &s.Instances[gi]
	gs := &groupShape{gi: gi, g: g, path: fmt.Sprintf("instances[%d]", gi)}
	path := gs.path
	acc, err := bl.hw.Lookup(g.Hardware)
	if err != nil {
		return nil, fmt.Errorf("%s.hardware: %w", path, err)
	}
	gs.eng = g.Merged(s.Engine)
	gs.memBytes = acc.MemoryBytes
	if g.MemoryGB > 0 {
		gs.memBytes = int64(g.MemoryGB * 1e9)
	}
	gs.maxLen = gs.eng.MaxModelLen
	if gs.maxLen == 0 {
		gs.maxLen = int(m.MaxPositionEmbeddings)
	}
	if err := m.CheckSlidingWindow(int64(gs.maxLen)); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	gs.origin = resolveBatch(&gs.eng, vllmBatchDefaults(acc, gs.memBytes), gs.maxLen)
	tp := *g.TP
	pp := 1
	if g.PP != nil {
		pp = *g.PP
	}
	dp, ep := g.Parallel()
	gs.tp, gs.pp, gs.dp, gs.ep = tp, pp, dp, ep
	gs.nodeGPUs = acc.Node.GPUs
	if g.NodeGPUs > 0 {
		gs.nodeGPUs = g.NodeGPUs
		if acc.Node.NVLinkDomain <= acc.Node.GPUs {
			acc.Node.NVLinkDomain = gs.nodeGPUs // the link reaches the node only
		}
		acc.Node.GPUs = gs.nodeGPUs // the group's node size, for tpComm
	}
	gs.acc = acc
	linkGPUs := acc.Node.LinkDomain()
	gs.linkGPUs = linkGPUs
	if err := checkSpan(gs, acc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if ep > 1 && m.NumExperts == 0 {
		return nil, fmt.Errorf("%s.ep: %s is a dense model (no experts to shard); use ep: 1", path, m.Name)
	}
	if r := int64(g.NumRedundantExperts); ep > 1 && (m.NumExperts+r)%int64(ep) != 0 {
		return nil, fmt.Errorf("%s.ep: the %d experts of %s (with %d redundant) do not shard evenly over ep %d ranks; choose dp x tp dividing %d, or num_redundant_experts making it divisible", path, m.NumExperts, m.Name, r, ep, m.NumExperts+r)
	}
	if int64(pp) > m.NumLayers {
		return nil, fmt.Errorf("%s.pp: %d pipeline stages exceed the %d layers of %s; use pp <= %d", path, pp, m.NumLayers, m.Name, m.NumLayers)
	}
	if gs.et, err = engineTime(gs.eng, m, bl.cat, bl.arch.NumExperts > 0, pp); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := quantPeak(bl.qf, acc); err != nil {
		return nil, fmt.Errorf("%s (hardware %s): %w", path, acc.Name, err)
	}
	return gs, nil
}

// predictorKey is everything a group's predictor depends on beyond the
// scenario-wide inputs (model, formats, predictor section, links): groups
// share a predictor only when their keys are equal.
type predictorKey struct {
	acc    string // accelerator name
	tp, ep int    // the measured MoE tables depend on ep
	// nodeGPUs and nvlinkDomain are the node size and NVLink domain
	// after the group's node_gpus: where its collectives run.
	nodeGPUs, nvlinkDomain int
	// customAROff is engine.disable_custom_all_reduce.
	customAROff bool
	// et is the engine-time model before the tables' kernel floor,
	// printed (it holds the capture sizes, a slice).
	et string
}

// keyOf returns the group's predictor key.
func keyOf(gs *groupShape) predictorKey {
	return predictorKey{acc: gs.acc.Name, tp: gs.tp, ep: gs.ep,
		nodeGPUs: gs.acc.Node.GPUs, nvlinkDomain: gs.acc.Node.NVLinkDomain,
		customAROff: gs.eng.DisableCustomAllReduce != nil && *gs.eng.DisableCustomAllReduce,
		et:          fmt.Sprintf("%+v", gs.et)}
}

// groupPredictor returns the group's step-time predictor and the key it is
// cached under (groups of equal keys share one). It sets
// gs.et.StepKernelNs from the kernel floor of the predictor's tables.
func (bl *builder) groupPredictor(gs *groupShape) (predictorKey, perf.Predictor, error) {
	s, acc, tp, linkGPUs := bl.s, gs.acc, gs.tp, gs.linkGPUs
	key := keyOf(gs)
	pred, ok := bl.predictors[key]
	if !ok {
		base, db, err := bl.basePredictor(gs, key)
		if err != nil {
			return key, nil, err
		}
		// The profile tables exclude collectives; the roofline times
		// single-GPU ops too: add the tensor-parallel all-reduces.
		// Kernel gaps, CUDA-graph padding and host time turn GPU
		// kernel time into engine step time (docs/engine-time.md).
		bl.gpuTime[key] = base
		if mk, ok := base.(interface{ MinKernelNs() float64 }); ok {
			gs.et.StepKernelNs = mk.MinKernelNs()
		}
		tc, err := calibratedComm(s, bl.src, acc, tpComm(bl.m, acc, tp, bl.bpe, s.Links, gs.eng))
		if err != nil {
			return key, nil, err
		}
		tc.Scale = s.Predictor.CollectiveScale
		if db != nil && tp > 1 && tc.AR.N > 1 && (linkGPUs == 0 || tp <= linkGPUs) {
			// Measured all-reduces inside one node or NVLink domain;
			// vLLM's own dispatch unless custom all-reduce is off.
			tc.Measured = db.Collectives(tp)
			tc.MeasuredVLLM = gs.eng.DisableCustomAllReduce == nil || !*gs.eng.DisableCustomAllReduce
		}
		base = perf.WithCollectives(base, tc)
		base = perf.WithEngineTime(base, gs.et)
		pred = perf.WithOverhead(base, bl.overheadNs)
		bl.predictors[key] = pred
	} else if mk, ok := bl.gpuTime[key].(interface{ MinKernelNs() float64 }); ok {
		gs.et.StepKernelNs = mk.MinKernelNs() // as the group that built it
	}
	bl.b.moeTPScaled = bl.b.moeTPScaled || (gs.ep == 1 && bl.scaledMoE[key])
	return key, pred, nil
}

// basePredictor builds the GPU-time predictor of predictor.kind for the
// group (the measured database, the roofline or the profile tables) and
// records under key what the data-parallel ranks and reports need of it.
// db is the measured database (perfdb only).
func (bl *builder) basePredictor(gs *groupShape, key predictorKey) (base perf.Predictor, db *perfdb.DB, err error) {
	s, src, m, acc, tp, path := bl.s, bl.src, bl.m, gs.acc, gs.tp, gs.path
	switch s.Predictor.Kind {
	case config.PredictorPerfDB:
		var rl *perf.Roofline
		base, rl, db, err = measuredPredictor(s, src, bl.dbs, m, acc, tp, gs.ep, bl.qf)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		bl.rooflines[key] = rl
		bl.b.perfdb[acc.Name] = describePerfDB(db, bl.dbs.name)
	case config.PredictorRoofline:
		base, err = roofline(s, src, m, acc, tp, bl.qf)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		if rl, ok := base.(*perf.Roofline); ok {
			bl.rooflines[key] = rl
		}
	default:
		prof, scaled, err := profile(s, src, bl.profiles, m, acc, tp, bl.arch, bl.cat, bl.qf)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		base = prof
		if t, ok := prof.(moe.LayerTimer); ok { // not when scaled to another format
			bl.timers[key] = t
		}
		if p, ok := prof.(*perf.Profile); ok && p.MoETPScaled() {
			bl.scaledMoE[key] = true
		}
		bl.b.formatScaled = bl.b.formatScaled || scaled
	}
	return base, db, nil
}

// groupSpeculative builds the group's speculative decoding (zero: off).
func (bl *builder) groupSpeculative(gs *groupShape, key predictorKey) (specBuild, error) {
	sp := gs.eng.Speculative
	if sp == nil {
		return specBuild{}, nil
	}
	s := bl.s
	if gs.pp > 1 && (gs.dp > 1 || gs.ep > 1) {
		return specBuild{}, fmt.Errorf("%s: speculative decoding with pipeline parallelism inside data- or expert-parallel ranks is not modelled; use pp 1 or remove speculative", specPath(s, gs.gi))
	}
	sb, err := buildSpec(s, bl.src, bl.profiles, specPath(s, gs.gi), sp, bl.m, gs.acc, gs.tp, bl.bpe, bl.qf, gs.eng, gs.et, bl.gpuTime[key])
	if err != nil || gs.ep <= 1 || sp.Method == config.SpecNgram || sp.Method == config.SpecDraftModel {
		return sb, err
	}
	return bl.epHeadSpec(gs, key, sb)
}

// groupKV is a group's KV capacity per instance: the blocks it runs with,
// the blocks the memory model predicts and, when the model does not fit,
// why.
type groupKV struct {
	blocks, predicted int
	predictErr        error
	layout            string // the KV layout of a hybrid or MLA model, "" otherwise
	// local is a hybrid model's window-bounded KV cache groups when the
	// engine frees their blocks as the window slides (blocks is then
	// vLLM's whole pool); localKV their KV bytes per token on one GPU.
	local   engine.LocalKV
	localKV int64
}

// groupMemory sizes the group's KV cache per instance from its GPU memory
// (or engine.num_gpu_blocks) and checks it against the simulator's bounds.
func (bl *builder) groupMemory(gs *groupShape, sb specBuild) (groupKV, error) {
	m, acc, tp, pp, ep, path := bl.m, gs.acc, gs.tp, gs.pp, gs.ep, gs.path
	mem := gpuMemoryEP(m, gs.memBytes, tp, pp, ep, bl.bpe, bl.qf, gs.eng)
	// The proposer's weights and KV share the GPU; its KV lives in
	// the same blocks as the target's (vLLM sizes one pool over both
	// models' layers).
	mem.Weights += sb.weights + redundantExpertBytes(m, gs.g.NumRedundantExperts, ep, bl.qf)
	mem.KVPerToken += sb.kvPerToken
	predicted, perr := mem.Blocks(gs.eng.BlockSize)
	layout := kvLayout(m, tp, pp, bl.qf.KVBytes())
	var local engine.LocalKV
	var localKV int64
	hy, hybrid := hybridLayout(m, gs.eng, tp, pp, bl.qf.KVBytes())
	if on, why := hybridManager(bl.s, gs.eng, hy.Chunked); hybrid && !on {
		hybrid = false
		layout = "every layer as full attention (vLLM's hybrid KV cache manager off: " + why + ")"
	}
	if hybrid {
		var pool int
		if predicted, pool, perr = hy.Blocks(mem); perr == nil {
			layout = fmt.Sprintf("hybrid, %s; vLLM pool %d blocks", hy, pool)
		}
		if _, groups := hy.Groups(); hy.FreesWindows() && bl.s.KVTiers == nil {
			// The engine frees window blocks as they slide: it runs
			// with vLLM's whole pool.
			predicted, perr = hy.PoolBlocks(mem)
			layout = fmt.Sprintf("hybrid, %s; one pool of %d blocks (vLLM logs %d tokens), window blocks freed as they slide", hy.GroupsString(), predicted, predicted/(groups+1)*hy.BlockSize)
			local = engine.LocalKV{Groups: groups, Window: hy.Window, Chunked: hy.Chunked}
			localKV = hy.PageBytes / int64(hy.BlockSize) * int64(hy.LocalLayers)
		}
	}
	if perr != nil {
		shape := fmt.Sprintf("tp=%d", tp)
		if pp > 1 {
			shape += fmt.Sprintf(" pp=%d", pp)
		}
		if ep > 1 {
			shape += fmt.Sprintf(" dp=%d ep=%d", gs.dp, ep)
		}
		perr = fmt.Errorf("%s: %s on %s x %s: %w%s", path, m.Name, acc.Name, shape, perr, fitHint(m, acc, tp, pp, bl.bpe, bl.qf, gs.eng, gs.g.MemoryGB, hybridOn(bl.s, gs.eng, chunkedLocal(m))))
	}
	blocks := gs.eng.NumGPUBlocks
	if blocks == 0 {
		if perr != nil {
			return groupKV{}, perr
		}
		blocks = predicted
	}
	if blocks > config.MaxBlocksPerInstance {
		return groupKV{}, fmt.Errorf("%s: %d KV blocks per instance exceed the simulator's bound of %d; set engine.num_gpu_blocks or a larger engine.block_size", path, blocks, config.MaxBlocksPerInstance)
	}
	bl.totalBlocks += int64(blocks) * int64(*gs.g.Count) * int64(gs.dp)
	if bl.totalBlocks > config.MaxTotalBlocks {
		return groupKV{}, fmt.Errorf("%s: the cluster's KV blocks exceed the simulator's bound of %d; use fewer instances, engine.num_gpu_blocks or a larger engine.block_size", path, config.MaxTotalBlocks)
	}
	return groupKV{blocks: blocks, predicted: predicted, predictErr: perr, layout: layout, local: local, localKV: localKV}, nil
}

// engineConfig makes the group's engine configuration with blocks KV
// blocks; pushBuf is the push policy's receive buffer carved out of them.
func (bl *builder) engineConfig(gs *groupShape, blocks int, sb specBuild) (cfg engine.Config, pushBuf int, err error) {
	s, m, eng, path := bl.s, bl.m, gs.eng, gs.path
	if err := checkBatchLimits(enginePath(s, gs.gi), eng, gs.maxLen); err != nil {
		return engine.Config{}, 0, err
	}
	cfg = engine.Config{
		MaxNumSeqs:                eng.MaxNumSeqs,
		MaxNumBatchedTokens:       eng.MaxNumBatchedTokens,
		BlockSize:                 eng.BlockSize,
		NumBlocks:                 blocks,
		LongPrefillTokenThreshold: eng.LongPrefillTokenThreshold,
		ChunkedPrefill:            *eng.ChunkedPrefill,
		PrefixCaching:             *eng.PrefixCaching,
		MaxModelLen:               gs.maxLen,
		AsyncScheduling:           *eng.AsyncScheduling,
		CheckInvariants:           s.CheckInvariants,
		Spec:                      sb.cfg,
		PriorityScheduling:        eng.PriorityScheduling(),
	}
	cfg.SwapBlocks = swapBlocks(eng, kvPerTokenPerGPU(m, bl.qf.KVBytes(), gs.tp, gs.pp)+sb.kvPerToken)
	if gs.pp > 1 {
		tc := tpComm(m, gs.acc, gs.tp, bl.bpe, s.Links, eng)
		cfg.PipelineParallel = gs.pp
		cfg.PPSend = engine.PPSend{LatencyNs: tc.LinkLatencyNs, BytesPerToken: int64(m.HiddenSize) * int64(bl.bpe), Bandwidth: tc.LinkBW}
	}
	role, err := engineRole(gs.g.Role)
	if err != nil {
		return engine.Config{}, 0, fmt.Errorf("%s.role: %w", path, err)
	}
	cfg.Role = role
	if role == engine.Decode {
		cfg.ReservedDecodeTokens = s.Handoff.ReservedDecodeTokens
	}
	if s.PD() && role == engine.Decode && s.Handoff.Policy == config.PolicyPush {
		pushBuf = int(float64(blocks) * s.Handoff.PushBufferFraction)
		cfg.NumBlocks = blocks - pushBuf
	}
	if err := cfg.Validate(); err != nil {
		return engine.Config{}, 0, fmt.Errorf("%s: engine: %w", path, err)
	}
	return cfg, pushBuf, nil
}

// groupNIC is the KV-transfer NIC of each of acc's GPUs, with the
// scenario's links overrides.
func (bl *builder) groupNIC(acc hw.Accelerator) nic {
	l := bl.s.Links
	n := nic{bw: acc.NIC.Bandwidth, latency: acc.NIC.LatencyNs}
	if l.BandwidthGBps > 0 {
		n.bw = l.BandwidthGBps * 1e9
	}
	if l.LatencyUs >= 0 {
		n.latency = int64(l.LatencyUs * 1000)
	}
	if l.ZeroCost {
		n = nic{bw: math.Inf(1)}
	}
	return n
}

// prefillRate is the tokens/s of a full prefill step (0 when it takes no
// time), as the reject policy estimates prefill queues.
func prefillRate(pred perf.Predictor, eng config.Engine) float64 {
	if d := pred.StepTime(&perf.Batch{PrefillTokens: eng.MaxNumBatchedTokens, PrefillSeqs: 1}); d > 0 {
		return float64(eng.MaxNumBatchedTokens) / (float64(d) / 1e9)
	}
	return 0
}

// dpSpec is how the group's data- or expert-parallel instances time
// their lockstep steps (zero for an ordinary group).
func (bl *builder) dpSpec(gs *groupShape, key predictorKey, pred perf.Predictor) (groupSpec, error) {
	dp, ep, path := gs.dp, gs.ep, gs.path
	if dp <= 1 && ep <= 1 {
		return groupSpec{}, nil
	}
	timer, err := bl.epTimer(gs, key)
	if err != nil {
		return groupSpec{}, fmt.Errorf("%s: %w", path, err)
	}
	spec, err := bl.commSpec(gs)
	if err != nil {
		return groupSpec{}, err
	}
	spec.pred, spec.timer = pred, timer
	spec.graph = gs.et
	spec.graph.CaptureSizes = slices.Sorted(slices.Values(gs.et.CaptureSizes))
	spec.balance, spec.seededTies = gs.g.DPBalance != config.DPBalanceRouter, gs.g.DPBalanceTies == config.TiesSeeded
	return spec, nil
}

// placeInstances appends the group's count instances of dp ranks each,
// copies of tmpl, placing each on a node; a data- or expert-parallel
// instance also becomes a DP group timed by spec.
func (bl *builder) placeInstances(gs *groupShape, tmpl Instance, spec groupSpec) {
	b, dp := bl.b, gs.dp
	for c := 0; c < *gs.g.Count; c++ {
		node := bl.place.place(gs.acc.Name, gs.nodeGPUs, dp*gs.tp*gs.pp)
		spec.ranks = nil
		for r := 0; r < dp; r++ {
			if dp > 1 || gs.ep > 1 {
				spec.ranks = append(spec.ranks, len(b.instances))
			}
			in := tmpl
			in.Index, in.Rank, in.Node = len(b.instances), r, node
			in.nics = slices.Clone(tmpl.nics)
			b.instances = append(b.instances, in)
		}
		if spec.ranks != nil {
			b.groups = append(b.groups, spec)
		}
	}
}
