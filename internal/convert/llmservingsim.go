package convert

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/model"
)

// ErrUnsupported is wrapped by the error returned for a cluster config that
// uses a feature servesim cannot simulate (see [UnsupportedError]).
var ErrUnsupported = errors.New("unsupported LLMServingSim feature")

// Section is one part of a cluster config that servesim cannot simulate.
type Section struct {
	// Path locates the section in the JSON, e.g. "nodes[0].power".
	Path string
	// Feature names what the section configures, e.g. "power model".
	Feature string
}

// UnsupportedError lists every section of a cluster config that servesim
// cannot simulate. It wraps [ErrUnsupported].
type UnsupportedError struct {
	// Source names the cluster config.
	Source string
	// Sections are the offending sections, in file order.
	Sections []Section
}

// Error names every unsupported section.
func (e *UnsupportedError) Error() string {
	parts := make([]string, len(e.Sections))
	for i, s := range e.Sections {
		parts[i] = fmt.Sprintf("%s (%s)", s.Path, s.Feature)
	}
	return fmt.Sprintf("%s: cannot convert: servesim does not simulate %s; remove these sections to convert the rest of the cluster",
		e.Source, strings.Join(parts, ", "))
}

// Unwrap returns ErrUnsupported.
func (e *UnsupportedError) Unwrap() error { return ErrUnsupported }

// Options tunes a conversion.
type Options struct {
	// Name labels the scenario and its errors, typically the input file
	// name. Default "llmservingsim".
	Name string
	// Models is a directory of extra HuggingFace configs laid out as
	// <org>/<name>.json, searched before the embedded ones; it is written
	// to the scenario's models field. Default: embedded configs only.
	Models string
	// Profiles is a root of profile bundles
	// (<hardware>/<org>/<model>/<dtype>/tp<N>); it is written to
	// predictor.profiles and consulted by the "auto" predictor choice.
	// Default: the embedded bundles.
	Profiles string
	// Predictor is "auto" (default: "profile" when a measured bundle
	// exists for every instance group, else "roofline"), "profile" or
	// "roofline".
	Predictor string
	// Workload is the workload.trace of the scenario (a JSONL path or
	// builtin:NAME). Default: the builtin ShareGPT trace tokenised for the
	// model's family.
	Workload string
}

// Result is a converted scenario.
type Result struct {
	// YAML is the scenario file: a header comment with the mapping notes,
	// then the scenario.
	YAML []byte
	// Scenario is YAML parsed and validated by config.Parse.
	Scenario *config.Scenario
	// Notes are the approximations and ignored settings, as in the header.
	Notes []string
}

// Conversion constants.
const (
	// gibToGB converts LLMServingSim's link_bw (GiB/s, binary) to GB/s.
	gibToGB = float64(1<<30) / 1e9
	// unlimitedSeqs stands for LLMServingSim's max_num_seqs 0
	// (unlimited): servesim needs a bound, and KV capacity limits the
	// running set long before it on the supported models.
	unlimitedSeqs = 1024
	defaultName   = "llmservingsim"
)

// instance is one LLMServingSim instance, read and checked.
type instance struct {
	path       string
	model      string
	hardware   string // as written
	memGB      float64
	memBW      float64 // GB/s, 0 when absent
	memLatency float64 // ns
	memUtil    float64 // 0 when absent
	tp, pp     int
	ep         int // 0 when absent
	dpGroup    string
	role       config.Role
	// Runtime overrides; nil when absent.
	maxSeqs, maxTokens, longPrefill, blockSize *int
	chunked, prefix                            *bool
	dtype                                      string // servesim dtype, "" when absent
	dtypePath                                  string
}

// cluster is the part of a cluster config servesim uses.
type cluster struct {
	numNodes    int
	linkBW      []float64 // GiB/s per network dimension
	linkLatency []float64 // ns per network dimension
	instances   []*instance
}

// reader collects, in one pass over the JSON, the field errors, the
// unsupported sections, the objects read (for unknown keys) and notes.
type reader struct {
	errs        []error
	unsupported []Section
	objs        []*object
	notes       *notes
}

func (r *reader) fail(err error) {
	if err != nil {
		r.errs = append(r.errs, err)
	}
}

func (r *reader) refuse(path, feature string) {
	r.unsupported = append(r.unsupported, Section{Path: path, Feature: feature})
}

// track remembers o for the unknown-key check and returns it.
func (r *reader) track(o *object) *object {
	if o != nil {
		r.objs = append(r.objs, o)
	}
	return o
}

// notes is an ordered set of messages.
type notes struct{ list []string }

func (n *notes) add(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if !slices.Contains(n.list, s) {
		n.list = append(n.list, s)
	}
}

// LLMServingSim converts an LLMServingSim cluster config (JSON) into a
// servesim scenario. A config using a feature servesim cannot simulate
// yields an [*UnsupportedError] naming every offending section; other
// problems (invalid JSON, unknown keys, inconsistent values, unknown
// hardware or model) yield an error naming the field.
func LLMServingSim(data []byte, opts Options) (*Result, error) {
	if opts.Name == "" {
		opts.Name = defaultName
	}
	root, err := decodeObject(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Name, err)
	}
	r := &reader{notes: &notes{}}
	cl := r.readCluster(root)
	if len(r.unsupported) > 0 {
		return nil, &UnsupportedError{Source: opts.Name, Sections: r.unsupported}
	}
	var unknown []string
	for _, o := range r.objs {
		unknown = append(unknown, o.unknown()...)
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%s: unknown LLMServingSim cluster-config keys: %s (see the cluster-config reference of LLMServingSim for the valid keys)",
			opts.Name, strings.Join(unknown, ", "))
	}
	if len(r.errs) > 0 {
		return nil, fmt.Errorf("%s: %w", opts.Name, errors.Join(r.errs...))
	}
	c := &converter{opts: opts, notes: r.notes}
	out, err := c.convert(cl)
	if err != nil {
		var ue *UnsupportedError
		if errors.As(err, &ue) {
			ue.Source = opts.Name
			return nil, ue
		}
		return nil, fmt.Errorf("%s: %w", opts.Name, err)
	}
	y, err := render(out, opts.Name, c.notes.list)
	if err != nil {
		return nil, fmt.Errorf("%s: render scenario: %w", opts.Name, err)
	}
	s, err := config.Parse(y, opts.Name+" (converted)")
	if err != nil {
		return nil, fmt.Errorf("%s: the converted scenario does not load: %w", opts.Name, err)
	}
	return &Result{YAML: y, Scenario: s, Notes: c.notes.list}, nil
}

// readCluster reads the top level.
func (r *reader) readCluster(root *object) *cluster {
	r.track(root)
	cl := &cluster{}
	n, ok, err := root.integer("num_nodes")
	r.fail(err)
	if !ok && err == nil {
		r.fail(errors.New("num_nodes: missing"))
	}
	cl.numNodes = n
	if cl.linkBW, _, err = root.nums("link_bw"); err != nil {
		r.fail(err)
	}
	if cl.linkLatency, _, err = root.nums("link_latency"); err != nil {
		r.fail(err)
	}
	for i, v := range cl.linkBW {
		if v <= 0 {
			r.fail(fmt.Errorf("link_bw: must be > 0 GiB/s (got %g at dimension %d)", v, i))
		}
	}
	for i, v := range cl.linkLatency {
		if v < 0 {
			r.fail(fmt.Errorf("link_latency: must be >= 0 ns (got %g at dimension %d)", v, i))
		}
	}
	if root.has("collective_links") {
		r.notes.add("collective_links (per-collective link parameters of LLMServingSim's network backend) is ignored: servesim times tensor-parallel collectives on the catalog's intra-node link")
	}
	if root.has("cxl_mem") {
		r.refuse("cxl_mem", "CXL memory expansion")
	}
	nodes, ok, err := root.list("nodes")
	r.fail(err)
	if !ok && err == nil {
		r.fail(errors.New("nodes: missing"))
	}
	if ok && n != len(nodes) {
		r.fail(fmt.Errorf("num_nodes: %d, but nodes lists %d", n, len(nodes)))
	}
	for _, node := range nodes {
		cl.instances = append(cl.instances, r.readNode(node)...)
	}
	return cl
}

// readNode reads nodes[i].
func (r *reader) readNode(node *object) []*instance {
	r.track(node)
	n, ok, err := node.integer("num_instances")
	r.fail(err)
	if cpu, ok, err := node.obj("cpu_mem"); err != nil {
		r.fail(err)
	} else if ok {
		r.track(cpu)
		for _, k := range []string{"mem_size", "mem_bw", "mem_latency"} {
			_, _, err := cpu.num(k)
			r.fail(err)
		}
		if cpu.has("pim_config") {
			r.refuse(cpu.at("pim_config"), "PIM, processing in memory")
		}
		r.notes.add("nodes[].cpu_mem (host memory) is not used: servesim has no CPU KV tier, and P/D push spills use the catalog's host bandwidth")
	}
	list, listed, lerr := node.list("instances")
	r.fail(lerr)
	if !listed && lerr == nil {
		r.fail(fmt.Errorf("%s: missing", node.at("instances")))
	}
	if ok && listed && n != len(list) {
		r.fail(fmt.Errorf("%s: %d, but %s lists %d", node.at("num_instances"), n, node.at("instances"), len(list)))
	}
	var out []*instance
	for _, o := range list {
		out = append(out, r.readInstance(o))
	}
	if node.has("power") {
		r.refuse(node.at("power"), "power model")
	}
	return out
}

// readInstance reads nodes[i].instances[j].
func (r *reader) readInstance(o *object) *instance {
	r.track(o)
	in := &instance{path: o.path}
	need := func(key string, ok bool, err error) {
		r.fail(err)
		if !ok && err == nil {
			r.fail(fmt.Errorf("%s: missing", o.at(key)))
		}
	}
	var ok bool
	var err error
	in.model, ok, err = o.str("model_name")
	need("model_name", ok, err)
	in.hardware, ok, err = o.str("hardware")
	need("hardware", ok, err)

	mem, ok, err := o.obj("npu_mem")
	need("npu_mem", ok, err)
	if mem != nil {
		r.track(mem)
		in.memGB, ok, err = mem.num("mem_size")
		need("npu_mem.mem_size", ok, err)
		if ok && in.memGB <= 0 {
			r.fail(fmt.Errorf("%s: must be > 0 GB (got %g)", mem.at("mem_size"), in.memGB))
		}
		in.memBW, _, err = mem.num("mem_bw")
		r.fail(err)
		in.memLatency, _, err = mem.num("mem_latency")
		r.fail(err)
		in.memUtil, ok, err = mem.num("mem_util")
		r.fail(err)
		if ok && (in.memUtil <= 0 || in.memUtil > 1) {
			r.fail(fmt.Errorf("%s: must be a fraction in (0, 1] (got %g)", mem.at("mem_util"), in.memUtil))
		}
	}
	r.readParallelism(o, in)

	role, ok, err := o.str("pd_type")
	r.fail(err)
	switch {
	case !ok || role == "":
		in.role = config.RoleMixed
	case role == "prefill" || role == "decode":
		in.role = config.Role(role)
	default:
		r.fail(fmt.Errorf("%s: must be \"prefill\", \"decode\" or null (got %q)", o.at("pd_type"), role))
	}

	optInt := func(key string, min int) *int {
		v, ok, err := o.integer(key)
		r.fail(err)
		if !ok {
			return nil
		}
		if v < min {
			r.fail(fmt.Errorf("%s: must be >= %d (got %d)", o.at(key), min, v))
			return nil
		}
		return &v
	}
	optBool := func(key string) *bool {
		v, ok, err := o.boolean(key)
		r.fail(err)
		if !ok {
			return nil
		}
		return &v
	}
	in.maxSeqs = optInt("max_num_seqs", 0)
	in.maxTokens = optInt("max_num_batched_tokens", 0)
	in.longPrefill = optInt("long_prefill_token_threshold", 0)
	in.blockSize = optInt("block_size", 1)
	in.chunked = optBool("enable_chunked_prefill")
	in.prefix = optBool("enable_prefix_caching")

	if d, ok, err := o.str("dtype"); err != nil {
		r.fail(err)
	} else if ok {
		in.dtypePath = o.at("dtype")
		if in.dtype, err = servesimDtype(d); err != nil {
			r.fail(fmt.Errorf("%s: %w", in.dtypePath, err))
		}
	}
	if kv, ok, err := o.str("kv_cache_dtype"); err != nil {
		r.fail(err)
	} else if ok && kv != "auto" {
		if d, derr := servesimDtype(kv); derr != nil || (in.dtype != "" && d != in.dtype) {
			r.refuse(o.at("kv_cache_dtype"), fmt.Sprintf("KV cache dtype %q different from the weights", kv))
		}
	}

	for _, f := range []struct{ key, feature string }{
		{"enable_attn_offloading", "PIM attention offloading"},
		{"enable_sub_batch_interleaving", "sub-batch interleaving with PIM"},
		{"enable_local_offloading", "local offloading of weights or KV"},
	} {
		if b := optBool(f.key); b != nil && *b {
			r.refuse(o.at(f.key), f.feature)
		}
	}
	if b := optBool("reserve_full_isl"); b != nil && *b {
		r.notes.add("%s: reserve_full_isl is ignored: servesim admits a request when its first chunk fits, as vLLM does", o.path)
	}
	o.has("enable_block_copy") // a trace-generation speed-up of LLMServingSim: no effect on results
	if o.has("cudagraph") {
		r.notes.add("%s: cudagraph (CUDA-graph padding contract) is ignored: servesim's step overhead covers the engine loop", o.path)
	}
	if pl, ok, err := o.obj("placement"); err != nil {
		r.fail(err)
	} else if ok {
		r.readPlacement(pl)
	}
	return in
}

// readParallelism reads num_npus, tp_size, pp_size, ep_size and dp_group.
func (r *reader) readParallelism(o *object, in *instance) {
	npus, hasNPUs, err := o.integer("num_npus")
	r.fail(err)
	tp, hasTP, err := o.integer("tp_size")
	r.fail(err)
	pp, hasPP, err := o.integer("pp_size")
	r.fail(err)
	ep, hasEP, err := o.integer("ep_size")
	r.fail(err)
	dp, _, err := o.str("dp_group")
	r.fail(err)
	in.dpGroup = dp
	if !hasPP {
		pp = 1
	}
	for _, f := range []struct {
		key string
		v   int
		set bool
	}{{"num_npus", npus, hasNPUs}, {"tp_size", tp, hasTP}, {"pp_size", pp, true}, {"ep_size", ep, hasEP}} {
		if f.set && f.v < 1 {
			r.fail(fmt.Errorf("%s: must be >= 1 (got %d)", o.at(f.key), f.v))
			return
		}
	}
	switch {
	case hasTP:
	case hasNPUs:
		if npus%pp != 0 {
			r.fail(fmt.Errorf("%s: %d GPUs cannot be split into pp_size %d stages", o.at("num_npus"), npus, pp))
			return
		}
		tp = npus / pp
	default:
		r.fail(fmt.Errorf("%s: set tp_size or num_npus", o.path))
		return
	}
	if hasNPUs && npus != tp*pp {
		r.fail(fmt.Errorf("%s: must equal tp_size x pp_size = %d x %d (got %d)", o.at("num_npus"), tp, pp, npus))
	}
	in.tp, in.pp = tp, pp
	if hasEP {
		in.ep = ep
	}
}

// readPlacement checks a placement section: weights and KV must stay on
// the accelerator, as servesim assumes.
func (r *reader) readPlacement(pl *object) {
	r.track(pl)
	var rules []*object
	if d, ok, err := pl.obj("default"); err != nil {
		r.fail(err)
	} else if ok {
		rules = append(rules, d)
	} else {
		r.fail(fmt.Errorf("%s: missing", pl.at("default")))
	}
	blocks, _, err := pl.list("blocks")
	r.fail(err)
	for _, b := range blocks {
		if _, _, err := b.str("blocks"); err != nil {
			r.fail(err)
		}
		rules = append(rules, b)
	}
	if layers, ok, err := pl.obj("layers"); err != nil {
		r.fail(err)
	} else if ok {
		r.track(layers)
		keys := make([]string, 0, len(layers.m))
		for k := range layers.m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			l, _, err := layers.obj(k)
			if err != nil {
				r.fail(err)
				continue
			}
			rules = append(rules, l)
		}
	}
	var cxl, cpu []string
	evictCPU := false
	for _, rule := range rules {
		r.track(rule)
		for _, key := range []string{"weights", "kv_loc", "kv_evict_loc"} {
			loc, ok, err := rule.str(key)
			if err != nil || !ok {
				r.fail(err)
				continue
			}
			switch {
			case loc == "npu":
			case strings.HasPrefix(loc, "cxl:"):
				cxl = appendNew(cxl, key+" on "+loc)
			case loc == "cpu" && key == "kv_evict_loc":
				evictCPU = true
			case loc == "cpu":
				cpu = appendNew(cpu, key+" on cpu")
			default:
				r.fail(fmt.Errorf("%s: must be npu, cpu or cxl:<id> (got %q)", rule.at(key), loc))
			}
		}
	}
	if len(cxl) > 0 {
		r.refuse(pl.path, "CXL memory: "+strings.Join(cxl, ", "))
	}
	if len(cpu) > 0 {
		r.refuse(pl.path, "placement in CPU memory: "+strings.Join(cpu, ", "))
	}
	if evictCPU {
		r.notes.add("%s: every weight and KV block is on the accelerator, as servesim assumes; kv_evict_loc cpu (a CPU tier for evicted KV) is not modelled: servesim recomputes evicted or preempted KV", pl.path)
	}
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// servesimDtype maps a weight dtype name to servesim's.
func servesimDtype(d string) (string, error) {
	switch strings.TrimPrefix(strings.ToLower(strings.TrimSpace(d)), "torch.") {
	case "bfloat16", "bf16":
		return "bf16", nil
	case "float16", "fp16", "half":
		return "fp16", nil
	}
	return "", fmt.Errorf("servesim simulates bfloat16 or float16 weights (got %q)", d)
}

// isMoE reports whether m routes to experts; unknown models are taken as
// dense.
func isMoE(m *model.Config) bool { return m != nil && m.NumExperts > 0 }

// accelerator resolves an LLMServingSim hardware label in the catalog.
func accelerator(in *instance) (hw.Accelerator, error) {
	acc, err := hw.Lookup(in.hardware)
	if err != nil {
		return hw.Accelerator{}, fmt.Errorf("%s.hardware: %w", in.path, err)
	}
	return acc, nil
}

// roundTo rounds v to the given number of decimals, so GiB conversions
// print compactly.
func roundTo(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}
