package randgen

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/servesim/servesim/internal/config"
	"pgregory.net/rapid"
)

// Case is one drawn scenario: the scenario file's text and the trace it
// serves. The scenario names its trace as TraceFile, relative to itself.
type Case struct {
	// Scenario is the scenario YAML.
	Scenario string
	// Trace is the JSONL workload.
	Trace string
	// TraceFile is the file name the scenario's workload.trace refers to.
	TraceFile string
	// Requests is the number of requests in Trace, session sub-requests
	// included: the number of terminal outcomes a run must report.
	Requests int
	// Policy is the drawn handoff policy (eager may stop a run by design).
	Policy string
}

// Kinds of predictor set-up a draw chooses from. Profile bundles exist only
// for these (hardware, model, tp) triples in the embedded assets.
var (
	profileModels  = []string{"meta-llama/Llama-3.1-8B", "Qwen/Qwen3-32B", "Qwen/Qwen3-30B-A3B-Instruct-2507"}
	rooflineModels = []string{"meta-llama/Llama-3.1-8B", "Qwen/Qwen3-32B", "mistralai/Mixtral-8x7B-v0.1", "meta-llama/Llama-3.1-70B", "Qwen/Qwen3-30B-A3B-Instruct-2507", "google/gemma-3-1b-it"}
	// hybridModels mix full attention with sliding windows (vLLM's hybrid
	// KV cache manager applies).
	hybridModels = map[string]bool{"google/gemma-3-1b-it": true}
	rooflineHW   = []string{"H100", "A100", "RTXPRO6000", "L40S", "B200"}
	// moeModels are the mixture-of-experts models above (dp and ep apply).
	moeModels  = map[string]bool{"mistralai/Mixtral-8x7B-v0.1": true, "Qwen/Qwen3-30B-A3B-Instruct-2507": true}
	policies   = []string{"pull", "reserve", "reject", "push", "eager"}
	placements = []string{"round-robin", "least-loaded", "most-free-kv", "retry"}
	routers    = config.Routers
)

// yamlWriter renders a small YAML document with explicit indentation.
type yamlWriter struct{ b strings.Builder }

func (w *yamlWriter) kv(indent int, key string, v any) {
	fmt.Fprintf(&w.b, "%s%s: %s\n", strings.Repeat("  ", indent), key, scalar(v))
}

func (w *yamlWriter) open(indent int, key string) {
	fmt.Fprintf(&w.b, "%s%s:\n", strings.Repeat("  ", indent), key)
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	}
	panic(fmt.Sprintf("randgen: no YAML scalar for %T", v))
}

// group is one drawn instance group.
type group struct {
	role   string
	count  int
	tp, pp int
	blocks int     // num_gpu_blocks override (0: inherit)
	seqs   int     // max_num_seqs override (0: inherit)
	memGB  float64 // memory_gb override (0: the accelerator's)
	dp, ep int     // data and expert parallelism (0: unset)
	ngram  bool    // decode-only n-gram speculation (engine override)
	wide   wideEP  // all-to-all backend, EPLB, DBO, nodes (ep > 1)
}

// wideEP is a group's drawn wide expert-parallel settings.
type wideEP struct {
	backend             string
	eplb                bool
	redundant, interval int
	dbo                 bool
	nodeGPUs            int // node_gpus (0: the catalog's)
}

// Draw draws a random valid-looking P/D scenario and its trace. Validity is
// decided by the config validator, not here: the draws stay within ranges
// the validator is meant to accept (for example max_model_len is capped by
// max_num_batched_tokens when chunked prefill is off, as vLLM requires), so
// rejections should be rare; callers count them.
func Draw(t *rapid.T) Case {
	var w yamlWriter
	w.kv(0, "name", "randpd")
	w.kv(0, "seed", rapid.IntRange(1, 1000).Draw(t, "seed"))

	// Predictor, model and hardware.
	roofline := rapid.Bool().Draw(t, "roofline")
	var model, hardware string
	var tps, pps []int
	if roofline {
		model = rapid.SampledFrom(rooflineModels).Draw(t, "model")
		hardware = rapid.SampledFrom(rooflineHW).Draw(t, "hardware")
		tps, pps = []int{1, 2, 4, 8}, []int{1, 2, 4}
		if hybridModels[model] {
			tps = tps[:3] // Gemma 3 1B has 4 attention heads
		}
	} else {
		model = rapid.SampledFrom(profileModels).Draw(t, "model")
		hardware = "RTXPRO6000"
		tps, pps = []int{1, 2}, []int{1, 2}
	}
	w.kv(0, "model", model)
	w.kv(0, "hardware", hardware)
	w.open(0, "predictor")
	if roofline {
		w.kv(1, "kind", "roofline")
	} else {
		w.kv(1, "kind", "profile")
	}
	w.kv(1, "step_overhead_us", float64(rapid.SampledFrom([]int{0, 50, 600, 2000}).Draw(t, "overheadUs")))
	// Quantised weights and KV cache; a profile times them through the
	// roofline's ratio (it refuses them otherwise).
	quant := rapid.SampledFrom([]string{"", "", "", "fp8", "awq", "gptq", "modelopt_fp4"}).Draw(t, "quantization")
	if quant == "modelopt_fp4" && hardware != "RTXPRO6000" && hardware != "B200" {
		quant = "fp8" // NVFP4 needs Blackwell tensor cores
	}
	kvDtype := rapid.SampledFrom([]string{"", "", "fp8", "fp8_e5m2"}).Draw(t, "kvCacheDtype")
	if !roofline && (quant != "" || kvDtype != "") {
		w.kv(1, "format_scaling", "roofline-ratio")
	}
	if quant != "" {
		w.kv(0, "quantization", quant)
	}
	if kvDtype != "" {
		w.kv(0, "kv_cache_dtype", kvDtype)
	}
	isMoE := moeModels[model]
	if isMoE && rapid.Bool().Draw(t, "moeRouting") {
		w.open(0, "moe")
		w.kv(1, "routing", "zipf")
		w.kv(1, "skew", rapid.SampledFrom([]float64{0.5, 1.2, 3}).Draw(t, "moeSkew"))
	}
	// Speculative decoding for every group (method and draft must match
	// across the handoff), or n-gram lookup on the decode groups only.
	// Speculation excludes pipeline, data and expert parallelism.
	spec := rapid.SampledFrom([]string{"", "", "", "all", "decode-ngram"}).Draw(t, "speculative")
	if spec != "" {
		pps = []int{1}
	}

	// Engine settings shared by every group.
	budget := rapid.SampledFrom([]int{16, 64, 256, 512, 2048, 8192}).Draw(t, "budget")
	seqs := rapid.IntRange(1, 32).Draw(t, "seqs")
	if seqs > budget {
		seqs = budget
	}
	chunked := rapid.IntRange(0, 3).Draw(t, "chunked") != 0
	blockSize := rapid.SampledFrom([]int{16, 16, 8, 32}).Draw(t, "blockSize")
	w.open(0, "engine")
	w.kv(1, "max_num_seqs", seqs)
	w.kv(1, "max_num_batched_tokens", budget)
	if spec == "all" {
		method := rapid.SampledFrom([]string{"eagle", "mtp", "ngram", "draft_model"}).Draw(t, "specMethod")
		if method == "draft_model" && model != "meta-llama/Llama-3.1-70B" {
			method = "eagle" // the only catalog pair with one vocabulary
		}
		writeSpec(t, &w, 1, method, "spec")
	}
	w.kv(1, "block_size", blockSize)
	w.kv(1, "enable_chunked_prefill", chunked)
	prefixCaching := rapid.IntRange(0, 3).Draw(t, "prefixCaching") != 0
	w.kv(1, "enable_prefix_caching", prefixCaching)
	w.kv(1, "async_scheduling", rapid.Bool().Draw(t, "async"))
	if hybridModels[model] {
		// vLLM's default (off with a KV connector), or either forced.
		if hma := rapid.IntRange(0, 2).Draw(t, "hybridManager"); hma > 0 {
			w.kv(1, "disable_hybrid_kv_cache_manager", hma == 2)
		}
	}
	if lt := rapid.SampledFrom([]int{0, 0, 0, 64, 512}).Draw(t, "longPrefill"); lt > 0 {
		w.kv(1, "long_prefill_token_threshold", lt)
	}
	maxLen := 0
	if !chunked {
		// vLLM refuses max_num_batched_tokens < max_model_len without
		// chunked prefill: a prompt must fit one step.
		maxLen = budget
	} else if rapid.IntRange(0, 4).Draw(t, "setMaxLen") == 0 {
		maxLen = rapid.SampledFrom([]int{512, 2048, 4096}).Draw(t, "maxModelLen")
	}
	if maxLen > 0 {
		w.kv(1, "max_model_len", maxLen)
	}
	// Most draws give the KV capacity in blocks (small pools reach the
	// memory-pressure paths fast); some size it from device memory.
	memorySized := rapid.IntRange(0, 7).Draw(t, "memorySized") == 0
	if !memorySized {
		w.kv(1, "num_gpu_blocks", rapid.IntRange(8, 800).Draw(t, "blocks"))
	}

	// Instance groups: prefill groups, optional mixed group, decode groups
	// with their own capacity, batch size and tp (a heterogeneous pool).
	var groups []group
	drawGroup := func(role string, i int) group {
		label := fmt.Sprintf("%s%d", role, i)
		g := group{role: role, count: rapid.IntRange(1, 2).Draw(t, label+"Count"),
			tp: rapid.SampledFrom(tps).Draw(t, label+"TP"), pp: rapid.SampledFrom(pps).Draw(t, label+"PP")}
		switch rapid.IntRange(0, 5).Draw(t, label+"BlocksKind") {
		case 0: // inherit
		case 1: // tiny
			g.blocks = rapid.IntRange(1, 24).Draw(t, label+"TinyBlocks")
		case 2: // large
			g.blocks = rapid.IntRange(2000, 20000).Draw(t, label+"LargeBlocks")
		default:
			g.blocks = rapid.IntRange(8, 2000).Draw(t, label+"Blocks")
		}
		if rapid.Bool().Draw(t, label+"SeqsOverride") {
			g.seqs = rapid.IntRange(1, 64).Draw(t, label+"Seqs")
			if g.seqs > budget {
				g.seqs = budget
			}
		}
		if memorySized {
			g.memGB = float64(rapid.SampledFrom([]int{0, 0, 24, 48}).Draw(t, label+"MemGB"))
		}
		// MoE: a group of any role may shard experts over its tp ranks
		// and have data-parallel attention ranks (dp x tp GPUs, pp 1),
		// with an all-to-all backend, EPLB, DBO and, on hardware with a
		// network card, nodes smaller than the group.
		// (A profile scaled to a quantised format has no per-rank MoE
		// table, which dp/ep need.)
		if isMoE && spec == "" && (roofline || quant == "") && rapid.Bool().Draw(t, label+"EP") {
			g.dp = rapid.SampledFrom([]int{1, 2, 4}).Draw(t, label+"DPRanks")
			g.pp = 1
			if g.dp*g.tp > 8 {
				g.tp = 8 / g.dp
			}
			g.ep = g.dp * g.tp
			if g.ep > 1 {
				g.wide = drawWideEP(t, label, g.dp, g.tp, g.ep, hardware != "RTXPRO6000")
			}
		}
		g.ngram = spec == "decode-ngram" && role == "decode"
		return g
	}
	// One draw in five is colocated: one or two mixed groups, no
	// handoff (where MoE dp/ep, tiers, speculation, closed loop and
	// limits meet without P/D).
	colocated := rapid.IntRange(0, 4).Draw(t, "colocated") == 0
	if colocated {
		for i := range rapid.IntRange(1, 2).Draw(t, "mixedGroups") {
			groups = append(groups, drawGroup("mixed", i))
		}
	} else {
		nPrefill := rapid.IntRange(0, 2).Draw(t, "prefillGroups")
		mixed := rapid.IntRange(0, 3).Draw(t, "mixedGroup") == 0
		if nPrefill == 0 && !mixed {
			nPrefill = 1
		}
		for i := 0; i < nPrefill; i++ {
			groups = append(groups, drawGroup("prefill", i))
		}
		if mixed {
			groups = append(groups, drawGroup("mixed", 0))
		}
		nDecode := rapid.IntRange(1, 3).Draw(t, "decodeGroups")
		for i := 0; i < nDecode; i++ {
			groups = append(groups, drawGroup("decode", i))
		}
	}
	w.open(0, "instances")
	for i, g := range groups {
		fmt.Fprintf(&w.b, "  - name: %q\n", fmt.Sprintf("%s%d", g.role, i))
		w.kv(2, "role", g.role)
		w.kv(2, "count", g.count)
		w.kv(2, "tp", g.tp)
		w.kv(2, "pp", g.pp)
		if g.memGB > 0 {
			w.kv(2, "memory_gb", g.memGB)
		}
		if g.dp > 1 {
			w.kv(2, "dp", g.dp)
			w.kv(2, "dp_balance", rapid.SampledFrom([]string{"vllm", "router"}).Draw(t, "dpBalance"))
		}
		if g.ep > 1 {
			w.kv(2, "ep", g.ep)
			writeWideEP(&w, g.wide)
		}
		if g.blocks > 0 || g.seqs > 0 || g.ngram {
			w.open(2, "engine")
			if g.blocks > 0 {
				w.kv(3, "num_gpu_blocks", g.blocks)
			}
			if g.seqs > 0 {
				w.kv(3, "max_num_seqs", g.seqs)
			}
			if g.ngram {
				writeSpec(t, &w, 3, "ngram", fmt.Sprintf("spec%d", i))
			}
		}
	}
	w.kv(0, "router", string(rapid.SampledFrom(routers).Draw(t, "router")))

	policy := "colocated"
	if !colocated {
		policy = drawHandoff(t, &w)
	}
	// KV tiers below the GPU (they need prefix caching), small enough to
	// evict, sometimes with a slow disk; under pull, sometimes offloading
	// pinned handoff KV to host.
	tiers := prefixCaching && rapid.IntRange(0, 2).Draw(t, "kvTiers") == 0
	if tiers && policy == "pull" {
		if after := rapid.SampledFrom([]float64{0, 0.01, 0.5}).Draw(t, "offloadAfterS"); after > 0 {
			w.kv(1, "offload_pinned_after_s", after)
		}
	}
	drawTail(t, &w, tiers, blockSize)
	prio := drawPriorities(t, &w)
	trace, n := drawTrace(t, prio)
	// Run limits, drawn last: one case in four stops at an event count
	// or a simulated time, cutting requests off wherever they are.
	switch rapid.IntRange(0, 7).Draw(t, "limit") {
	case 0:
		w.open(0, "limits")
		w.kv(1, "max_events", rapid.SampledFrom([]int{1, 10, 200, 5000}).Draw(t, "maxEvents"))
	case 1:
		w.open(0, "limits")
		w.kv(1, "max_sim_time_s", rapid.SampledFrom([]float64{0.001, 0.5, 5}).Draw(t, "maxSimTimeS"))
	}
	return Case{Scenario: w.b.String(), Trace: trace, TraceFile: traceFile, Requests: n, Policy: policy}
}

// drawHandoff writes the handoff block of a P/D draw and returns its
// policy.
func drawHandoff(t *rapid.T, w *yamlWriter) string {
	policy := rapid.SampledFrom(policies).Draw(t, "policy")
	w.open(0, "handoff")
	w.kv(1, "policy", policy)
	w.kv(1, "placement", rapid.SampledFrom(placements).Draw(t, "placement"))
	w.kv(1, "skip_ahead", rapid.Bool().Draw(t, "skipAhead"))
	w.kv(1, "lease_s", rapid.SampledFrom([]float64{30, 5, 0.5, 0.1, 0.02, 0.005}).Draw(t, "leaseS"))
	w.kv(1, "heartbeat", rapid.Bool().Draw(t, "heartbeat"))
	w.kv(1, "on_expiry", rapid.SampledFrom([]string{"reprefill", "fail"}).Draw(t, "onExpiry"))
	w.kv(1, "retry_after_s", rapid.SampledFrom([]float64{1, 0.1, 0.01}).Draw(t, "retryAfterS"))
	w.kv(1, "reserved_decode_tokens", rapid.SampledFrom([]int{0, 0, 16, 200, 2000}).Draw(t, "headroom"))
	w.kv(1, "max_prefill_queue_s", rapid.SampledFrom([]float64{5, 0, 0.05}).Draw(t, "maxPrefillQueueS"))
	w.kv(1, "max_decode_kv_fraction", rapid.SampledFrom([]float64{1, 0, 0.5, 2}).Draw(t, "maxDecodeKVFraction"))
	w.kv(1, "push_buffer_fraction", rapid.SampledFrom([]float64{0.1, 0, 0.02, 0.5}).Draw(t, "pushBufferFraction"))
	w.kv(1, "push_overflow", rapid.SampledFrom([]string{"spill", "drop"}).Draw(t, "pushOverflow"))
	w.kv(1, "local_prefill_below", rapid.SampledFrom([]int{0, 0, 64, 500}).Draw(t, "localPrefillBelow"))
	w.kv(1, "max_reprefills", rapid.SampledFrom([]int{3, 0, 1, 10}).Draw(t, "maxReprefills"))
	return policy
}

// traceFile is the name a draw's scenario gives its trace.
const traceFile = "trace.jsonl"

// drawTail writes the KV tiers, links, workload, swap, offload cap, front
// end and invariant checks of a draw.
func drawTail(t *rapid.T, w *yamlWriter, tiers bool, blockSize int) {
	if tiers {
		w.open(0, "kv_tiers")
		w.kv(1, "chunk_tokens", blockSize*rapid.SampledFrom([]int{1, 4, 16}).Draw(t, "chunkBlocks"))
		w.kv(1, "save_decode_cache", rapid.Bool().Draw(t, "saveDecode"))
		w.kv(1, "load_policy", rapid.SampledFrom([]string{"always", "cost_based"}).Draw(t, "loadPolicy"))
		w.open(1, "host")
		w.kv(2, "capacity_gb", rapid.SampledFrom([]float64{2, 20, 200}).Draw(t, "hostGB"))
		if rapid.Bool().Draw(t, "disk") {
			w.open(1, "disk")
			w.kv(2, "capacity_gb", rapid.SampledFrom([]float64{4, 1000}).Draw(t, "diskGB"))
			w.kv(2, "read_gbps", rapid.SampledFrom([]float64{0.5, 6.8}).Draw(t, "diskReadGBps"))
			w.kv(2, "latency_us", rapid.SampledFrom([]float64{100, 2000}).Draw(t, "diskLatencyUs"))
		}
	}

	w.open(0, "links")
	if rapid.IntRange(0, 9).Draw(t, "zeroCost") == 0 {
		w.kv(1, "zero_cost", true)
	} else {
		w.kv(1, "bandwidth_gbps", rapid.SampledFrom([]float64{0, 50, 5, 0.5}).Draw(t, "bandwidthGBps"))
		w.kv(1, "latency_us", rapid.SampledFrom([]float64{-1, 0, 2, 100}).Draw(t, "latencyUs"))
	}

	w.open(0, "workload")
	w.kv(1, "trace", traceFile)
	if c := rapid.SampledFrom([]int{0, 0, 0, 1, 4}).Draw(t, "maxConcurrency"); c > 0 {
		w.kv(1, "max_concurrency", c)
	}
	// Swap preemption (vLLM v0's legacy mode) needs the tiers' links;
	// small swap spaces reach the recompute fallback. Drawn last so that
	// the draws above keep their meaning; written into the engine block.
	if tiers && rapid.Bool().Draw(t, "swap") {
		gib := rapid.SampledFrom([]float64{0.001, 0.05, 4}).Draw(t, "swapSpaceGiB")
		sc := strings.Replace(w.b.String(), "\nengine:\n", fmt.Sprintf("\nengine:\n  preemption_mode: swap\n  swap_space: %g\n", gib), 1)
		w.b.Reset()
		w.b.WriteString(sc)
	}
	// A bound on offloaded handoff KV per node, small enough to bind.
	if sc := w.b.String(); strings.Contains(sc, "\n  offload_pinned_after_s: ") && rapid.Bool().Draw(t, "offloadCap") {
		gb := rapid.SampledFrom([]float64{0.001, 0.05, 1}).Draw(t, "offloadMaxGB")
		i := strings.Index(sc, "\n  offload_pinned_after_s: ") + 1
		i += strings.IndexByte(sc[i:], '\n') + 1
		sc = sc[:i] + fmt.Sprintf("  offload_pinned_max_gb: %g\n", gb) + sc[i:]
		w.b.Reset()
		w.b.WriteString(sc)
	}
	// A served endpoint's front end (client-side times), drawn after the
	// rest so that the draws above keep their meaning.
	switch rapid.IntRange(0, 7).Draw(t, "frontEnd") {
	case 0:
		w.b.WriteString("frontend: {}\n")
	case 1:
		w.b.WriteString("frontend: {api_server_count: 2, stream_interval: 3, jitter_us: 0}\n")
	case 2:
		w.b.WriteString("frontend: {tokenize_batch_max: 2, tokenize_batch_wait_us: 5000}\n")
	}
	w.kv(0, "check_invariants", true)
}

// drawPriorities draws where request priorities come from and writes the
// scenario side: vLLM's priority scheduling policy with priorities in the
// trace, the policy with a workload.priorities mix, trace priorities under
// fcfs, or none. It reports whether the trace lines carry priorities.
func drawPriorities(t *rapid.T, w *yamlWriter) bool {
	mode := rapid.IntRange(0, 4).Draw(t, "priorityMode")
	sc := w.b.String()
	if mode <= 1 {
		sc = strings.Replace(sc, "\nengine:\n", "\nengine:\n  scheduling_policy: priority\n", 1)
	}
	if mode == 1 {
		var parts []string
		p := rapid.IntRange(-3, 0).Draw(t, "priorityBase")
		for k := range rapid.IntRange(1, 3).Draw(t, "priorityClasses") {
			weight := 1.0
			if k > 0 {
				weight = rapid.SampledFrom([]float64{0, 0.5, 3}).Draw(t, "priorityWeight")
			}
			parts = append(parts, fmt.Sprintf("{priority: %d, weight: %g}", p, weight))
			p += rapid.IntRange(1, 1000).Draw(t, "priorityStep")
		}
		line := "  trace: " + strconv.Quote(traceFile) + "\n"
		sc = strings.Replace(sc, line, line+"  priorities: ["+strings.Join(parts, ", ")+"]\n", 1)
	}
	w.b.Reset()
	w.b.WriteString(sc)
	return mode == 0 || mode == 2
}

// writeSpec writes an engine.speculative block at indent: k proposals and
// either an i.i.d. acceptance rate (0 included: every proposal rejected)
// or a non-increasing per-position vector.
func writeSpec(t *rapid.T, w *yamlWriter, indent int, method, label string) {
	w.open(indent, "speculative")
	w.kv(indent+1, "method", method)
	if method == "draft_model" {
		w.kv(indent+1, "draft_model", "meta-llama/Llama-3.1-8B")
	}
	k := rapid.IntRange(1, 5).Draw(t, label+"K")
	w.kv(indent+1, "num_speculative_tokens", k)
	if rapid.Bool().Draw(t, label+"PerPosition") {
		a := rapid.SampledFrom([]float64{1, 0.9, 0.6, 0.2}).Draw(t, label+"A1")
		parts := make([]string, k)
		for i := range parts {
			parts[i] = strconv.FormatFloat(a, 'g', -1, 64)
			a *= rapid.SampledFrom([]float64{1, 0.8, 0.5, 0}).Draw(t, label+"Decay")
		}
		fmt.Fprintf(&w.b, "%sacceptance_per_position: [%s]\n", strings.Repeat("  ", indent+1), strings.Join(parts, ", "))
		return
	}
	w.kv(indent+1, "acceptance_rate", rapid.SampledFrom([]float64{0, 0.3, 0.7, 0.95}).Draw(t, label+"Alpha"))
}

// traceReq is one request line (or sub-request) of the JSONL trace.
type traceReq struct {
	InputToks   int     `json:"input_toks"`
	OutputToks  int     `json:"output_toks"`
	ArrivalNs   *int64  `json:"arrival_time_ns,omitempty"`
	ToolNs      *int64  `json:"tool_duration_ns,omitempty"`
	InputTokIDs []int32 `json:"input_tok_ids,omitempty"`
	AbortNs     *int64  `json:"abort_time_ns,omitempty"`
	Priority    *int    `json:"priority,omitempty"`
}

type traceSession struct {
	SessionID   string     `json:"session_id"`
	ArrivalNs   int64      `json:"arrival_time_ns"`
	Priority    *int       `json:"priority,omitempty"`
	SubRequests []traceReq `json:"sub_requests"`
}

// drawTrace draws a JSONL trace of plain requests and sessions, with token
// ids drawn from a few shared prefixes when ids are on, priorities on
// every line when prio, and on some plain lines a client abort. It
// returns the trace and its number of requests (sub-requests included).
func drawTrace(t *rapid.T, prio bool) (string, int) {
	aborts := rapid.IntRange(0, 3).Draw(t, "aborts") == 0
	priority := func() *int {
		if !prio {
			return nil
		}
		p := rapid.IntRange(-2, 3).Draw(t, "linePriority")
		return &p
	}
	withIDs := rapid.IntRange(0, 2).Draw(t, "tokenIDs") == 0
	var prefixes [][]int32
	if withIDs {
		for k := 0; k < 3; k++ {
			l := rapid.IntRange(0, 1024).Draw(t, fmt.Sprintf("prefix%dLen", k))
			p := make([]int32, l)
			for j := range p {
				p[j] = int32(1 + (k*7919+j*104729)%100000)
			}
			prefixes = append(prefixes, p)
		}
	}
	next := int32(0)
	drawReq := func(label string) traceReq {
		var in int
		switch rapid.IntRange(0, 3).Draw(t, label+"InKind") {
		case 0:
			in = rapid.IntRange(1, 32).Draw(t, label+"In")
		case 1, 2:
			in = rapid.IntRange(1, 1200).Draw(t, label+"In")
		default:
			in = rapid.IntRange(1, 6000).Draw(t, label+"In")
		}
		r := traceReq{InputToks: in, OutputToks: rapid.IntRange(1, 200).Draw(t, label+"Out")}
		if withIDs {
			p := prefixes[rapid.IntRange(0, len(prefixes)-1).Draw(t, label+"Prefix")]
			ids := make([]int32, in)
			for j := range ids {
				if j < len(p) {
					ids[j] = p[j]
				} else {
					next++
					ids[j] = 100000 + next%20000
				}
			}
			r.InputTokIDs = ids
		}
		return r
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	// Most traces spread arrivals; a burst sends many at the same instant.
	burst := rapid.IntRange(0, 5).Draw(t, "burst") == 0
	n := rapid.IntRange(1, 24).Draw(t, "lines")
	if burst {
		n = rapid.IntRange(24, 80).Draw(t, "burstLines")
	}
	total := 0
	at := int64(0)
	for i := 0; i < n; i++ {
		if !burst {
			at += int64(rapid.SampledFrom([]int{0, 1, 10, 50, 200, 1000}).Draw(t, "gapMs")) * 1e6
		}
		if rapid.IntRange(0, 4).Draw(t, "session") == 0 {
			s := traceSession{SessionID: fmt.Sprintf("s%d", i), ArrivalNs: at, Priority: priority()}
			k := rapid.IntRange(1, 4).Draw(t, "subRequests")
			for j := 0; j < k; j++ {
				r := drawReq("sub")
				tool := int64(rapid.SampledFrom([]int{0, 1, 50, 500}).Draw(t, "toolMs")) * 1e6
				r.ToolNs = &tool
				s.SubRequests = append(s.SubRequests, r)
			}
			total += k
			mustEncode(enc, s)
			continue
		}
		r := drawReq("req")
		a := at
		r.ArrivalNs = &a
		r.Priority = priority()
		if aborts && rapid.Bool().Draw(t, "abort") {
			ab := at + int64(rapid.SampledFrom([]int{1, 20, 300, 5000}).Draw(t, "abortAfterMs"))*1e6
			r.AbortNs = &ab
		}
		total++
		mustEncode(enc, r)
	}
	return b.String(), total
}

func mustEncode(enc *json.Encoder, v any) {
	if err := enc.Encode(v); err != nil {
		// Only plain structs of ints and strings are encoded.
		panic(fmt.Sprintf("randgen: encode trace line: %v", err))
	}
}

// drawWideEP draws an expert-parallel group's backend, EPLB (no redundant
// experts or ep of them, which keeps the shard even), DBO (DeepEP only)
// and, when the hardware can cross nodes, a node size that splits the
// group into whole nodes.
func drawWideEP(t *rapid.T, label string, dp, tp, ep int, canSpan bool) wideEP {
	w := wideEP{backend: rapid.SampledFrom([]string{"", "allgather_reducescatter", "deepep_low_latency", "deepep_high_throughput"}).Draw(t, label+"A2A")}
	if rapid.Bool().Draw(t, label+"EPLB") {
		w.eplb = true
		w.redundant = rapid.SampledFrom([]int{0, ep}).Draw(t, label+"Redundant")
		w.interval = rapid.IntRange(1, 50).Draw(t, label+"EPLBInterval")
	}
	if strings.HasPrefix(w.backend, "deepep") {
		w.dbo = rapid.Bool().Draw(t, label+"DBO")
	}
	if canSpan && dp > 1 && rapid.Bool().Draw(t, label+"Span") {
		w.nodeGPUs = tp * rapid.SampledFrom([]int{1, dp / 2}).Draw(t, label+"NodeRanks")
	}
	return w
}

// writeWideEP writes a group's wide expert-parallel fields.
func writeWideEP(w *yamlWriter, g wideEP) {
	if g.backend != "" {
		w.kv(2, "all2all_backend", g.backend)
	}
	if g.eplb {
		w.kv(2, "enable_eplb", true)
		w.kv(2, "num_redundant_experts", g.redundant)
		w.kv(2, "eplb_step_interval", g.interval)
	}
	if g.dbo {
		w.kv(2, "enable_dbo", true)
		w.kv(2, "dbo_decode_token_threshold", 2)
		w.kv(2, "dbo_prefill_token_threshold", 16)
	}
	if g.nodeGPUs > 0 {
		w.kv(2, "node_gpus", g.nodeGPUs)
	}
}
