package convert

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/perf"
)

// converter maps a checked cluster onto the scenario.
type converter struct {
	opts  Options
	notes *notes
	model *model.Config // nil when no config for the model was found
}

// convert builds the output scenario.
func (c *converter) convert(cl *cluster) (*outScenario, error) {
	if len(cl.instances) == 0 {
		return nil, errors.New("nodes: no instances")
	}
	first := cl.instances[0]
	for _, in := range cl.instances[1:] {
		if in.model != first.model {
			return nil, fmt.Errorf("%s.model_name: %q differs from %s.model_name %q: a servesim scenario serves one model; convert one model's instances at a time",
				in.path, in.model, first.path, first.model)
		}
	}
	dtype, err := scenarioDtype(cl.instances)
	if err != nil {
		return nil, err
	}
	if err := c.loadModel(first.model); err != nil {
		return nil, err
	}
	modelName := first.model
	if c.model != nil {
		modelName = c.model.Name
	}
	if err := c.checkGroups(cl.instances); err != nil {
		return nil, err
	}

	name := strings.TrimSuffix(c.opts.Name, filepath.Ext(c.opts.Name))
	out := &outScenario{Name: name, Model: modelName, Models: c.opts.Models, Dtype: dtype}
	var unsupported []Section
	members := map[string]int{}
	for _, in := range cl.instances {
		if in.dpGroup != "" {
			members[in.dpGroup]++
		}
	}
	emitted := map[string]bool{}
	for _, in := range cl.instances {
		acc, err := accelerator(in)
		if err != nil {
			return nil, err
		}
		if out.Hardware == "" {
			out.Hardware = acc.Name
		}
		c.hardwareNotes(in, acc)
		eng, err := c.engine(in)
		if err != nil {
			return nil, err
		}
		if n := members[in.dpGroup]; c.realDP(in, n) {
			// One servesim instance of n lockstep DP ranks with the
			// experts sharded over them, as vLLM runs the group.
			if !emitted[in.dpGroup] {
				emitted[in.dpGroup] = true
				c.notes.add("dp_group %q: %d members with ep_size %d become one instance with dp %d and ep %d: lockstep data-parallel ranks, experts sharded over the %d GPUs, all-gather/reduce-scatter dispatch (docs/moe.md)", in.dpGroup, n, in.ep, n, in.ep, in.ep)
				out.add(outGroup{Count: 1, Role: in.role, Hardware: acc.Name, TP: in.tp, DP: n, EP: in.ep, MemoryGB: in.memGB, Engine: eng})
			}
			continue
		}
		if sec, ok := c.expertsFit(in, dtype, eng); !ok {
			unsupported = append(unsupported, sec)
			continue
		}
		c.parallelismNotes(in)
		g := outGroup{Count: 1, Role: in.role, Hardware: acc.Name, TP: in.tp, MemoryGB: in.memGB, Engine: eng}
		if in.pp > 1 {
			g.PP = in.pp
		}
		out.add(g)
	}
	if len(unsupported) > 0 {
		return nil, &UnsupportedError{Sections: unsupported}
	}
	if cl.numNodes > 1 {
		c.notes.add("num_nodes %d: servesim has no node topology; the instances of all nodes form one flat cluster and KV transfers between any two instances use links", cl.numNodes)
	}
	out.Links = c.links(cl)
	if out.Predictor, err = c.predictor(modelName, dtype, out.Instances); err != nil {
		return nil, err
	}
	out.Workload.Trace = c.workload(modelName)
	return out, nil
}

// loadModel finds the model's HuggingFace config (user directory first,
// then the embedded ones). A model servesim does not know is not an error
// here unless a mapping needs its config; the scenario then names it and
// the run reports how to add it.
func (c *converter) loadModel(name string) error {
	if c.opts.Models != "" {
		st, err := os.Stat(c.opts.Models)
		if err != nil || !st.IsDir() {
			return fmt.Errorf("models: %q is not a directory of <org>/<name>.json HuggingFace configs", c.opts.Models)
		}
		m, err := model.Load(os.DirFS(c.opts.Models), name)
		if err == nil {
			c.model = m
			return nil
		}
		if !errors.Is(err, model.ErrUnknownModel) {
			return fmt.Errorf("model_name: %w", err)
		}
	}
	m, err := model.Load(model.Builtin(), name)
	switch {
	case err == nil:
		c.model = m
	case errors.Is(err, model.ErrUnknownModel):
		c.notes.add("model %s has no embedded HuggingFace config: the memory checks of the conversion were skipped; give its config.json with --models DIR to run it", name)
	default:
		return fmt.Errorf("model_name: %w", err)
	}
	return nil
}

// scenarioDtype is the one weight dtype of every instance (bf16 when none
// says).
func scenarioDtype(ins []*instance) (string, error) {
	dtype, from := "", ""
	for _, in := range ins {
		if in.dtype == "" {
			continue
		}
		if dtype != "" && in.dtype != dtype {
			return "", fmt.Errorf("%s: %s differs from %s %s: a servesim scenario has one dtype", in.dtypePath, in.dtype, from, dtype)
		}
		dtype, from = in.dtype, in.dtypePath
	}
	if dtype == "" {
		dtype = "bf16"
	}
	return dtype, nil
}

// checkGroups checks the data-parallel groups: members agree on their
// parallelism, as LLMServingSim requires.
func (c *converter) checkGroups(ins []*instance) error {
	first := map[string]*instance{}
	for _, in := range ins {
		if in.dpGroup == "" {
			if isMoE(c.model) && in.ep > in.tp {
				return fmt.Errorf("%s.ep_size: %d exceeds tp_size %d; without a dp_group the experts are split within the tensor-parallel group", in.path, in.ep, in.tp)
			}
			continue
		}
		f, ok := first[in.dpGroup]
		if !ok {
			first[in.dpGroup] = in
			continue
		}
		if f.tp != in.tp || f.pp != in.pp || f.ep != in.ep {
			return fmt.Errorf("%s: dp_group %q members must agree on tp_size, pp_size and ep_size (%s has %d/%d/%d, %s has %d/%d/%d)",
				in.path, in.dpGroup, f.path, f.tp, f.pp, f.ep, in.path, in.tp, in.pp, in.ep)
		}
	}
	return nil
}

// engine maps the per-instance runtime overrides.
func (c *converter) engine(in *instance) (*outEngine, error) {
	e := &outEngine{GPUMemoryUtilization: in.memUtil, ChunkedPrefill: in.chunked, PrefixCaching: in.prefix}
	if in.memUtil > 0 {
		c.notes.add("npu_mem.mem_util becomes engine.gpu_memory_utilization; LLMServingSim sizes the KV cache as mem_size x mem_util - weights, while servesim, like vLLM, also reserves activation memory, so a mem_util tuned to reproduce a vLLM block count in LLMServingSim gives servesim fewer KV blocks (pin them with engine.num_gpu_blocks if you know the measured count)")
	}
	if p := in.maxSeqs; p != nil {
		e.MaxNumSeqs = *p
		if *p == 0 {
			e.MaxNumSeqs = unlimitedSeqs
			c.notes.add("%s: max_num_seqs 0 (unlimited) becomes %d: servesim needs a bound; the KV cache limits the running set first", in.path, unlimitedSeqs)
		}
	}
	if p := in.maxTokens; p != nil {
		e.MaxNumBatchedTokens = *p
		if *p == 0 {
			if c.model == nil || c.model.MaxPositionEmbeddings <= 0 {
				return nil, fmt.Errorf("%s.max_num_batched_tokens: 0 means the model's context length, but no config with max_position_embeddings was found for %s; give it with --models DIR", in.path, in.model)
			}
			e.MaxNumBatchedTokens = int(c.model.MaxPositionEmbeddings)
			c.notes.add("%s: max_num_batched_tokens 0 means the model's context length in LLMServingSim: %d", in.path, e.MaxNumBatchedTokens)
		}
	}
	if p := in.longPrefill; p != nil {
		e.LongPrefillTokenThreshold = *p // 0 (no cap) is servesim's default too
	}
	if p := in.blockSize; p != nil {
		e.BlockSize = *p
	}
	if *e == (outEngine{}) {
		return nil, nil
	}
	return e, nil
}

// hardwareNotes records the hardware fields servesim takes from its
// catalog instead.
func (c *converter) hardwareNotes(in *instance, acc hw.Accelerator) {
	if cat := acc.MemBandwidth / 1e9; in.memBW > 0 && (in.memBW < 0.98*cat || in.memBW > 1.02*cat) {
		c.notes.add("%s: npu_mem.mem_bw %g GB/s differs from the catalog's %g GB/s for %s; servesim uses the catalog (only the roofline predictor reads it)", in.path, in.memBW, cat, acc.Name)
	}
	if in.memLatency != 0 {
		c.notes.add("%s: npu_mem.mem_latency %g ns is ignored (servesim has no memory-latency term)", in.path, in.memLatency)
	}
}

// usableBytes is the memory one GPU of the instance gives the engine.
func usableBytes(in *instance, eng *outEngine) float64 {
	util := config.Default().Engine.GPUMemoryUtilization
	if eng != nil && eng.GPUMemoryUtilization > 0 {
		util = eng.GPUMemoryUtilization
	}
	return in.memGB * 1e9 * util
}

// expertsFit checks that a data-parallel member whose experts
// LLMServingSim spreads across the dp_group (ep_size > tp_size) still fits
// every expert of its pipeline stage on its tp GPUs, as servesim holds
// them.
func (c *converter) expertsFit(in *instance, dtype string, eng *outEngine) (Section, bool) {
	if c.model == nil || !isMoE(c.model) || in.dpGroup == "" || in.ep <= in.tp {
		return Section{}, true
	}
	bpe, err := model.BytesPerElem(dtype)
	if err != nil {
		return Section{}, true
	}
	weights := float64(c.model.WeightBytes(bpe)) / float64(in.tp*in.pp)
	usable := usableBytes(in, eng)
	if weights <= usable {
		return Section{}, true
	}
	shape := fmt.Sprintf("tp=%d", in.tp)
	if in.pp > 1 {
		shape += fmt.Sprintf(" pp=%d", in.pp)
	}
	return Section{Path: in.path + ".ep_size", Feature: fmt.Sprintf(
		"expert parallelism across dp_group %q: servesim would hold every expert on each member, but %s needs %.1f GB of weights per GPU at %s, more than the %.1f GB usable",
		in.dpGroup, c.model.Name, weights/1e9, shape, usable/1e9)}, false
}

// realDP reports whether a member of a dp_group of n members maps onto a
// servesim instance with dp and ep: an MoE model whose experts are spread
// over every GPU of the group (ep_size = n x tp_size), mixed role, no
// pipeline parallelism.
func (c *converter) realDP(in *instance, n int) bool {
	return in.dpGroup != "" && n > 1 && c.model != nil && isMoE(c.model) && in.ep == n*in.tp && in.pp <= 1 && in.role == config.RoleMixed
}

// parallelismNotes records how DP and EP were approximated.
func (c *converter) parallelismNotes(in *instance) {
	if in.dpGroup != "" {
		c.notes.add("dp_group %q: the data-parallel members run as independent instances behind the router; LLMServingSim's per-iteration wave synchronisation (idle members running dummy batches) is not modelled", in.dpGroup)
	}
	switch {
	case in.ep <= 1:
	case !isMoE(c.model) && c.model != nil:
		c.notes.add("%s: ep_size %d is ignored: %s is a dense model", in.path, in.ep, c.model.Name)
	case in.dpGroup != "" && in.ep > in.tp:
		c.notes.add("dp_group %q: experts are split ep_size=%d ways across the group in LLMServingSim, but each servesim instance holds every expert, sharded by its tp=%d only: more weight memory per GPU and a smaller KV cache; the dispatch/combine all-to-all is not modelled",
			in.dpGroup, in.ep, in.tp)
	default:
		c.notes.add("expert parallelism (ep_size %d within tp_size %d) is simulated as tensor-parallel sharding of the experts: the same weight memory per GPU, without the dispatch/combine all-to-all", in.ep, in.tp)
	}
}

// links maps link_bw and link_latency onto the KV-transfer NICs.
func (c *converter) links(cl *cluster) *outLinks {
	if len(cl.linkBW) == 0 && len(cl.linkLatency) == 0 {
		return nil
	}
	l := &outLinks{}
	if n := len(cl.linkBW); n > 0 {
		v := roundTo(cl.linkBW[n-1]*gibToGB, 9)
		l.BandwidthGBps = &v
	}
	if n := len(cl.linkLatency); n > 0 {
		v := cl.linkLatency[n-1] / 1000
		l.LatencyUs = &v
	}
	c.notes.add("link_bw (GiB/s) and link_latency (ns), LLMServingSim's network links, become the KV-transfer NIC of every GPU (links.bandwidth_gbps in GB/s, links.latency_us); tensor-parallel collectives use the catalog's intra-node link")
	if len(cl.linkBW) > 1 || len(cl.linkLatency) > 1 {
		c.notes.add("link_bw %v / link_latency %v give one value per network dimension; servesim has one NIC per GPU and takes the outermost dimension, which transfers between instances cross", cl.linkBW, cl.linkLatency)
	}
	return l
}

// predictor chooses the latency predictor.
func (c *converter) predictor(modelName, dtype string, groups []outGroup) (outPredictor, error) {
	p := outPredictor{Kind: config.PredictorKind(c.opts.Predictor), Profiles: c.opts.Profiles}
	switch p.Kind {
	case config.PredictorProfile, config.PredictorRoofline:
		return p, nil
	case "", "auto":
	default:
		return p, fmt.Errorf("predictor: must be auto, profile or roofline (got %q)", p.Kind)
	}
	var root fs.FS
	if c.opts.Profiles != "" {
		if st, err := os.Stat(c.opts.Profiles); err != nil || !st.IsDir() {
			return p, fmt.Errorf("profiles: %q is not a directory; give the root of the profile bundles (<hardware>/<org>/<model>/<dtype>/tp<N>)", c.opts.Profiles)
		}
		root = os.DirFS(c.opts.Profiles)
	} else {
		sub, err := fs.Sub(assets.FS(), "profiles")
		if err != nil {
			return p, fmt.Errorf("embedded profiles: %w", err)
		}
		root = sub
	}
	var missing []string
	for _, g := range groups {
		if _, err := perf.FindBundle(root, g.Hardware, modelName, dtype, g.TP); err != nil {
			missing = appendNew(missing, fmt.Sprintf("%s tp=%d", g.Hardware, g.TP))
		}
	}
	p.Kind = config.PredictorProfile
	if len(missing) > 0 {
		p.Kind = config.PredictorRoofline
		where := "embedded"
		if c.opts.Profiles != "" {
			where = c.opts.Profiles
		}
		c.notes.add("no measured profile bundle for %s on %s among the %s bundles: predictor.kind roofline (analytical, from FLOPs and bytes) is used; give --profiles ROOT with the bundles to use measured tables",
			modelName, strings.Join(missing, ", "), where)
	}
	return p, nil
}

// workloadByFamily picks, per model organisation, the builtin trace
// tokenised with that family's tokeniser.
var workloadByFamily = map[string]string{
	"qwen": "builtin:sharegpt-qwen3-32b-300-sps10",
}

// workload picks the trace.
func (c *converter) workload(modelName string) string {
	if c.opts.Workload != "" {
		return c.opts.Workload
	}
	trace := config.DefaultTrace
	org, _, _ := strings.Cut(strings.ToLower(modelName), "/")
	if t, ok := workloadByFamily[org]; ok {
		if name, _ := strings.CutPrefix(t, "builtin:"); slices.Contains(assemble.BuiltinWorkloads(), name) {
			trace = t
		}
	}
	c.notes.add("the workload is an LLMServingSim command-line choice, not part of the cluster config: %s is used (--workload to choose another)", trace)
	return trace
}
