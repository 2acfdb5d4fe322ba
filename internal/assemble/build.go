package assemble

import (
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"

	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/frontend"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/kvtier"
	"github.com/servesim/servesim/internal/link"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/moe"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/perfdb"
	"github.com/servesim/servesim/internal/quant"
	"github.com/servesim/servesim/internal/workload"
)

// Instance describes one built instance: what reports show of it, and
// what a run needs to create its engine and attach it to the KV network.
type Instance struct {
	Index     int
	Group     string
	Role      config.Role
	Hardware  string
	TP        int
	PP        int
	NumBlocks int
	// PredictedBlocks is the KV capacity servesim predicts from memory:
	// NumBlocks unless engine.num_gpu_blocks pins it. Under a pinned
	// capacity a model that does not fit by the memory model predicts 0
	// blocks and PredictErr says why.
	PredictedBlocks int
	PredictErr      error
	BlockSize       int
	// KVLayout describes a hybrid (sliding-window or chunked) or MLA KV
	// cache; "" for a plain one.
	KVLayout string
	// Engine is the engine configuration every run starts from.
	Engine engine.Config
	// Predictor is the instance's step-latency predictor (stateless).
	Predictor perf.Predictor
	// BatchOrigin says whether Engine's max_num_seqs and
	// max_num_batched_tokens come from the scenario or are vLLM's
	// defaults for the accelerator.
	BatchOrigin BatchOrigin

	// DP and EP are the data- and expert-parallel degrees of the
	// instance this engine is a rank of (1, 1 for an ordinary instance);
	// Rank is its DP rank.
	DP, EP, Rank int
	// Speculative describes the instance's speculative decoding (empty:
	// off).
	Speculative string
	// TPNodes is the number of nodes its tensor-parallel group spans when
	// tp exceeds the node size, or the NVLink domain where it is larger
	// (its all-reduces then cross the NICs); 0 when the group fits.
	TPNodes int
	// WideEP describes the expert-parallel group's nodes, all-to-all,
	// EPLB and DBO (empty for a group of one node with none set).
	WideEP string
	// Node is the node the instance's GPUs are placed on: instances fill
	// nodes of their accelerator's node size in order, an instance never
	// straddling two (when it fits in one).
	Node int

	nics        []nic   // one per GPU
	kvPerToken  int64   // KV bytes of one token on one GPU
	localKV     int64   // the part of kvPerToken in window-bounded layers that free their blocks (hybrid models)
	prefillRate float64 // tokens/s of a full prefill step (reject policy)
	pushBuf     int     // push policy: receive-buffer blocks carved out of NumBlocks
}

// tpNodes is the number of nodes of nodeGPUs GPUs a tensor-parallel group
// of tp spans, 0 when it fits in one (or the node size is unknown).
func tpNodes(tp, nodeGPUs int) int {
	if nodeGPUs <= 0 || tp <= nodeGPUs {
		return 0
	}
	return (tp + nodeGPUs - 1) / nodeGPUs
}

// Built is a scenario assembled into runnable parts. It is immutable: its
// fields are read through accessors that return copies (or, for the
// model, a configuration nothing modifies), and NewSim creates fresh
// engines, router and workload source for every run.
type Built struct {
	scenario  config.Scenario // a copy of the scenario built
	model     *model.Config
	instances []Instance
	// pd is the handoff configuration of a disaggregated scenario (nil for
	// colocated serving).
	pd *cluster.PDConfig
	// faults is the run's fault model (nil: none).
	faults *cluster.FaultConfig
	// tiers configures the KV tiers below the GPUs (nil: none).
	tiers *kvtier.Config
	// engines are the instance groups' effective engine settings, every
	// default resolved (see Resolved).
	engines []config.Engine
	layers  int
	src     config.Source
	// groups are the data-parallel instances, their ranks' engine indices
	// and how their steps are timed; routing the measured expert
	// popularity of moe.histogram (nil: none).
	groups  []groupSpec
	routing []float64
	// formatScaled reports that some profile tables are scaled to the
	// scenario's format (predictor.format_scaling).
	formatScaled bool
	// moeTPScaled reports that some instance prices tensor-parallel MoE
	// (tp > 1, ep = 1) from the tp1 moe.csv divided by tp.
	moeTPScaled bool
	// perfdb describes, per accelerator, the database tables that time
	// its steps (predictor.kind perfdb; nil otherwise).
	perfdb map[string]string
	// noSteady turns the cluster's steady runs off (WithoutSteadyRuns).
	noSteady bool
	// hw is the accelerator catalog of the scenario: the built-in one
	// with its accelerators_file and accelerators.
	hw *hw.Catalog
	// open returns a fresh workload source and a closer for the file
	// behind it (see Open).
	open func() (workload.Source, io.Closer, error)
	// shadow, when set, times every step of a simulation with a second
	// build's predictors too (see ShadowSteps).
	shadow *shadowSteps
}

// shadowSteps are the second predictors of ShadowSteps: one per instance
// and per data-parallel group, and where their times go.
type shadowSteps struct {
	instances, groups []perf.Predictor
	rec               perf.StepPair
}

// ShadowSteps returns a copy of b whose simulations also time every step
// with the predictor other built for the same instance (or data-parallel
// group), reporting both times to rec (perf.WithShadow); the runs
// themselves are b's. other must be the same scenario with another
// latency source. A data-parallel group's batches carry the group's own
// MoE time (Batch.MoENs), which other then uses too.
func (b *Built) ShadowSteps(other *Built, rec perf.StepPair) (*Built, error) {
	if len(other.instances) != len(b.instances) || len(other.groups) != len(b.groups) {
		return nil, fmt.Errorf("comparing step times: %d instances and %d data-parallel groups against %d and %d",
			len(b.instances), len(b.groups), len(other.instances), len(other.groups))
	}
	sh := &shadowSteps{rec: rec}
	for i := range other.instances {
		sh.instances = append(sh.instances, other.instances[i].Predictor)
	}
	for _, g := range other.groups {
		sh.groups = append(sh.groups, g.pred)
	}
	c := *b
	c.shadow = sh
	return &c, nil
}

// withShadow wraps a simulation's predictor p of instance (or group) i,
// already counting into the run's table counts, when b compares step
// times; the second predictor counts into a scratch count.
func (b *Built) withShadow(p perf.Predictor, i int, group bool) perf.Predictor {
	if b.shadow == nil {
		return p
	}
	o := b.shadow.instances
	if group {
		o = b.shadow.groups
	}
	return perf.WithShadow(p, perf.ForRun(o[i], &perf.TableCounts{}), b.shadow.rec)
}

// Scenario returns a copy of the scenario b was built from (its sections
// behind pointers are shared: read them only).
func (b *Built) Scenario() config.Scenario { return b.scenario }

// Model returns the served model's configuration (read only).
func (b *Built) Model() *model.Config { return b.model }

// NumInstances returns the number of built instances (engines).
func (b *Built) NumInstances() int { return len(b.instances) }

// Instance returns a copy of instance i.
func (b *Built) Instance(i int) Instance { return b.instances[i] }

// Instances returns a copy of the built instances.
func (b *Built) Instances() []Instance { return slices.Clone(b.instances) }

// PD returns the handoff configuration of a disaggregated scenario, and
// false for colocated serving.
func (b *Built) PD() (cluster.PDConfig, bool) {
	if b.pd == nil {
		return cluster.PDConfig{}, false
	}
	return *b.pd, true
}

// HasFaults reports whether runs have a fault model or an autoscaler.
func (b *Built) HasFaults() bool { return b.faults != nil }

// Open returns a fresh workload source (it can be called again to replay
// the same workload) and a closer for the file behind it.
func (b *Built) Open() (workload.Source, io.Closer, error) { return b.open() }

// WithSource returns a copy of b whose runs read the workload from open
// instead of the scenario's (a replay of a measured run).
func (b *Built) WithSource(open func() (workload.Source, io.Closer, error)) *Built {
	c := *b
	c.open = open
	return &c
}

// WithoutDecodeLane returns a copy of b whose engines visit every running
// request in every step (engine.Config.NoDecodeLane): the reference the
// decode lane's outputs are checked against.
func (b *Built) WithoutDecodeLane() *Built {
	c := *b
	c.instances = slices.Clone(b.instances)
	for i := range c.instances {
		c.instances[i].Engine.NoDecodeLane = true
	}
	return &c
}

// WithoutAnonymousTails returns a copy of b whose engines name every KV
// block (engine.Config.NoAnonymousTails): the reference the anonymous
// tails' outputs are checked against.
func (b *Built) WithoutAnonymousTails() *Built {
	c := *b
	c.instances = slices.Clone(b.instances)
	for i := range c.instances {
		c.instances[i].Engine.NoAnonymousTails = true
	}
	return &c
}

// WithoutSteadyRuns returns a copy of b whose runs send every step end
// through the event queue (cluster.Config.NoSteadyRuns): the reference
// the steady runs' outputs are checked against.
func (b *Built) WithoutSteadyRuns() *Built {
	c := *b
	c.noSteady = true
	return &c
}

// NewSim assembles a simulation from a built scenario with fresh engines,
// a fresh router and a fresh workload source. The closer must be closed
// after the run.
func (b *Built) NewSim(obs cluster.Observer) (*cluster.Sim, io.Closer, error) {
	sim, _, closer, err := b.NewRun(obs, nil)
	return sim, closer, err
}

// NewRun is NewSim that also returns the run's table counts: how many
// op evaluations the measured-kernel predictors (predictor.kind perfdb)
// timed from their tables and how many fell back to the roofline.
// interrupt, when set, is polled during the run and stops it
// (cluster.Config.Interrupt).
func (b *Built) NewRun(obs cluster.Observer, interrupt func() bool) (*cluster.Sim, *perf.TableCounts, io.Closer, error) {
	src, closer, err := b.Open()
	if err != nil {
		return nil, nil, nil, err
	}
	counts := &perf.TableCounts{}
	sim, err := b.newSim(src, obs, nil, counts, runTime{interrupt: interrupt})
	if err != nil {
		closer.Close()
		return nil, nil, nil, err
	}
	return sim, counts, closer, nil
}

// Router returns a fresh instance of the scenario's arrival router.
func (b *Built) Router() (cluster.Router, error) { return newRouter(&b.scenario) }

// NewSimFrom is NewSim with the workload source and the arrival router
// given (nil router: the scenario's), as a driver that feeds requests in
// real time needs (servesim serve). A served simulation has no end: the
// scenario's run limits (meant for batch runs) do not apply; the
// automatic event budget still stops one that loops without progress.
func (b *Built) NewSimFrom(src workload.Source, obs cluster.Observer, router cluster.Router) (*cluster.Sim, error) {
	return b.newSim(src, obs, router, &perf.TableCounts{}, runTime{served: true})
}

// runTime are the parts of a simulation that come from how it is run,
// not from the scenario.
type runTime struct {
	interrupt func() bool // polled during the run (nil: none)
	served    bool        // a served simulation: no run limits
}

func (b *Built) newSim(src workload.Source, obs cluster.Observer, router cluster.Router, counts *perf.TableCounts, rt runTime) (*cluster.Sim, error) {
	engines := make([]*engine.Engine, len(b.instances))
	for i := range b.instances {
		in := &b.instances[i]
		e, err := engine.New(i, in.Engine, b.withShadow(perf.ForRun(in.Predictor, counts), i, false))
		if err != nil {
			return nil, fmt.Errorf("instance %d (group %s): %w", i, in.Group, err)
		}
		engines[i] = e
	}
	if router == nil {
		var err error
		if router, err = newRouter(&b.scenario); err != nil {
			return nil, err
		}
	}
	cfg := cluster.Config{Engines: engines, Source: src, Router: router, Observer: obs,
		CheckInvariants: b.scenario.CheckInvariants,
		MaxConcurrency:  b.scenario.Workload.MaxConcurrency,
		Warmup:          int64(b.scenario.Workload.WarmupRequests),
		Interrupt:       rt.interrupt,
		NoSteadyRuns:    b.noSteady}
	if !rt.served {
		cfg.Limits = cluster.Limits{MaxTime: int64(math.Round(b.scenario.Limits.MaxSimTimeS * 1e9)), MaxEvents: b.scenario.Limits.MaxEvents}
	}
	if fe := b.scenario.FrontEnd; fe != nil {
		cfg.FrontEnd = frontend.New(*fe, b.scenario.Seed, len(engines))
	}
	if len(b.groups) > 0 {
		groups, err := b.dpGroups(counts)
		if err != nil {
			return nil, err
		}
		cfg.DPGroups = groups
	}
	if b.tiers != nil {
		h, err := kvtier.New(*b.tiers)
		if err != nil {
			return nil, err
		}
		cfg.Tiers = h
	}
	if b.pd != nil {
		net := link.New()
		nodes := make([]cluster.Node, len(engines))
		for i := range nodes {
			in := &b.instances[i]
			for _, n := range in.nics {
				ep, err := net.AddEndpoint(n.bw, n.latency)
				if err != nil {
					return nil, fmt.Errorf("instance %d (group %s) NIC: %w", i, in.Group, err)
				}
				nodes[i].Endpoints = append(nodes[i].Endpoints, ep)
			}
			nodes[i].KVBytesPerToken = in.kvPerToken
			nodes[i].LocalKVBytesPerToken = in.localKV
			nodes[i].Layers = b.layers
			nodes[i].PrefillTokensPerSec = in.prefillRate
		}
		cfg.PD = &cluster.PDSetup{Config: *b.pd, Nodes: nodes, Net: net}
	}
	cfg.Faults = b.faults
	return cluster.New(cfg)
}

// Build resolves a validated scenario: it loads the model and hardware,
// sizes every instance's KV cache, loads the latency predictor and prepares
// the workload. Errors name the field at fault and what would fix it.
func Build(s *config.Scenario, src config.Source) (*Built, error) {
	if _, err := newRouter(s); err != nil {
		return nil, err
	}
	in, err := resolveInputs(s, src)
	if err != nil {
		return nil, err
	}
	bl := newBuilder(in)
	for gi := range s.Instances {
		if err := bl.addGroup(gi); err != nil {
			return nil, err
		}
	}
	return bl.finish()
}

// buildInputs are what every instance group's build shares: the scenario,
// the model and its formats, and where step-time tables come from.
type buildInputs struct {
	s          *config.Scenario
	src        config.Source
	m          *model.Config
	bpe        int
	qf         quant.Format
	profiles   fs.FS
	cat        *perf.Catalog
	arch       perf.Arch
	overheadNs int64
	dbs        *perfdbs // predictor.kind perfdb; nil otherwise
	hw         *hw.Catalog
}

// resolveInputs loads the model and resolves the scenario-wide inputs of
// Build.
func resolveInputs(s *config.Scenario, src config.Source) (*buildInputs, error) {
	m, err := loadModel(s, src)
	if err != nil {
		return nil, err
	}
	hwcat, err := HardwareCatalog(s, src)
	if err != nil {
		return nil, err
	}
	bpe, err := model.BytesPerElem(s.Dtype)
	if err != nil {
		return nil, fmt.Errorf("dtype: %w", err)
	}
	qf, err := s.Format()
	if err != nil {
		return nil, err
	}
	profiles, err := profileRoot(s, src)
	if err != nil {
		return nil, err
	}
	cat, err := layerCatalog(m)
	if err != nil {
		return nil, err
	}
	in := &buildInputs{s: s, src: src, m: m, bpe: bpe, qf: qf, profiles: profiles, cat: cat,
		arch:       perf.Arch{ModelType: cat.ModelType, NumLayers: int(m.NumLayers), NumExperts: int(m.NumExperts), ExpertsPerTok: int(m.ExpertsPerTok)},
		overheadNs: int64(s.Predictor.StepOverheadUs * 1000), hw: hwcat}
	if s.Predictor.Kind == config.PredictorPerfDB {
		if in.dbs, err = newPerfDBs(s, src); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// builder carries Build's state from one instance group to the next.
type builder struct {
	*buildInputs
	b           *Built
	totalBlocks int64
	place       placer
	// Per predictor key (see groupPredictor): the predictors, their GPU-time
	// part (speculative heads), the per-rank MoE timers and rooflines, and
	// whether the MoE time is the tp1 table divided by tp.
	predictors map[predictorKey]perf.Predictor
	gpuTime    map[predictorKey]perf.Predictor
	timers     map[predictorKey]moe.LayerTimer
	rooflines  map[predictorKey]*perf.Roofline
	scaledMoE  map[predictorKey]bool
	// deepEPs memoises the measured DeepEP tables by system and kernel
	// kind (nil: none).
	deepEPs map[string]*perfdb.DeepEPTable
}

// newBuilder starts a build from the shared inputs.
func newBuilder(in *buildInputs) *builder {
	bl := &builder{buildInputs: in, b: &Built{scenario: *in.s, model: in.m, src: in.src, hw: in.hw},
		place:      placer{open: map[string]*openNode{}},
		predictors: map[predictorKey]perf.Predictor{}, gpuTime: map[predictorKey]perf.Predictor{},
		timers: map[predictorKey]moe.LayerTimer{}, rooflines: map[predictorKey]*perf.Roofline{}, scaledMoE: map[predictorKey]bool{}, deepEPs: map[string]*perfdb.DeepEPTable{}}
	if in.dbs != nil {
		bl.b.perfdb = map[string]string{}
	}
	return bl
}

// finish checks and reads the scenario-wide sections once every group is
// built: MoE routing, KV tiers, the P/D handoff and the workload.
func (bl *builder) finish() (*Built, error) {
	s, src, m, b := bl.s, bl.src, bl.m, bl.b
	if r := s.MoE; r != nil {
		// Checked whatever the groups, so that a section no group uses
		// yet (ep 1) or can use (a dense model) is not silently ignored.
		if m.NumExperts == 0 {
			return nil, fmt.Errorf("moe: %s is a dense model (no experts); the moe section applies to mixture-of-experts models: remove it", m.Name)
		}
		if r.Routing == config.RoutingHistogram {
			routing, err := readHistogram(resolve(src, r.Histogram), int(m.NumExperts), m.NumMoELayers())
			if err != nil {
				return nil, err
			}
			if len(b.groups) > 0 {
				b.routing = routing
			}
		}
	}
	b.layers = int(m.NumLayers)
	var err error
	if s.KVTiers != nil {
		if b.tiers, err = tierConfig(s, b); err != nil {
			return nil, err
		}
	}
	if s.PD() {
		pushBuf := make([]int, len(b.instances))
		for i := range b.instances {
			pushBuf[i] = b.instances[i].pushBuf
		}
		pdc, err := pdConfig(s, pushBuf, acc0HostBW(s, b.hw))
		if err != nil {
			return nil, err
		}
		b.pd = pdc
	}
	if b.faults, err = faultConfig(b); err != nil {
		return nil, err
	}
	open, err := workloadOpener(s, src)
	if err != nil {
		return nil, err
	}
	if open, err = requireAcceptance(s, open); err != nil {
		return nil, err
	}
	b.open = open
	return b, nil
}

// placer puts instances on nodes: each accelerator type fills its nodes
// in order; an instance that does not fit the open node's free GPUs opens
// a new node (one larger than a node gets nodes of its own).
type placer struct {
	next int
	open map[string]*openNode
}

type openNode struct{ id, free int }

func (p *placer) place(acc string, nodeGPUs, gpus int) int {
	n := p.open[acc]
	if n == nil || n.free < gpus {
		n = &openNode{id: p.next, free: max(nodeGPUs, gpus)}
		p.next += max(1, (gpus+max(nodeGPUs, 1)-1)/max(nodeGPUs, 1))
		p.open[acc] = n
	}
	n.free -= gpus
	return n.id
}

// nic is one GPU's KV-transfer network interface.
type nic struct {
	bw      float64 // bytes/s per direction
	latency int64   // ns
}

func repeatNIC(n nic, k int) []nic {
	out := make([]nic, k)
	for i := range out {
		out[i] = n
	}
	return out
}

// enginePath names where group gi's engine settings come from: its own
// engine block when it has one, else the scenario's.
func enginePath(s *config.Scenario, gi int) string {
	if s.Instances[gi].Engine != nil {
		return fmt.Sprintf("instances[%d].engine (or engine)", gi)
	}
	return "engine"
}

// checkBatchLimits refuses what vLLM's scheduler configuration refuses at
// start-up: a step budget smaller than max_num_seqs, and, without chunked
// prefill, a step budget smaller than the longest sequence (such a prompt
// could never be scheduled).
func checkBatchLimits(path string, eng config.Engine, maxLen int) error {
	if eng.MaxNumBatchedTokens < eng.MaxNumSeqs {
		return fmt.Errorf("%s: max_num_batched_tokens %d is smaller than max_num_seqs %d; raise max_num_batched_tokens to at least %d or lower max_num_seqs",
			path, eng.MaxNumBatchedTokens, eng.MaxNumSeqs, eng.MaxNumSeqs)
	}
	if !*eng.ChunkedPrefill && eng.MaxNumBatchedTokens < maxLen {
		return fmt.Errorf("%s: max_num_batched_tokens %d is smaller than max_model_len %d with enable_chunked_prefill false, so longer prompts could never be scheduled; raise max_num_batched_tokens to %d, set max_model_len <= %d or enable chunked prefill",
			path, eng.MaxNumBatchedTokens, maxLen, maxLen, eng.MaxNumBatchedTokens)
	}
	return nil
}

// layerCatalog loads the layer catalog that times model m's architecture
// (model.Architecture: a Mistral config runs the Llama catalog). An
// unsupported model_type is an error listing the supported ones.
func layerCatalog(m *model.Config) (*perf.Catalog, error) {
	a, err := m.Architecture()
	if err != nil {
		return nil, err
	}
	cat, err := perf.LoadCatalog(assets.FS(), a.LayerCatalog)
	if err != nil {
		return nil, fmt.Errorf("model %s (%s): %w", m.Name, a.ModelType, err)
	}
	return cat, nil
}

// HardwareCatalog returns the accelerator catalog scenario s runs on: the
// built-in catalog, extended with its accelerators_file (relative to the
// scenario file) and then its accelerators list. Errors name the file
// position or the field.
func HardwareCatalog(s *config.Scenario, src config.Source) (*hw.Catalog, error) {
	cat, err := hw.Default()
	if err != nil {
		return nil, err
	}
	if s.AcceleratorsFile != "" {
		p := resolve(src, s.AcceleratorsFile)
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("accelerators_file: %w", err)
		}
		defer f.Close()
		if cat, err = cat.Extend(f, p); err != nil {
			return nil, fmt.Errorf("accelerators_file: %w", err)
		}
	}
	if len(s.Accelerators) > 0 {
		if cat, err = cat.With(s.Accelerators, config.AcceleratorField); err != nil {
			return nil, err
		}
	}
	return cat, nil
}
