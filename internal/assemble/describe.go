package assemble

import (
	"fmt"
	"strings"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/quant"
)

// Description says what a built scenario simulates, so that every output
// can carry it: the model, each instance group's layout, hardware, KV
// capacity and engine limits, the latency predictor and its calibration,
// the workload and the seed.
type Description struct {
	Name      string             `json:"name"`
	Seed      uint64             `json:"seed"`
	Model     string             `json:"model"`
	Dtype     string             `json:"dtype"`
	Groups    []GroupDescription `json:"groups"`
	Predictor string             `json:"predictor"`
	Workload  string             `json:"workload"`
	Handoff   string             `json:"handoff,omitempty"`
	// FrontEnd describes the served endpoint's front end (omitted when
	// none is simulated: every latency is then engine-side).
	FrontEnd string `json:"front_end,omitempty"`
	// Warnings are approximations the user should know of, e.g. an
	// accelerator that borrows another's calibration.
	Warnings []string `json:"warnings,omitempty"`
	// Format describes quantised weights or an fp8 KV cache (empty when
	// both are in dtype).
	Format string `json:"format,omitempty"`
}

// GroupDescription is one instance group of a Description.
type GroupDescription struct {
	Name     string `json:"name"`
	Count    int    `json:"count"`
	Role     string `json:"role"`
	Hardware string `json:"hardware"`
	TP       int    `json:"tp"`
	PP       int    `json:"pp"`
	// DP and EP are the data- and expert-parallel degrees of each instance
	// (omitted when 1); KVBlocks is then per DP rank.
	DP                  int `json:"dp,omitempty"`
	EP                  int `json:"ep,omitempty"`
	KVBlocks            int `json:"kv_blocks_per_instance"`
	BlockSize           int `json:"block_size"`
	MaxNumSeqs          int `json:"max_num_seqs"`
	MaxNumBatchedTokens int `json:"max_num_batched_tokens"`
	// MaxNumSeqsFrom and MaxNumBatchedTokensFrom say where the two
	// limits come from: "scenario", or vLLM's default for the
	// accelerator and why.
	MaxNumSeqsFrom          string `json:"max_num_seqs_from"`
	MaxNumBatchedTokensFrom string `json:"max_num_batched_tokens_from"`
	// Latency is where the group's step times come from: a profile
	// bundle, or the roofline and its calibration.
	Latency string `json:"latency"`
	// Speculative describes speculative decoding (omitted when off).
	Speculative string `json:"speculative,omitempty"`
	// TPNodes is the number of nodes a tensor-parallel group larger than
	// a node spans (omitted when it fits in one).
	TPNodes int `json:"tp_nodes,omitempty"`
	// KVLayout describes a hybrid or MLA KV cache (omitted otherwise).
	KVLayout string `json:"kv_layout,omitempty"`
	// WideEP describes an expert-parallel group across nodes or with an
	// all-to-all backend, EPLB or DBO set (omitted otherwise).
	WideEP string `json:"wide_ep,omitempty"`
	// SchedulingPolicy is "priority" under vLLM's priority scheduling
	// (omitted under the default fcfs).
	SchedulingPolicy string `json:"scheduling_policy,omitempty"`
}

// Describe returns what b simulates.
func (b *Built) Describe() Description {
	s := &b.scenario
	d := Description{Name: s.Name, Seed: s.Seed, Model: s.Model, Dtype: s.Dtype, Predictor: string(s.Predictor.Kind), Workload: describeWorkload(&s.Workload)}
	if qf, err := s.Format(); err == nil && !qf.Off() {
		d.Format = qf.String()
		if b.formatScaled {
			d.Warnings = append(d.Warnings, fmt.Sprintf("profile: the %s tables are scaled to %s by the roofline's step-time ratio (predictor.format_scaling: %s; approximate, see docs/quantization.md)", s.Dtype, qf.Variant(), s.Predictor.FormatScaling))
		}
		seen := map[string]bool{}
		for _, in := range b.instances {
			acc, err := b.hw.Lookup(in.Hardware)
			if err != nil || seen[acc.Name] {
				continue
			}
			seen[acc.Name] = true
			if _, note, _ := qf.GEMM(acc.Name, acc.PeakFLOPSFP8 > 0, acc.PeakFLOPSFP4 > 0); note != "" {
				d.Warnings = append(d.Warnings, note)
			}
			if note := fp8KVBackendNote(qf, acc); note != "" {
				d.Warnings = append(d.Warnings, note)
			}
		}
	}
	if b.moeTPScaled {
		d.Warnings = append(d.Warnings, "profile: the bundle has no moe.csv at the instance's tp: tensor-parallel MoE is the tp1 table divided by tp (approximate, see docs/moe.md)")
	}
	if fe := s.FrontEnd; fe != nil {
		d.FrontEnd = fe.Describe()
	}
	if b.pd != nil {
		d.Handoff = fmt.Sprintf("policy %s, placement %s", s.Handoff.Policy, s.Handoff.Placement)
	}
	warned := map[string]bool{}
	for i := 0; i < len(b.instances); {
		in := b.instances[i]
		n := 1
		for i+n < len(b.instances) && b.instances[i+n].Group == in.Group {
			n++
		}
		count := n
		if in.DP > 1 {
			count = n / in.DP
		}
		g := GroupDescription{Name: in.Group, Count: count, Role: string(in.Role), Hardware: in.Hardware, TP: in.TP, PP: in.PP,
			KVBlocks: in.NumBlocks, BlockSize: in.BlockSize, MaxNumSeqs: in.Engine.MaxNumSeqs,
			MaxNumBatchedTokens: in.Engine.MaxNumBatchedTokens, MaxNumSeqsFrom: in.BatchOrigin.Seqs,
			MaxNumBatchedTokensFrom: in.BatchOrigin.Tokens, Speculative: in.Speculative, TPNodes: in.TPNodes, KVLayout: in.KVLayout, WideEP: in.WideEP}
		if in.DP > 1 || in.EP > 1 {
			g.DP, g.EP = in.DP, in.EP
		}
		if in.Engine.PriorityScheduling {
			g.SchedulingPolicy = "priority"
		}
		g.Latency, warned = b.latencySource(in, warned, &d.Warnings)
		if w := b.spanWarning(in); w != "" {
			d.Warnings = append(d.Warnings, w)
		}
		if w := maxLenWarning(in); w != "" {
			d.Warnings = append(d.Warnings, w)
		}
		d.Groups = append(d.Groups, g)
		i += n
	}
	return d
}

// maxLenWarning is the warning of an instance whose predicted KV cache
// holds fewer tokens than its max_model_len: vLLM 0.19 refuses to start
// such an engine (KV cache memory check at start-up), servesim runs it
// and rejects only the requests that cannot fit. Hybrid layouts, whose
// tokens per block differ by group, and pinned capacities are not
// checked.
func maxLenWarning(in Instance) string {
	if in.KVLayout != "" || in.PredictedBlocks != in.NumBlocks || in.Engine.MaxModelLen <= 0 {
		return ""
	}
	tokens := in.NumBlocks * in.BlockSize
	if tokens >= in.Engine.MaxModelLen {
		return ""
	}
	return fmt.Sprintf("group %s: max_model_len %d exceeds the KV cache's %d tokens, so vLLM would refuse to start; set engine.max_model_len to at most %d, or give the instance more memory or a larger tp (servesim runs it and rejects requests that cannot fit)",
		in.Group, in.Engine.MaxModelLen, tokens, tokens)
}

// spanWarning is the warning of an instance whose tensor-parallel group
// spans nodes of an accelerator whose catalog NIC is the PCIe path inside
// one host: the all-reduces crossing nodes are priced on that path, which
// no network between two hosts matches, unless links.tp_* set the rate.
func (b *Built) spanWarning(in Instance) string {
	l := b.scenario.Links
	if in.TPNodes < 2 || l.TPBandwidthGBps > 0 || l.TPLatencyUs >= 0 {
		return ""
	}
	acc, err := b.hw.Lookup(in.Hardware)
	if err != nil || !acc.NIC.HostPath {
		return ""
	}
	return fmt.Sprintf("instance group %s: tp %d spans %d nodes of %s, whose catalog NIC is the PCIe path between GPUs of one host (no network card per GPU): the all-reduces that cross nodes are priced on it, faster than a network between hosts would be; set links.tp_bandwidth_gbps and links.tp_latency_us to your network's figures (docs/engine-time.md)",
		in.Group, in.TP, in.TPNodes, acc.Name)
}

// latencySource names where an instance's step times come from, and adds
// a warning (once per accelerator) when it borrows a calibration.
func (b *Built) latencySource(in Instance, warned map[string]bool, warnings *[]string) (string, map[string]bool) {
	s := &b.scenario
	if s.Predictor.Kind == config.PredictorPerfDB {
		src := b.perfdb[in.Hardware]
		acc, err := b.hw.Lookup(in.Hardware)
		if err != nil {
			return src, warned
		}
		_, desc, err := calibrationFor(s, b.src, acc)
		if err != nil {
			return src, warned
		}
		if strings.Contains(desc, "not calibrated") && !warned[acc.Name] {
			warned[acc.Name] = true
			*warnings = append(*warnings, "perfdb fallback roofline: "+desc)
		}
		return src + "; outside the tables: roofline, " + desc, warned
	}
	if s.Predictor.Kind != config.PredictorRoofline {
		variant := s.Dtype
		if qf, err := s.Format(); err == nil && !qf.Off() {
			variant = qf.Variant()
			if b.formatScaled {
				variant = s.Dtype + " scaled to " + variant
			}
		}
		return fmt.Sprintf("profile %s/%s/%s/tp%d", in.Hardware, s.Model, variant, in.TP), warned
	}
	acc, err := b.hw.Lookup(in.Hardware)
	if err != nil {
		return "roofline", warned
	}
	_, desc, err := calibrationFor(s, b.src, acc)
	if err != nil {
		return "roofline", warned
	}
	if !strings.Contains(desc, "not calibrated") {
		return "roofline, " + desc, warned
	}
	if !warned[acc.Name] {
		warned[acc.Name] = true
		*warnings = append(*warnings, "roofline: "+desc)
	}
	return "roofline, borrowed calibration of " + borrowedFrom(desc) + " (see the warning)", warned
}

// describeWorkload summarises the workload section in one line.
func describeWorkload(w *config.Workload) string {
	var parts []string
	switch {
	case w.Synthetic != nil:
		syn := w.Synthetic
		parts = append(parts, fmt.Sprintf("synthetic: %d requests, %s arrivals%s, input %s, output %s",
			syn.Requests, syn.Arrival.Kind, rate(syn.Arrival.Rate), dist(syn.Input.Kind, syn.Input.Mean), dist(syn.Output.Kind, syn.Output.Mean)))
	case w.Chat != nil:
		c := w.Chat
		// The arrival rate is of conversations, each several requests.
		starts := ""
		if c.Arrival.Rate != 0 {
			starts = fmt.Sprintf(" at %g conversations/s", c.Arrival.Rate)
		}
		parts = append(parts, fmt.Sprintf("chat: %d conversations, %s starts%s, %s turns", c.Conversations, c.Arrival.Kind, starts, c.Turns.Kind))
	case w.SharedPrefix != nil:
		sp := w.SharedPrefix
		parts = append(parts, fmt.Sprintf("shared prefix: %d requests over %d contexts, %s arrivals%s", sp.Requests, sp.Prefixes, sp.Arrival.Kind, rate(sp.Arrival.Rate)))
	default:
		parts = append(parts, "trace "+w.Trace)
		if w.Format != config.TraceJSONL {
			parts = append(parts, "format "+string(w.Format))
		}
	}
	if w.Limit > 0 {
		parts = append(parts, fmt.Sprintf("first %d", w.Limit))
	}
	if w.TimeScale != 1 {
		parts = append(parts, fmt.Sprintf("time scale %g", w.TimeScale))
	}
	if w.MaxConcurrency > 0 {
		parts = append(parts, fmt.Sprintf("max concurrency %d", w.MaxConcurrency))
	}
	if w.IgnoreArrivalTimes {
		parts = append(parts, "arrival times ignored (all due at 0)")
	}
	if w.WarmupRequests > 0 {
		parts = append(parts, fmt.Sprintf("%d warm-up requests", w.WarmupRequests))
	}
	if len(w.Priorities) > 0 {
		var mix []string
		for _, c := range w.Priorities {
			mix = append(mix, fmt.Sprintf("%d (weight %g)", c.Priority, c.Weight))
		}
		parts = append(parts, "priorities "+strings.Join(mix, ", "))
	}
	return strings.Join(parts, ", ")
}

func rate(r float64) string {
	if r == 0 {
		return ""
	}
	return fmt.Sprintf(" at %g req/s", r)
}

func dist(kind any, mean float64) string {
	if mean == 0 {
		return fmt.Sprint(kind)
	}
	return fmt.Sprintf("%v mean %g", kind, mean)
}

// Lines renders the description as short "key: value" lines for the top
// of a text output.
func (d Description) Lines() []string {
	lines := []string{
		fmt.Sprintf("Scenario: %s (seed %d)", d.Name, d.Seed),
		fmt.Sprintf("Model: %s (%s)", d.Model, d.Dtype),
	}
	if d.Format != "" {
		lines = append(lines, "Format: "+d.Format)
	}
	for _, g := range d.Groups {
		shape := fmt.Sprintf("tp %d", g.TP)
		if g.PP > 1 {
			shape += fmt.Sprintf(" pp %d", g.PP)
		}
		per := ""
		if g.DP > 0 {
			shape += fmt.Sprintf(" dp %d ep %d", g.DP, g.EP)
			per = " per rank"
		}
		lines = append(lines,
			fmt.Sprintf("Instances %s: %d x %s on %s %s, %d KV blocks x %d tokens%s",
				g.Name, g.Count, g.Role, g.Hardware, shape, g.KVBlocks, g.BlockSize, per),
			"  "+batchLine(g),
			"  step latency: "+g.Latency)
		if g.KVLayout != "" {
			lines = append(lines, "  KV cache: "+g.KVLayout)
		}
		if g.TPNodes > 1 {
			lines = append(lines, fmt.Sprintf("  tp %d spans %d nodes: all-reduces over the NICs (docs/engine-time.md)", g.TP, g.TPNodes))
		}
		if g.WideEP != "" {
			lines = append(lines, "  expert parallel: "+g.WideEP)
		}
		if g.Speculative != "" {
			lines = append(lines, "  speculative decoding: "+g.Speculative)
		}
		if g.SchedulingPolicy != "" {
			lines = append(lines, "  scheduling policy: "+g.SchedulingPolicy+" (waiting requests by priority, then arrival)")
		}
	}
	if d.Handoff != "" {
		lines = append(lines, "Handoff: "+d.Handoff)
	}
	lines = append(lines, "Workload: "+d.Workload)
	if d.FrontEnd != "" {
		lines = append(lines, "Front end: "+strings.TrimPrefix(d.FrontEnd, "front end: "))
	}
	for _, w := range d.Warnings {
		lines = append(lines, "Warning: "+w)
	}
	return lines
}

// batchLine renders a group's batch limits with where each comes from,
// folding the two origins into one when they agree.
func batchLine(g GroupDescription) string {
	if g.MaxNumSeqsFrom == g.MaxNumBatchedTokensFrom {
		return fmt.Sprintf("max_num_seqs %d, max_num_batched_tokens %d (%s)", g.MaxNumSeqs, g.MaxNumBatchedTokens, from(g.MaxNumSeqsFrom))
	}
	return fmt.Sprintf("max_num_seqs %d (%s), max_num_batched_tokens %d (%s)",
		g.MaxNumSeqs, from(g.MaxNumSeqsFrom), g.MaxNumBatchedTokens, from(g.MaxNumBatchedTokensFrom))
}

func from(origin string) string {
	if origin == FromScenario || origin == "" {
		return "set by the scenario"
	}
	return origin
}

// fp8KVBackendNote warns about an fp8 KV cache on a GPU whose vLLM
// attention backend cannot store it: vLLM's FlashAttention backend
// accepts an fp8 KV cache only with FlashAttention 3 (compute capability
// 9.x, flash_attn_supports_fp8), and compute capability 10.x runs
// FlashInfer, which has one; elsewhere vLLM switches to another backend,
// whose kernels servesim does not model ("" when none applies or the
// compute capability is unknown).
func fp8KVBackendNote(qf quant.Format, acc hw.Accelerator) string {
	cc := acc.ComputeCapability
	if qf.KV == quant.KVAuto || cc == 0 || (cc >= 9 && cc < 11) {
		return ""
	}
	return fmt.Sprintf("kv_cache_dtype %s on %s (compute capability %.1f): vLLM's FlashAttention backend stores an fp8 KV cache only with FlashAttention 3 (compute capability 9.x), so vLLM runs another attention backend here, whose kernels servesim does not model: attention is priced as FlashAttention reading one byte per KV element (docs/quantization.md, Limits)", qf.KV, acc.Name, cc)
}
