package calibrate

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/servesim/servesim/internal/csvtable"
	"github.com/servesim/servesim/internal/perf"
)

// The older per-layer profile format (LLMServingSim's first profiler,
// "v0"): one folder per tensor-parallel degree, laid out as
// <hardware>/<org>/<model>/tp<N>/, holding layers.csv (HuggingFace modules
// timed in PyTorch eager mode) and optionally attention.csv (a sampled
// attention sweep). It has no meta.yaml: the accelerator and the model come
// from the folder names. See docs/calibration.md.

// MoE table ops read from v0 profiles: one routed expert's fused gate and
// up projections (w1 + w3), its down projection (w2), and the router GEMM.
// They are timed on the roofline's GEMM model with the expert's (or the
// router's) shape.
const (
	OpExpertGateUp = "expert_gate_up"
	OpExpertDown   = "expert_down"
	OpRouter       = "router"
)

// CategoryV0Decode is the table of a v0 attention sweep's decode rows.
// They are checked but never fitted: their times are below what reading
// distinct KV could take (64 sequences of 4096 tokens of Llama-3.1-8B are
// 1.07 GB of KV, 1.4 ms at the A6000's 768 GB/s; the sweep measured 84 µs),
// so the sweep's sequences must share cache-resident KV blocks.
const CategoryV0Decode = "attention_v0_decode"

// IsV0Dir reports whether the folder dir of fsys holds v0 tables (a
// layers.csv).
func IsV0Dir(fsys fs.FS, dir string) bool {
	_, err := fs.Stat(fsys, path.Join(dir, "layers.csv"))
	return err == nil
}

// V0Ref is where a v0 tp<N> folder says it was measured: the accelerator,
// the model ("org/name") and the tensor-parallel degree, read from its path
// <hardware>/<org>/<model>/tp<N>.
type V0Ref struct {
	Hardware, Model string
	TP              int
}

// ParseV0Path reads the accelerator, model and degree from the slash path
// of a v0 tp<N> folder.
func ParseV0Path(p string) (V0Ref, error) {
	parts := strings.Split(path.Clean(p), "/")
	if len(parts) < 4 {
		return V0Ref{}, fmt.Errorf("%s: a v0 profile folder is laid out as <hardware>/<org>/<model>/tp<N>; give that path", p)
	}
	n := len(parts)
	m := tpDirRe.FindStringSubmatch(parts[n-1])
	if m == nil {
		return V0Ref{}, fmt.Errorf("%s: last folder %q is not tp<N>; give the tp<N> folder of a v0 profile", p, parts[n-1])
	}
	tp, err := strconv.Atoi(m[1])
	if err != nil {
		return V0Ref{}, fmt.Errorf("%s: %w", p, err)
	}
	return V0Ref{Hardware: parts[n-4], Model: parts[n-3] + "/" + parts[n-2], TP: tp}, nil
}

// v0Dense maps a layers.csv op to the roofline's op and table. Ops that
// the roofline fuses (q, k, v; gate, up; w1, w3) are summed per token
// count; both layer norms are rows of the one layernorm op.
var v0Dense = map[string]struct{ op, cat string }{
	"embedding":       {perf.OpEmbedding, perf.CategoryDense},
	"input_layernorm": {perf.OpLayernorm, perf.CategoryDense},
	"post_layernorm":  {perf.OpLayernorm, perf.CategoryDense},
	"q_proj":          {perf.OpQKVProj, perf.CategoryDense},
	"k_proj":          {perf.OpQKVProj, perf.CategoryDense},
	"v_proj":          {perf.OpQKVProj, perf.CategoryDense},
	"rope":            {perf.OpRotaryEmb, perf.CategoryDense},
	"o_proj":          {perf.OpOProj, perf.CategoryDense},
	"gate_proj":       {perf.OpGateUpProj, perf.CategoryDense},
	"up_proj":         {perf.OpGateUpProj, perf.CategoryDense},
	"act_fn":          {perf.OpActFn, perf.CategoryDense},
	"down_proj":       {perf.OpDownProj, perf.CategoryDense},
	"final_layernorm": {perf.OpFinalLayernorm, perf.CategoryDense},
	"lm_head":         {perf.OpLMHead, perf.CategoryPerSequence},
	"attn":            {perf.OpAttention, perf.CategoryAttention},
	"gate":            {OpRouter, perf.CategoryMoE},
	"expert.w1":       {OpExpertGateUp, perf.CategoryMoE},
	"expert.w3":       {OpExpertGateUp, perf.CategoryMoE},
	"expert.w2":       {OpExpertDown, perf.CategoryMoE},
}

// fusedParts is how many layers.csv rows make one row of a fused op.
var fusedParts = map[string]int{perf.OpQKVProj: 3, perf.OpGateUpProj: 2, OpExpertGateUp: 2}

// ReadV0Points reads the tables of one v0 tp<N> folder of fsys as profile
// points: layers.csv (ns per op and token count) into the dense,
// per-sequence, MoE and attention (fresh prefill of that many tokens)
// tables, and attention.csv (median times, ms) into attention rows:
// a prefill row is one chunk over kv_cache_size cached tokens, a decode row
// batch_size sequences of kv_cache_size context each. Rows are returned in
// a fixed order (by table, op, then coordinates).
func ReadV0Points(fsys fs.FS, dir string) ([]perf.Point, error) {
	name := path.Join(dir, "layers.csv")
	t, c, err := openTable(fsys, name, "layer_name", "input", "latency(ns)")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("%w (is this a v0 profile?)", err)
	}
	defer c.Close()
	type key struct {
		op, slot string
		x        int
	}
	sum := map[key]float64{}
	parts := map[key]int{}
	cats := map[string]string{}
	for err := range t.Rows() {
		if err != nil {
			return nil, err
		}
		layer := t.Str("layer_name")
		m, known := v0Dense[layer]
		if !known {
			return nil, fmt.Errorf("%s:%d: unknown layer_name %q; v0 op names are the HuggingFace module names (see docs/calibration.md)", name, t.Line(), layer)
		}
		x, ok1, err := optNum(t, "input")
		if err != nil {
			return nil, err
		}
		ns, ok2, err := optNum(t, "latency(ns)")
		if err != nil {
			return nil, err
		}
		if !ok1 || !ok2 || x < 1 || x != math.Trunc(x) {
			return nil, fmt.Errorf("%s:%d: input %q and latency(ns) %q must be a positive integer and a time", name, t.Line(), t.Str("input"), t.Str("latency(ns)"))
		}
		k := key{m.op, "", int(x)}
		if m.op == perf.OpLayernorm {
			k.slot = layer // two norms per layer, each a row of its own
		}
		sum[k] += ns
		parts[k]++
		cats[m.op] = m.cat
	}
	keys := make([]key, 0, len(sum))
	for k := range sum {
		if want := fusedParts[k.op]; want > 0 && parts[k] != want {
			return nil, fmt.Errorf("%s: op %s at %d tokens has %d of its %d parts; each of q/k/v_proj, gate/up_proj and expert.w1/w3 needs one row per token count", name, k.op, k.x, parts[k], want)
		}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if cats[a.op] != cats[b.op] {
			return cats[a.op] < cats[b.op]
		}
		if a.op != b.op {
			return a.op < b.op
		}
		if a.slot != b.slot {
			return a.slot < b.slot
		}
		return a.x < b.x
	})
	out := make([]perf.Point, 0, len(keys))
	for _, k := range keys {
		p := perf.Point{Category: cats[k.op], Op: k.op, X: k.x, Ns: sum[k]}
		if k.op == perf.OpAttention {
			p.X, p.PC = 0, k.x
		}
		out = append(out, p)
	}
	attn, err := readV0Attention(fsys, path.Join(dir, "attention.csv"))
	if err != nil {
		return nil, err
	}
	return append(out, attn...), nil
}

// readV0Attention reads a v0 attention sweep; a missing file is no rows.
func readV0Attention(fsys fs.FS, name string) ([]perf.Point, error) {
	const pre, dec = "time_stats.attn_prefill.median", "time_stats.attn_decode.median"
	cols := []string{pre, dec, "batch_size", "prefill_chunk_size", "kv_cache_size", "is_prefill"}
	return readOptionalPoints(fsys, name, cols, func(t *csvtable.Table) (perf.Point, bool, error) {
		var isPrefill bool
		switch strings.ToLower(t.Str("is_prefill")) {
		case "true":
			isPrefill = true
		case "false":
		default:
			return perf.Point{}, false, t.Errorf("is_prefill is %q, want True or False", t.Str("is_prefill"))
		}
		col := dec
		if isPrefill {
			col = pre
		}
		ms, ok, err := optNum(t, col)
		if err != nil {
			return perf.Point{}, false, err
		}
		if !ok || ms == 0 {
			return perf.Point{}, false, t.Errorf("%s is empty or zero in a row with is_prefill %s", col, t.Str("is_prefill"))
		}
		var v [3]int
		for i, cn := range []string{"batch_size", "prefill_chunk_size", "kv_cache_size"} {
			f, _, err := optNum(t, cn)
			if err != nil {
				return perf.Point{}, false, err
			}
			v[i] = int(f)
		}
		p := perf.Point{Category: perf.CategoryAttention, Op: perf.OpAttention, Ns: ms * 1e6}
		if isPrefill {
			p.PC, p.KP = v[1], v[2]
		} else {
			p.Category, p.N, p.KVD = CategoryV0Decode, v[0], v[2]
		}
		return p, p.PC != 0 || p.N != 0, nil
	})
}
