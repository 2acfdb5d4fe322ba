package convert

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/model"
)

// inst is one instance object: the Llama-3.1-8B RTXPRO6000 TP1 instance of
// the examples with extra (or replaced, later keys win in Go's decoder)
// key-value pairs.
func inst(extra ...string) string {
	fields := []string{
		`"model_name": "meta-llama/Llama-3.1-8B"`,
		`"hardware": "RTXPRO6000"`,
		`"npu_mem": {"mem_size": 96, "mem_bw": 1597, "mem_latency": 0}`,
		`"pd_type": null`,
		`"tp_size": 1`,
	}
	for _, e := range extra {
		key, _, _ := strings.Cut(e, ":")
		fields = dropKey(fields, key)
		fields = append(fields, e)
	}
	return "{" + strings.Join(fields, ", ") + "}"
}

// dropKey removes the field whose key is key.
func dropKey(fields []string, key string) []string {
	out := fields[:0:0]
	for _, f := range fields {
		if k, _, _ := strings.Cut(f, ":"); k != key {
			out = append(out, f)
		}
	}
	return out
}

// clusterJSON is a one-node cluster config with the given instances and
// top-level extras.
func clusterJSON(top string, instances ...string) string {
	if top != "" {
		top += ", "
	}
	return fmt.Sprintf(`{%s"num_nodes": 1, "link_bw": 16, "link_latency": 20000, "nodes": [{"num_instances": %d,
		"cpu_mem": {"mem_size": 512, "mem_bw": 256, "mem_latency": 0}, "instances": [%s]}]}`,
		top, len(instances), strings.Join(instances, ", "))
}

func convert(t *testing.T, data string, opts Options) (*config.Scenario, *Result) {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "test.json"
	}
	res, err := LLMServingSim([]byte(data), opts)
	if err != nil {
		t.Fatalf("convert: %v", err)
	}
	s, err := config.Parse(res.YAML, "converted.yaml")
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, res.YAML)
	}
	return s, res
}

func TestMapping(t *testing.T) {
	type group struct {
		count, tp    int
		pp           int
		role, hw     string
		memGB        float64
		util         float64
		seqs, tokens int
	}
	tests := []struct {
		name   string
		data   string
		opts   Options
		groups []group
		check  func(t *testing.T, s *config.Scenario)
	}{
		{
			name:   "single instance, units",
			data:   clusterJSON("", inst()),
			groups: []group{{count: 1, tp: 1, role: "mixed", hw: "RTXPRO6000", memGB: 96}},
			check: func(t *testing.T, s *config.Scenario) {
				if s.Name != "test" || s.Model != "meta-llama/Llama-3.1-8B" || s.Hardware != "RTXPRO6000" || s.Dtype != "bf16" {
					t.Errorf("name/model/hardware/dtype = %q %q %q %q", s.Name, s.Model, s.Hardware, s.Dtype)
				}
				if s.Links.BandwidthGBps != 17.179869184 || s.Links.LatencyUs != 20 {
					t.Errorf("links = %g GB/s, %g us; want 16 GiB/s = 17.179869184 GB/s, 20000 ns = 20 us", s.Links.BandwidthGBps, s.Links.LatencyUs)
				}
				if s.Predictor.Kind != "profile" {
					t.Errorf("predictor.kind = %q, want profile (embedded bundle)", s.Predictor.Kind)
				}
			},
		},
		{
			name: "identical instances grouped, others apart, in order",
			data: clusterJSON("", inst(), inst(`"hardware": "RTX PRO 6000"`), inst(`"tp_size": 2`), inst()),
			groups: []group{
				{count: 3, tp: 1, role: "mixed", hw: "RTXPRO6000", memGB: 96},
				{count: 1, tp: 2, role: "mixed", hw: "RTXPRO6000", memGB: 96},
			},
		},
		{
			name: "roles, memory, mem_util and runtime overrides",
			data: clusterJSON("",
				inst(`"pd_type": "prefill"`, `"max_num_seqs": 32`, `"max_num_batched_tokens": 8192`, `"enable_chunked_prefill": true`, `"long_prefill_token_threshold": 2048`),
				inst(`"pd_type": "decode"`, `"npu_mem": {"mem_size": 48, "mem_bw": 1597, "mem_latency": 0, "mem_util": 0.8}`, `"max_num_seqs": 256`, `"enable_prefix_caching": false`, `"block_size": 32`)),
			groups: []group{
				{count: 1, tp: 1, role: "prefill", hw: "RTXPRO6000", memGB: 96, seqs: 32, tokens: 8192},
				{count: 1, tp: 1, role: "decode", hw: "RTXPRO6000", memGB: 48, util: 0.8, seqs: 256},
			},
			check: func(t *testing.T, s *config.Scenario) {
				p, d := s.Instances[0].Engine, s.Instances[1].Engine
				if p.LongPrefillTokenThreshold != 2048 || p.ChunkedPrefill == nil || !*p.ChunkedPrefill || p.PrefixCaching != nil {
					t.Errorf("prefill engine = %+v", p)
				}
				if d.BlockSize != 32 || d.PrefixCaching == nil || *d.PrefixCaching || d.ChunkedPrefill != nil {
					t.Errorf("decode engine = %+v", d)
				}
				if !s.PD() {
					t.Error("scenario is not disaggregated")
				}
			},
		},
		{
			name:   "tp inferred from num_npus and pp_size; pp_size becomes pp",
			data:   clusterJSON("", inst(`"tp_size": null`, `"num_npus": 4`, `"pp_size": 2`)),
			groups: []group{{count: 1, tp: 2, pp: 2, role: "mixed", hw: "RTXPRO6000", memGB: 96}},
		},
		{
			name:   "zero limits mean unlimited and the context length",
			data:   clusterJSON("", inst(`"max_num_seqs": 0`, `"max_num_batched_tokens": 0`)),
			groups: []group{{count: 1, tp: 1, role: "mixed", hw: "RTXPRO6000", memGB: 96, seqs: unlimitedSeqs, tokens: 131072}},
		},
		{
			name:   "dp group of a dense model: independent instances",
			data:   clusterJSON("", inst(`"dp_group": "A"`, `"tp_size": 2`), inst(`"dp_group": "A"`, `"tp_size": 2`)),
			groups: []group{{count: 2, tp: 2, role: "mixed", hw: "RTXPRO6000", memGB: 96}},
		},
		{
			name: "link lists take the outermost dimension; zero latency kept",
			data: strings.Replace(strings.Replace(clusterJSON("", inst()), `"link_bw": 16`, `"link_bw": [128, 32]`, 1),
				`"link_latency": 20000`, `"link_latency": [500, 0]`, 1),
			groups: []group{{count: 1, tp: 1, role: "mixed", hw: "RTXPRO6000", memGB: 96}},
			check: func(t *testing.T, s *config.Scenario) {
				if s.Links.BandwidthGBps != 34.359738368 || s.Links.LatencyUs != 0 {
					t.Errorf("links = %g GB/s, %g us; want 34.359738368, 0", s.Links.BandwidthGBps, s.Links.LatencyUs)
				}
			},
		},
		{
			name:   "no links: catalog NIC",
			data:   strings.Replace(clusterJSON("", inst()), `"link_bw": 16, "link_latency": 20000, `, "", 1),
			groups: []group{{count: 1, tp: 1, role: "mixed", hw: "RTXPRO6000", memGB: 96}},
			check: func(t *testing.T, s *config.Scenario) {
				if s.Links.BandwidthGBps != 0 || s.Links.LatencyUs != -1 {
					t.Errorf("links = %+v, want the catalog defaults", s.Links)
				}
			},
		},
		{
			name:   "dtype, hardware alias, predictor without a bundle",
			data:   clusterJSON("", inst(`"dtype": "float16"`, `"kv_cache_dtype": "auto"`, `"hardware": "H100-SXM"`, `"npu_mem": {"mem_size": 80, "mem_bw": 3350, "mem_latency": 0}`)),
			groups: []group{{count: 1, tp: 1, role: "mixed", hw: "H100", memGB: 80}},
			check: func(t *testing.T, s *config.Scenario) {
				if s.Dtype != "fp16" || s.Predictor.Kind != "roofline" {
					t.Errorf("dtype %q predictor %q, want fp16 roofline", s.Dtype, s.Predictor.Kind)
				}
			},
		},
		{
			name:   "options: forced predictor and workload",
			data:   clusterJSON("", inst()),
			opts:   Options{Name: "x.json", Predictor: "roofline", Workload: "builtin:example_trace"},
			groups: []group{{count: 1, tp: 1, role: "mixed", hw: "RTXPRO6000", memGB: 96}},
			check: func(t *testing.T, s *config.Scenario) {
				if s.Predictor.Kind != "roofline" || s.Workload.Trace != "builtin:example_trace" || s.Name != "x" {
					t.Errorf("predictor %q trace %q name %q", s.Predictor.Kind, s.Workload.Trace, s.Name)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := convert(t, tc.data, tc.opts)
			if len(s.Instances) != len(tc.groups) {
				t.Fatalf("%d groups, want %d: %+v", len(s.Instances), len(tc.groups), s.Instances)
			}
			for i, want := range tc.groups {
				g := s.Instances[i]
				got := group{count: *g.Count, tp: *g.TP, pp: *g.PP, role: string(g.Role), hw: g.Hardware, memGB: g.MemoryGB}
				if want.pp == 0 {
					want.pp = 1
				}
				if g.Engine != nil {
					got.util, got.seqs, got.tokens = g.Engine.GPUMemoryUtilization, g.Engine.MaxNumSeqs, g.Engine.MaxNumBatchedTokens
				}
				if got != want {
					t.Errorf("group %d = %+v, want %+v", i, got, want)
				}
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestNotesInHeader(t *testing.T) {
	_, res := convert(t, clusterJSON("", inst(`"dp_group": "A"`), inst(`"dp_group": "A"`)), Options{})
	y := string(res.YAML)
	for _, want := range []string{"# servesim scenario converted", "GiB/s", `dp_group "A"`, "independent instances"} {
		if !strings.Contains(y, want) {
			t.Errorf("header lacks %q:\n%s", want, y)
		}
	}
	for _, line := range strings.Split(y, "\n") {
		if strings.HasPrefix(line, "#") && len(line) > headerWidth {
			t.Errorf("header line longer than %d columns: %q", headerWidth, line)
		}
	}
	if len(res.Notes) == 0 {
		t.Error("no notes returned")
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		opts Options
		want []string // substrings of the error
	}{
		{"invalid JSON", `{"num_nodes": 1,`, Options{}, []string{"test.json", "invalid JSON"}},
		{"not an object", `[1]`, Options{}, []string{"top level must be a JSON object"}},
		{"unknown hardware", clusterJSON("", inst(`"hardware": "H1000"`)), Options{}, []string{"nodes[0].instances[0].hardware", "H1000", "H100"}},
		{"two models", clusterJSON("", inst(), inst(`"model_name": "Qwen/Qwen3-32B"`)), Options{}, []string{"nodes[0].instances[1].model_name", "one model"}},
		{"unknown key with its path", clusterJSON("", inst(`"max_num_seqz": 4`)), Options{}, []string{"unknown", "nodes[0].instances[0].max_num_seqz"}},
		{"unknown top-level key", clusterJSON(`"frobnicate": 1`, inst()), Options{}, []string{"unknown", "frobnicate"}},
		{"num_npus mismatch", clusterJSON("", inst(`"num_npus": 3`, `"tp_size": 2`)), Options{}, []string{"nodes[0].instances[0].num_npus", "tp_size x pp_size"}},
		{"no parallelism", clusterJSON("", inst(`"tp_size": null`)), Options{}, []string{"nodes[0].instances[0]", "set tp_size or num_npus"}},
		{"mem_util out of range", clusterJSON("", inst(`"npu_mem": {"mem_size": 96, "mem_bw": 1597, "mem_latency": 0, "mem_util": 90}`)), Options{}, []string{"npu_mem.mem_util", "(0, 1]"}},
		{"missing mem_size", clusterJSON("", inst(`"npu_mem": {"mem_bw": 1597}`)), Options{}, []string{"npu_mem.mem_size: missing"}},
		{"bad pd_type", clusterJSON("", inst(`"pd_type": "both"`)), Options{}, []string{"nodes[0].instances[0].pd_type", "prefill"}},
		{"wrong type", clusterJSON("", inst(`"tp_size": "2"`)), Options{}, []string{"nodes[0].instances[0].tp_size", "must be a number"}},
		{"fractional tp", clusterJSON("", inst(`"tp_size": 1.5`)), Options{}, []string{"tp_size", "whole number"}},
		{"num_instances mismatch", strings.Replace(clusterJSON("", inst()), `"num_instances": 1`, `"num_instances": 2`, 1), Options{}, []string{"nodes[0].num_instances", "lists 1"}},
		{"num_nodes mismatch", strings.Replace(clusterJSON("", inst()), `"num_nodes": 1`, `"num_nodes": 2`, 1), Options{}, []string{"num_nodes", "lists 1"}},
		{"negative link", strings.Replace(clusterJSON("", inst()), `"link_bw": 16`, `"link_bw": -1`, 1), Options{}, []string{"link_bw", "> 0"}},
		{"dp group disagrees", clusterJSON("", inst(`"dp_group": "A"`), inst(`"dp_group": "A"`, `"tp_size": 2`)), Options{}, []string{"dp_group \"A\"", "agree"}},
		{"moe ep beyond tp without dp", clusterJSON("", inst(`"model_name": "Qwen/Qwen3-30B-A3B-Instruct-2507"`, `"ep_size": 2`)), Options{}, []string{"ep_size", "exceeds tp_size"}},
		{"two dtypes", clusterJSON("", inst(`"dtype": "bfloat16"`), inst(`"dtype": "float16"`)), Options{}, []string{"nodes[0].instances[1].dtype", "one dtype"}},
		{"unknown dtype", clusterJSON("", inst(`"dtype": "float32"`)), Options{}, []string{"dtype", "float32"}},
		{"bad predictor option", clusterJSON("", inst()), Options{Predictor: "magic"}, []string{"predictor", "auto, profile or roofline"}},
		{"missing profiles dir", clusterJSON("", inst()), Options{Profiles: "/nonexistent/profiles"}, []string{"profiles", "not a directory"}},
		{"unknown model with zero token budget", clusterJSON("", inst(`"model_name": "acme/Unknown-1B"`, `"max_num_batched_tokens": 0`)), Options{}, []string{"max_num_batched_tokens", "--models"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts.Name == "" {
				tc.opts.Name = "test.json"
			}
			_, err := LLMServingSim([]byte(tc.data), tc.opts)
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, ErrUnsupported) {
				t.Errorf("a malformed config is reported as unsupported: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestUnsupported(t *testing.T) {
	placement := func(weights, kv, evict string) string {
		return fmt.Sprintf(`"placement": {"default": {"weights": %q, "kv_loc": %q, "kv_evict_loc": %q}}`, weights, kv, evict)
	}
	tests := []struct {
		name string
		data string
		want []Section
	}{
		{"CXL memory", clusterJSON(`"cxl_mem": {"mem_size": 1024, "mem_latency": 250, "mem_bw": 60}`, inst(placement("cxl:0", "npu", "cpu"))),
			[]Section{{"cxl_mem", "CXL memory expansion"}, {"nodes[0].instances[0].placement", "CXL memory: weights on cxl:0"}}},
		{"weights on the CPU", clusterJSON("", inst(placement("cpu", "npu", "npu"))),
			[]Section{{"nodes[0].instances[0].placement", "placement in CPU memory: weights on cpu"}}},
		{"PIM attention offload", clusterJSON("", inst(`"enable_attn_offloading": true`)),
			[]Section{{"nodes[0].instances[0].enable_attn_offloading", "PIM attention offloading"}}},
		{"FP8 KV cache", clusterJSON("", inst(`"kv_cache_dtype": "fp8"`)),
			[]Section{{"nodes[0].instances[0].kv_cache_dtype", `KV cache dtype "fp8" different from the weights`}}},
		// Pipelined members are not mapped onto DP/EP: each would hold half
		// of every expert, 30.5 GB, more than 24 GB x 0.9.
		{"experts spread over a pipelined dp_group that do not fit", clusterJSON("", moeMember(24, 2), moeMember(24, 2)),
			[]Section{
				{"nodes[0].instances[0].ep_size", `expert parallelism across dp_group "A": servesim would hold every expert on each member`},
				{"nodes[0].instances[1].ep_size", `expert parallelism across dp_group "A": servesim would hold every expert on each member`},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LLMServingSim([]byte(tc.data), Options{Name: "u.json"})
			var ue *UnsupportedError
			if !errors.As(err, &ue) || !errors.Is(err, ErrUnsupported) {
				t.Fatalf("want an UnsupportedError, got %v", err)
			}
			if ue.Source != "u.json" || len(ue.Sections) != len(tc.want) {
				t.Fatalf("source %q sections %+v, want %+v", ue.Source, ue.Sections, tc.want)
			}
			for i, w := range tc.want {
				if got := ue.Sections[i]; got.Path != w.Path || !strings.HasPrefix(got.Feature, w.Feature) {
					t.Errorf("section %d = %+v, want %+v", i, got, w)
				}
			}
			if !strings.Contains(err.Error(), tc.want[0].Path) {
				t.Errorf("error %q does not name %s", err, tc.want[0].Path)
			}
		})
	}
}

// TestAcceptedButIgnored checks that keys LLMServingSim documents but
// servesim has no use for convert, with a note where they matter.
func TestAcceptedButIgnored(t *testing.T) {
	data := clusterJSON(`"collective_links": {}`, inst(`"enable_block_copy": true`, `"cudagraph": {"mode": "NONE"}`,
		`"reserve_full_isl": true`, `"enable_attn_offloading": false`, `"placement": {"default": {"weights": "npu", "kv_loc": "npu", "kv_evict_loc": "cpu"},
		"blocks": [{"blocks": "0-3", "weights": "npu", "kv_loc": "npu", "kv_evict_loc": "npu"}], "layers": {"lm_head": {"weights": "npu", "kv_loc": "npu", "kv_evict_loc": "npu"}}}`))
	_, res := convert(t, data, Options{})
	joined := strings.Join(res.Notes, "\n")
	for _, want := range []string{"collective_links", "cudagraph", "reserve_full_isl", "kv_evict_loc cpu"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes lack %q:\n%s", want, joined)
		}
	}
}

// TestModelsDir checks that a user models directory is searched, written
// to the scenario and checked.
func TestModelsDir(t *testing.T) {
	dir := t.TempDir()
	cfg, err := fs.ReadFile(model.Builtin(), "meta-llama/Llama-3.1-8B.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "acme"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "acme", "Llama-Copy.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	data := clusterJSON("", inst(`"model_name": "acme/Llama-Copy"`, `"max_num_batched_tokens": 0`))
	s, _ := convert(t, data, Options{Models: dir})
	if s.Models != dir || s.Model != "acme/Llama-Copy" || s.Instances[0].Engine.MaxNumBatchedTokens != 131072 {
		t.Errorf("models %q model %q engine %+v", s.Models, s.Model, s.Instances[0].Engine)
	}
	if _, err := LLMServingSim([]byte(data), Options{Models: filepath.Join(dir, "missing")}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("missing models dir: %v", err)
	}
	// A model nobody knows converts (the run names it), with a note.
	_, res := convert(t, clusterJSON("", inst(`"model_name": "acme/Unknown-1B"`)), Options{})
	if !strings.Contains(strings.Join(res.Notes, "\n"), "no embedded HuggingFace config") {
		t.Errorf("notes lack the unknown-model note: %q", res.Notes)
	}
}

// TestHardwareNotes checks the notes on hardware fields servesim takes
// from its catalog.
func TestHardwareNotes(t *testing.T) {
	_, res := convert(t, clusterJSON("", inst(`"npu_mem": {"mem_size": 96, "mem_bw": 1000, "mem_latency": 5}`)), Options{})
	joined := strings.Join(res.Notes, "\n")
	for _, want := range []string{"npu_mem.mem_bw 1000 GB/s differs from the catalog", "npu_mem.mem_latency 5 ns is ignored"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes lack %q:\n%s", want, joined)
		}
	}
}

// TestDPGroupBecomesDPEP: two Qwen3-30B-A3B members of dp_group "A" with
// ep_size 2 (the measured run's cluster file) become one instance with dp 2
// and ep 2, whose experts are sharded, so it fits 48 GB GPUs (where every
// member holding every expert would not, 61 GB).
func TestDPGroupBecomesDPEP(t *testing.T) {
	s, res := convert(t, clusterJSON("", moeMember(48, 1), moeMember(48, 1)), Options{Workload: "builtin:example_trace"})
	if len(s.Instances) != 1 {
		t.Fatalf("%d groups:\n%s", len(s.Instances), res.YAML)
	}
	g := s.Instances[0]
	if dp, ep := g.Parallel(); *g.Count != 1 || dp != 2 || ep != 2 || *g.TP != 1 {
		t.Fatalf("group %s: count %d dp %d ep %d tp %d", g.Name, *g.Count, dp, ep, *g.TP)
	}
	for _, want := range []string{"dp: 2\n", "ep: 2\n"} {
		if !strings.Contains(string(res.YAML), want) {
			t.Errorf("YAML lacks %q:\n%s", want, res.YAML)
		}
	}
	b, err := assemble.Build(s, config.Source{})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	if b.NumInstances() != 2 {
		t.Errorf("%d engines, want one per DP rank", b.NumInstances())
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "lockstep data-parallel ranks") {
		t.Errorf("notes do not say how the group maps: %v", res.Notes)
	}
}

// moeMember is a Qwen3-30B-A3B member of dp_group "A" on a GPU of memGB
// with tp_size 1, the given pp_size and its experts spread ep_size 2 ways
// over the group.
func moeMember(memGB, pp int) string {
	return inst(`"model_name": "Qwen/Qwen3-30B-A3B-Instruct-2507"`,
		fmt.Sprintf(`"npu_mem": {"mem_size": %d, "mem_bw": 1597, "mem_latency": 0}`, memGB),
		fmt.Sprintf(`"num_npus": %d`, pp), fmt.Sprintf(`"pp_size": %d`, pp), `"ep_size": 2`, `"dp_group": "A"`)
}

// TestPipelineParallel checks that pp_size maps to the group's pp: count
// stays the number of LLMServingSim instances, tp is tp_size (or num_npus /
// pp_size), and the scenario builds instances of tp x pp GPUs.
func TestPipelineParallel(t *testing.T) {
	type group struct {
		name          string
		count, tp, pp int
	}
	tests := []struct {
		name   string
		data   string
		groups []group
		yaml   []string // substrings of the scenario YAML
		noYAML []string // strings the scenario YAML must not contain
	}{
		{
			name:   "pp_size 2 x tp_size 2",
			data:   clusterJSON("", inst(`"tp_size": 2`, `"pp_size": 2`)),
			groups: []group{{"mixed-rtxpro6000-tp2-pp2", 1, 2, 2}},
			yaml:   []string{"count: 1\n", "tp: 2\n", "pp: 2\n"},
		},
		{
			name:   "tp from num_npus / pp_size",
			data:   clusterJSON("", inst(`"tp_size": null`, `"num_npus": 8`, `"pp_size": 2`)),
			groups: []group{{"mixed-rtxpro6000-tp4-pp2", 1, 4, 2}},
			yaml:   []string{"tp: 4\n", "pp: 2\n"},
		},
		{
			name:   "identical pipelined instances count once each",
			data:   clusterJSON("", inst(`"pp_size": 2`, `"num_npus": 2`), inst(`"pp_size": 2`)),
			groups: []group{{"mixed-rtxpro6000-tp1-pp2", 2, 1, 2}},
			yaml:   []string{"count: 2\n", "tp: 1\n", "pp: 2\n"},
		},
		{
			name:   "pipelined and unpipelined instances stay apart",
			data:   clusterJSON("", inst(`"pp_size": 2`), inst(), inst(`"pp_size": 4`)),
			groups: []group{{"mixed-rtxpro6000-tp1-pp2", 1, 1, 2}, {"mixed-rtxpro6000-tp1", 1, 1, 1}, {"mixed-rtxpro6000-tp1-pp4", 1, 1, 4}},
			yaml:   []string{"pp: 2\n", "pp: 4\n"},
		},
		{
			name:   "pp_size 1 writes no pp",
			data:   clusterJSON("", inst(`"pp_size": 1`)),
			groups: []group{{"mixed-rtxpro6000-tp1", 1, 1, 1}},
			noYAML: []string{"pp:"},
		},
		{
			name:   "P/D roles with pp",
			data:   clusterJSON("", inst(`"pd_type": "prefill"`, `"pp_size": 2`), inst(`"pd_type": "decode"`)),
			groups: []group{{"prefill-rtxpro6000-tp1-pp2", 1, 1, 2}, {"decode-rtxpro6000-tp1", 1, 1, 1}},
		},
		{
			// 61 GB of weights do not fit one 48 GB GPU (see TestUnsupported),
			// but half of them per pipeline stage do.
			name:   "experts spread over a dp_group fit per stage",
			data:   clusterJSON("", moeMember(48, 2), moeMember(48, 2)),
			groups: []group{{"mixed-rtxpro6000-tp1-pp2", 2, 1, 2}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, res := convert(t, tc.data, Options{Predictor: "roofline", Workload: "builtin:example_trace"})
			if len(s.Instances) != len(tc.groups) {
				t.Fatalf("%d groups, want %d:\n%s", len(s.Instances), len(tc.groups), res.YAML)
			}
			for i, want := range tc.groups {
				g := s.Instances[i]
				if got := (group{g.Name, *g.Count, *g.TP, *g.PP}); got != want {
					t.Errorf("group %d = %+v, want %+v", i, got, want)
				}
			}
			y := string(res.YAML)
			for _, w := range tc.yaml {
				if !strings.Contains(y, w) {
					t.Errorf("YAML lacks %q:\n%s", w, y)
				}
			}
			for _, w := range tc.noYAML {
				if strings.Contains(y, w) {
					t.Errorf("YAML has %q:\n%s", w, y)
				}
			}
			for _, n := range res.Notes {
				if strings.Contains(n, "pipeline") || strings.Contains(n, "replica") {
					t.Errorf("note on pipeline parallelism, which maps exactly: %q", n)
				}
			}
			b, err := assemble.Build(s, config.Source{})
			if err != nil {
				t.Fatalf("build: %v\n%s", err, y)
			}
			var want []int
			for _, g := range tc.groups {
				for range g.count {
					want = append(want, g.pp)
				}
			}
			if b.NumInstances() != len(want) {
				t.Fatalf("built %d instances, want %d", b.NumInstances(), len(want))
			}
			for i, in := range b.Instances() {
				if in.PP != want[i] {
					t.Errorf("built instance %d has pp %d, want %d", i, in.PP, want[i])
				}
			}
		})
	}
}
