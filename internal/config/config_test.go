package config

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestDefaultScenarioRoundTrips: the resolved scenario an output carries
// parses back to the same scenario.
func TestDefaultScenarioRoundTrips(t *testing.T) {
	for _, name := range []string{"default", "pd"} {
		var s *Scenario
		var err error
		if name == "default" {
			s, err = LoadDefault()
		} else {
			s, err = Parse([]byte("instances:\n  - {role: prefill, count: 2}\n  - {role: decode, engine: {num_gpu_blocks: 4000}}\nhandoff: {policy: push}\n"), "pd.yaml")
		}
		if err != nil {
			t.Fatal(err)
		}
		y, err := Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(y, "resolved.yaml")
		if err != nil {
			t.Fatalf("%s: resolved scenario does not parse: %v\n%s", name, err, y)
		}
		y2, err := Marshal(back)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(y) != string(y2) {
			t.Fatalf("%s: round trip changed the scenario:\n%s\n---\n%s", name, y, y2)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown field", "engine:\n  max_num_seq: 3\n", []string{"s.yaml:2:3", "max_num_seq"}},
		{"wrong type", "seed: many\n", []string{"s.yaml:1:"}},
		{"zero block size", "engine:\n  block_size: 0\n", []string{"engine.block_size: must be > 0"}},
		{"negative seqs in group", "instances:\n  - engine: {max_num_seqs: -1}\n", []string{"instances[0].engine.max_num_seqs"}},
		{"bad role", "instances:\n  - role: both\n", []string{"instances[0].role", "mixed, prefill or decode"}},
		{"decode without prefill", "instances:\n  - role: decode\n", []string{"instances", "prefill"}},
		{"bad policy", "handoff: {policy: drop}\n", []string{"handoff.policy", "pull, reserve, reject, push or eager"}},
		{"negative re-prefill limit", "handoff: {max_reprefills: -1}\n", []string{"handoff.max_reprefills", ">= 0"}},
		{"bad utilisation", "engine: {gpu_memory_utilization: 1.5}\n", []string{"engine.gpu_memory_utilization"}},
		{"bad slo target", "slo:\n  percentiles: [{metric: ttft, percentile: 98, max_ms: 10}]\n", []string{"slo.percentiles[0].percentile"}},
		{"trace and nothing", "workload: {trace: \"\"}\n", []string{"workload"}},
		{"bad quantization", "quantization: int4\n", []string{"quantization: unknown method \"int4\"", "fp8, awq, gptq, modelopt_fp4 or mxfp4"}},
		{"bad kv dtype", "kv_cache_dtype: fp4\n", []string{"kv_cache_dtype", "auto, fp8, fp8_e4m3 or fp8_e5m2"}},
		{"awq bits", "quantization: awq\nquantization_config: {bits: 8}\n", []string{"quantization_config.bits", "4 bits only"}},
		{"unknown quant field", "quantization_config: {bit: 8}\n", []string{"s.yaml:1:", "bit"}},
		{"kv_tiers unknown field", "kv_tiers: {hosts: {capacity_gb: 1}}\n", []string{"s.yaml:1:", "hosts"}},
		{"kv_tiers chunk", "kv_tiers: {chunk_tokens: 100}\n", []string{"kv_tiers.chunk_tokens", "multiple of engine.block_size 16"}},
		{"kv_tiers policy", "kv_tiers: {load_policy: never}\n", []string{"kv_tiers.load_policy", "always or cost_based"}},
		{"frontend unknown field", "frontend: {api_servers: 2}\n", []string{"s.yaml:1:", "api_servers"}},
		{"frontend negative cost", "frontend: {chunk_us: -5}\n", []string{"frontend.chunk_us", "must be in [0, 1e+07] us (got -5)"}},
		{"frontend servers", "frontend: {api_server_count: -1}\n", []string{"frontend.api_server_count", "must be in [1, 1024]"}},
		{"frontend tokenizer batch", "frontend: {tokenize_batch_max: -4}\n", []string{"frontend.tokenize_batch_max", "must be in [1, 65536] prompts (got -4"}},
		{"warmup", "workload: {warmup_requests: -3}\n", []string{"workload.warmup_requests", "must be in [0,"}},
		{"ignored arrivals scaled", "workload: {max_concurrency: 4, ignore_arrival_times: true, time_scale: 0.5}\n", []string{"workload.time_scale", "has no effect with workload.ignore_arrival_times"}},
		{"kv_tiers disk capacity", "kv_tiers: {disk: {read_gbps: 3}}\n", []string{"kv_tiers.disk.capacity_gb", "required"}},
		{"kv_tiers host fraction", "kv_tiers: {host: {memory_fraction: 2}}\n", []string{"kv_tiers.host.memory_fraction", "(0, 1]"}},
		{"kv_tiers latency", "kv_tiers: {host: {latency_us: -1}}\n", []string{"kv_tiers.host.latency_us", ">= 0"}},
		{"kv_tiers write buffer", "kv_tiers: {write_buffer_mb: -5}\n", []string{"s.yaml:1:", "kv_tiers.write_buffer_mb", ">= 0 MB"}},
		{"kv_tiers without prefix caching", "engine: {enable_prefix_caching: false}\nkv_tiers: {}\n", []string{"kv_tiers", "enable_prefix_caching"}},
		{"preemption mode", "engine: {preemption_mode: evict}\n", []string{"s.yaml:1:", "engine.preemption_mode", "recompute", "swap", `"evict"`}},
		{"offload cap without offload", "handoff: {offload_pinned_max_gb: 2}\nkv_tiers: {}\n", []string{"handoff.offload_pinned_max_gb", "offload_pinned_after_s"}},
		{"offload cap negative", "handoff: {offload_pinned_after_s: 1, offload_pinned_max_gb: -2}\nkv_tiers: {}\n", []string{"handoff.offload_pinned_max_gb", "or 0 for unbounded"}},
		{"swap without tiers", "engine: {preemption_mode: swap}\n", []string{"engine.preemption_mode", "needs a kv_tiers section"}},
		{"swap_space without swap", "engine: {swap_space: 8}\nkv_tiers: {}\n", []string{"engine.swap_space", "preemption_mode: swap only"}},
		{"swap_space negative", "engine: {preemption_mode: swap, swap_space: -1}\nkv_tiers: {}\n", []string{"engine.swap_space", "GiB"}},
		{"group swap without tiers", "instances: [{count: 1, engine: {preemption_mode: swap}}]\n", []string{"instances[0].engine.preemption_mode", "kv_tiers"}},
		{"bad all2all backend", "instances:\n  - {dp: 2, ep: 2, all2all_backend: pplx}\n", []string{"instances[0].all2all_backend", "deepep_low_latency", `"pplx"`}},
		{"backend without ep", "instances:\n  - {all2all_backend: deepep_low_latency}\n", []string{"instances[0].ep", "ep > 1"}},
		{"redundant experts without eplb", "instances:\n  - {dp: 2, ep: 2, num_redundant_experts: 2}\n", []string{"instances[0].num_redundant_experts", "enable_eplb"}},
		{"dbo without deepep", "instances:\n  - {dp: 2, ep: 2, enable_dbo: true}\n", []string{"instances[0].enable_dbo", "DeepEP"}},
		{"dbo threshold without dbo", "instances:\n  - {dp: 2, ep: 2, dbo_decode_token_threshold: 8}\n", []string{"instances[0].enable_dbo", "thresholds"}},
		{"ep with pp", "instances:\n  - {tp: 2, ep: 2, pp: 2}\n", []string{"instances[0].pp", "pp: 1"}},
		{"bad dp tie rule", "instances:\n  - {dp: 2, dp_balance_ties: random}\n", []string{"s.yaml:2:", "instances[0].dp_balance_ties", "lowest or seeded", `"random"`}},
		{"bad format scaling", "predictor: {format_scaling: yes-please}\n", []string{"predictor.format_scaling", "roofline-ratio"}},
		{"bad predictor kind", "predictor: {kind: tables}\n", []string{"predictor.kind", "profile, roofline or perfdb"}},
		{"perfdb field on a profile", "predictor: {path: db}\n", []string{"predictor.path", "kind perfdb only"}},
		{"perfdb system on the roofline", "predictor: {kind: roofline, system: h100_sxm}\n", []string{"predictor.system", "kind perfdb only"}},
		{"scheduling policy", "engine: {scheduling_policy: sjf}\n", []string{"s.yaml:1:", "engine.scheduling_policy", "fcfs", "priority", `"sjf"`}},
		{"group scheduling policy", "instances: [{engine: {scheduling_policy: lifo}}]\n", []string{"instances[0].engine.scheduling_policy", `"lifo"`}},
		{"priority mix empty", "workload: {priorities: []}\n", []string{"workload.priorities", "no class"}},
		{"priority mix weight", "workload: {priorities: [{priority: 0, weight: -1}]}\n", []string{"workload.priorities[0].weight", ">= 0"}},
		{"priority mix zero sum", "workload: {priorities: [{priority: 0, weight: 0}]}\n", []string{"workload.priorities", "positive, finite sum"}},
		{"priority mix duplicate", "workload: {priorities: [{priority: 2, weight: 1}, {priority: 2, weight: 1}]}\n", []string{"workload.priorities[1].priority", "merge"}},
		{"priority out of int32", "workload: {priorities: [{priority: 3000000000, weight: 1}]}\n", []string{"s.yaml:1:36", "workload.priorities[0].priority", "want an integer"}},
		{"priority fraction", "workload: {priorities: [{priority: 0.5, weight: 1}]}\n", []string{"s.yaml:1:", "whole number"}},
		{"priority unknown field", "workload: {priorities: [{prio: 1, weight: 1}]}\n", []string{"s.yaml:1:", "prio"}},
		{"bad moe distribution", "predictor: {kind: perfdb, moe_distribution: zipf}\n", []string{"predictor.moe_distribution", "power_law_1.01"}},
		{"faults unknown field", "faults: {loss: []}\n", []string{"s.yaml:1:", "loss"}},
		{"faults on_loss", "faults: {on_loss: maybe}\n", []string{"s.yaml:1:", "faults.on_loss", "retry or fail"}},
		{"faults instance ref", "faults: {losses: [{at_s: 1, instance: g0}]}\n", []string{"faults.losses[0].instance", "group[index]"}},
		{"faults instance range", "faults: {losses: [{at_s: 1, instance: 'g0[3]'}]}\n", []string{"faults.losses[0].instance", "index 3 is out of range"}},
		{"faults loss target", "faults: {losses: [{at_s: 1}]}\n", []string{"faults.losses[0]", "exactly one of instance"}},
		{"faults mtbf", "faults: {mtbf: [{group: g0, hours: 0}]}\n", []string{"faults.mtbf[0].hours", "(0, 1e6]"}},
		{"faults straggler window", "faults: {stragglers: [{instance: 'g0[0]', start_s: 5, end_s: 1, factor: 2}]}\n", []string{"faults.stragglers[0].end_s", "after start_s"}},
		{"faults straggler factor", "faults: {stragglers: [{instance: 'g0[0]', start_s: 0, end_s: 1, factor: 0.5}]}\n", []string{"faults.stragglers[0].factor", "[1, 1000]"}},
		{"faults transfers colocated", "faults: {transfers: {failure_rate: 0.1}}\n", []string{"faults.transfers", "disaggregated"}},
		{"faults load policy", "faults: {transfers: {kv_load_failure_policy: retry}}\n", []string{"faults.transfers.kv_load_failure_policy", "recompute or fail"}},
		{"faults with push", "instances: [{role: prefill}, {role: decode}]\nhandoff: {policy: push}\nfaults: {}\n", []string{"faults", "pull or reject"}},
		{"faults with tiers", "kv_tiers: {}\nfaults: {}\n", []string{"faults", "kv_tiers"}},
		{"autoscaler min", "instances: [{name: a, count: 3}]\nautoscaler: {pools: [{group: a, min: 0, target: 1}]}\n", []string{"autoscaler.pools[0]", "1 <= min <= max"}},
		{"autoscaler metric", "instances: [{name: a, count: 3}]\nautoscaler: {pools: [{group: a, min: 1, target: 1, metric: rps}]}\n", []string{"autoscaler.pools[0].metric", "queue_depth, kv_usage or ttft_p90"}},
		{"autoscaler group", "autoscaler: {pools: [{group: b, min: 1, target: 1}]}\n", []string{"autoscaler.pools[0].group", "no instance group"}},
		{"autoscaler kv target", "instances: [{name: a, count: 3}]\nautoscaler: {pools: [{group: a, min: 1, target: 2, metric: kv_usage}]}\n", []string{"autoscaler.pools[0].target", "fraction"}},
		{"autoscaler no pools", "autoscaler: {}\n", []string{"autoscaler.pools", "at least one pool"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "s.yaml")
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestDefaultsFillGroups(t *testing.T) {
	s, err := Parse([]byte("hardware: H100\ninstances:\n  - {}\n  - {count: 3, tp: 2}\n"), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g := s.Instances
	if g[0].Name != "g0" || *g[0].Count != 1 || *g[0].TP != 1 || g[0].Role != "mixed" || g[0].Hardware != "H100" {
		t.Errorf("group 0 defaults: %+v", g[0])
	}
	if *g[1].Count != 3 || *g[1].TP != 2 {
		t.Errorf("group 1: %+v", g[1])
	}
	if s.PD() {
		t.Error("mixed groups are not disaggregated")
	}
}

func TestGroupEngineOverrides(t *testing.T) {
	s, err := Parse([]byte("engine: {max_num_seqs: 64}\ninstances:\n  - engine: {num_gpu_blocks: 500, enable_prefix_caching: false}\n"), "o.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := s.Instances[0].Merged(s.Engine)
	if m.MaxNumSeqs != 64 || m.NumGPUBlocks != 500 || *m.PrefixCaching || !*m.ChunkedPrefill {
		t.Errorf("merged engine: %+v", m)
	}
}

// FuzzParse: arbitrary bytes never panic the scenario parser; they parse
// or give an error.
func FuzzParse(f *testing.F) {
	f.Add([]byte("engine: {max_num_seqs: 4}\n"))
	f.Add([]byte("instances:\n  - {role: prefill}\n  - {role: decode}\n"))
	f.Add([]byte("workload:\n  synthetic: {requests: 3, arrival: {kind: poisson, rate: 1}, input: {kind: fixed, mean: 5}, output: {kind: fixed, mean: 5}}\n"))
	f.Add([]byte("engine: [\n"))
	for _, bad := range []string{
		"engine: {num_gpu_blocks: 9223372036854775807}", "links: {latency_us: .inf}", "engine: {gpu_memory_utilization: .nan}",
		"engine: {max_num_seqs: 1.5}", "engine: {max_num_seqs: \"2.5\"}", "predictor: {step_overhead_us: 1e300}", "instances: [{count: 1e9}]",
		"handoff: {lease_s: 1e300, retry_after_s: .nan}", "limits: {max_sim_time_s: -1, max_events: 5}", "instances: [{memory_gb: 4.5e-320}]",
	} {
		f.Add([]byte(bad + "\n"))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, "fuzz.yaml")
		if err == nil && s == nil {
			t.Fatal("nil scenario without error")
		}
		if err != nil {
			return
		}
		// Whatever parses holds no NaN or infinity, anywhere.
		checkFinite(t, reflect.ValueOf(s).Elem(), "scenario")
	})
}

// checkFinite fails on any NaN or infinite float reachable from v.
func checkFinite(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			t.Fatalf("%s = %v was accepted", path, f)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			checkFinite(t, v.Elem(), path)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				checkFinite(t, v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			checkFinite(t, v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

// TestDecodeErrorsNameTheField: every unknown key is reported, in file
// order, with its field path and the closest valid key at its level; a
// wrong type names the key and the type wanted; each at file:line:col.
func TestDecodeErrorsNameTheField(t *testing.T) {
	for in, want := range map[string]string{
		"engine: {max_num_sqes: 4}\n":          `s.yaml:1:10: engine.max_num_sqes: unknown field; did you mean max_num_seqs?`,
		"handoff:\n  polcy: pull\n":            `s.yaml:2:3: handoff.polcy: unknown field; did you mean policy?`,
		"engine: {max_num_seqs: \"lots\"}\n":   `s.yaml:1:24: engine.max_num_seqs: wrong type: want an integer, got lots`,
		"engine: {enable_prefix_caching: 3}\n": `s.yaml:1:33: engine.enable_prefix_caching: wrong type: want true or false, got 3`,
		"zzzzzzzzzzzzzzzzzz: 1\n":              `s.yaml:1:1: zzzzzzzzzzzzzzzzzz: unknown field (docs/scenario.md lists the fields)`,
		"handoff: {lease: 3}\ninstances: [{rol: decode}]\n": "s.yaml:1:11: handoff.lease: unknown field; did you mean lease_s?\n" +
			"s.yaml:2:14: instances[0].rol: unknown field; did you mean role?",
	} {
		_, err := Parse([]byte(in), "s.yaml")
		if err == nil || err.Error() != want {
			t.Errorf("%q: got %v, want %s", in, err, want)
		}
	}
}

// TestUnknownAcceleratorFieldNamesItsPage: an unknown field of an inline
// accelerator points at the page that lists an accelerator's fields.
func TestUnknownAcceleratorFieldNamesItsPage(t *testing.T) {
	_, err := Parse([]byte("accelerators: [{name: X, zzzzzzzzzzzzzz: 1}]\n"), "s.yaml")
	want := "accelerators[0].zzzzzzzzzzzzzz: unknown field (docs/accelerators.md, Your own accelerator, lists the fields)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want it to contain %q", err, want)
	}
}

// TestEveryFileErrorInOrder: one parse reports every problem of a file,
// unknown keys, wrong types, fractions for integers and invalid values
// alike, sorted by their place in the file, each with file:line:col and
// the field path; problems of fields the file does not set come last.
func TestEveryFileErrorInOrder(t *testing.T) {
	in := `seed: 0
engine:
  max_num_seqs: "lots"
  block_sise: 32
  gpu_memory_utilization: 1.5
instances:
  - {count: 2.5, rol: decode}
  - {tp: -1, engine: {enable_prefix_caching: maybe}}
router: fastest
workload:
  synthetic: true
handoff: {lease_s: -3}
`
	want := `f.yaml:1:7: seed: must be > 0 (got 0)
f.yaml:3:17: engine.max_num_seqs: wrong type: want an integer, got lots
f.yaml:4:3: engine.block_sise: unknown field; did you mean block_size?
f.yaml:5:27: engine.gpu_memory_utilization: must be in (0, 1] (got 1.5)
f.yaml:7:13: instances[0].count: must be a whole number (got 2.5); integer fields are never rounded
f.yaml:7:18: instances[0].rol: unknown field; did you mean role?
f.yaml:8:10: instances[1].tp: must be > 0 (got -1)
f.yaml:8:46: instances[1].engine.enable_prefix_caching: wrong type: want true or false, got maybe
f.yaml:9:9: router: must be round-robin, random, least-loaded, least-kv, prefix-affinity, kv-aware or power-of-two (got "fastest")
f.yaml:11:14: workload.synthetic: wrong type: want a mapping, got true
f.yaml:12:20: handoff.lease_s: must be a finite number`
	_, err := Parse([]byte(in), "f.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	got := err.Error()
	for i, w := range strings.Split(want, "\n") {
		lines := strings.Split(got, "\n")
		if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: want prefix %q\ngot:\n%s", i+1, w, got)
			break
		}
	}
}

// TestAnchorsAndMergeKeys: YAML anchors, aliases and merge keys are not
// mistaken for wrong types or unknown fields.
func TestAnchorsAndMergeKeys(t *testing.T) {
	in := "engine: &e {max_num_seqs: 64, block_size: 32}\ninstances:\n  - {engine: *e}\n  - engine:\n      <<: *e\n      long_prefill_token_threshold: 8\n"
	s, err := Parse([]byte(in), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Instances[0].Engine.MaxNumSeqs != 64 || s.Instances[1].Engine.LongPrefillTokenThreshold != 8 || s.Instances[1].Engine.BlockSize != 32 {
		t.Errorf("groups' engines %+v, %+v", *s.Instances[0].Engine, *s.Instances[1].Engine)
	}
}

// TestQuantizationFields: the formats parse, reach Format, and round-trip
// through the resolved scenario; when absent they stay out of it.
func TestQuantizationFields(t *testing.T) {
	s, err := Parse([]byte("quantization: fp8\nquantization_config: {weight_block_size: [128, 128]}\nkv_cache_dtype: fp8\npredictor: {format_scaling: roofline-ratio}\n"), "q.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Format()
	if err != nil || f.Variant() != "fp8-block128x128-kv-fp8_e4m3" {
		t.Fatalf("Format = %q, %v", f.Variant(), err)
	}
	y, err := Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(y, "resolved.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if y2, err := Marshal(back); err != nil || string(y2) != string(y) {
		t.Errorf("round trip changed the scenario (%v):\n%s\n---\n%s", err, y, y2)
	}
	d, err := LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	if y, err = Marshal(d); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"quantization", "kv_cache_dtype", "format_scaling"} {
		if strings.Contains(string(y), k) {
			t.Errorf("default resolved scenario mentions %s:\n%s", k, y)
		}
	}
}

// TestSpeculativeFields: engine.speculative is off by default, a group's
// block replaces the scenario's, and bad values name file:line:col, the
// field and the fix.
func TestSpeculativeFields(t *testing.T) {
	s, err := Parse([]byte("instances: [{name: p, role: prefill}, {name: d, role: decode, engine: {speculative: {method: ngram, num_speculative_tokens: 2, acceptance_rate: 0.6}}}]\n"), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Engine.Speculative != nil || s.Instances[0].Merged(s.Engine).Speculative != nil {
		t.Error("speculative decoding on by default")
	}
	if sp := s.Instances[1].Merged(s.Engine).Speculative; sp == nil || sp.Method != "ngram" || sp.NumSpeculativeTokens != 2 || *sp.AcceptanceRate != 0.6 {
		t.Errorf("decode group's speculative block %+v", sp)
	}
	for in, want := range map[string]string{
		"engine: {speculative: {method: eagle, num_speculative_tokens: 17, acceptance_rate: 0.5}}\n":                      "s.yaml:1:63: engine.speculative.num_speculative_tokens: must be in [1, 16] (got 17)",
		"engine: {speculative: {method: draft_model, draft_model: meta-llama/Llama-3.1-8B, num_speculative_tokens: 2}}\n": "engine.speculative: method draft_model has no default acceptance",
		"engine: {speculative: {method: ngram, num_speculative_tokens: 2, acceptance: trace, draft_model: x}}\n":          "engine.speculative.draft_model: is only used with method draft_model",
		"engine: {speculative: {method: eagle, num_speculative_tokens: 2, acceptance_per_position: [0.9, 1.5]}}\n":        "engine.speculative.acceptance_per_position[1]: must be in [0, 1] (got 1.5)",
	} {
		_, err := Parse([]byte(in), "s.yaml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %s", in, err, want)
		}
	}
}

// TestPDSpecMismatch: in P/D the prefill side computes and hands over the
// proposer's KV of the prompt, so every group must have the same
// model-based proposer (method and draft model), as vLLM's NIXL handshake
// demands; n-gram (no KV), k and the acceptance may differ.
func TestPDSpecMismatch(t *testing.T) {
	eagle := "{method: eagle, num_speculative_tokens: 3, acceptance_rate: 0.7}"
	for _, tc := range []struct {
		name, p, d, want string
	}{
		{"decode only", "", eagle, "s.yaml:1:85: instances[1].engine.speculative: group d (decode) has eagle but group p (prefill) has no proposer KV (speculation off or ngram)"},
		{"prefill only", eagle, "", "instances[1].engine: group d (decode) has no proposer KV (speculation off or ngram) but group p (prefill) has eagle"},
		{"eagle vs mtp", eagle, "{method: mtp, num_speculative_tokens: 3, acceptance_rate: 0.7}", "group d (decode) has mtp but group p (prefill) has eagle"},
		{"two drafts", "{method: draft_model, draft_model: a, num_speculative_tokens: 3, acceptance_rate: 0.7}", "{method: draft_model, draft_model: b, num_speculative_tokens: 3, acceptance_rate: 0.7}",
			"has draft_model b but group p (prefill) has draft_model a"},
		{"same head, other k and rate", eagle, "{method: eagle, num_speculative_tokens: 2, acceptance_rate: 0.5}", ""},
		{"ngram on decode only", "", "{method: ngram, num_speculative_tokens: 3, acceptance_rate: 0.5}", ""},
		{"neither", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group := func(name, role, sp string) string {
				if sp == "" {
					return fmt.Sprintf("{name: %s, role: %s}", name, role)
				}
				return fmt.Sprintf("{name: %s, role: %s, engine: {speculative: %s}}", name, role, sp)
			}
			in := "instances: [" + group("p", "prefill", tc.p) + ", " + group("d", "decode", tc.d) + "]\n"
			_, err := Parse([]byte(in), "s.yaml")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("%s: %v", in, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("%s: got %v, want %s", in, err, tc.want)
			}
		})
	}
	// One scenario-wide block covers every group.
	if _, err := Parse([]byte("engine: {speculative: "+eagle+"}\ninstances: [{name: p, role: prefill}, {name: d, role: decode}]\n"), "s.yaml"); err != nil {
		t.Fatal(err)
	}
}

// TestContentlessFileIsEmpty: a scenario file holding only comments,
// document markers or null sets nothing: it gives the defaults, as an empty
// file does, instead of a zero scenario failing validation field by field.
func TestContentlessFileIsEmpty(t *testing.T) {
	want, err := Parse(nil, "empty.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{"# only a comment\n", "---\n", "# a\n---\n# b\n", "---\n---\n", "~\n", "null\n", "  \n# indented\n"} {
		got, err := Parse([]byte(data), "s.yaml")
		if err != nil {
			t.Errorf("%q: %v", data, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: scenario differs from an empty file's", data)
		}
	}
}

// TestNonFiniteAndOutOfRangeNumbers: NaN and the infinities are refused in
// every float field of a file, named by file:line:col and field path (the
// handoff offload and kv_tiers fields used to take them), and so are
// whole numbers beyond an integer field's range, which used to wrap (a
// seed of 2^64 + 1 ran with another seed). Validate refuses NaN in those
// fields when they are set other than by a file.
func TestNonFiniteAndOutOfRangeNumbers(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"handoff: {offload_pinned_after_s: .nan}\n", "s.yaml:1:35: handoff.offload_pinned_after_s: must be a finite number"},
		{"handoff: {offload_pinned_after_s: .inf}\n", "s.yaml:1:35: handoff.offload_pinned_after_s: must be a finite number"},
		{"handoff: {offload_pinned_max_gb: .nan}\n", "s.yaml:1:34: handoff.offload_pinned_max_gb: must be a finite number"},
		{"kv_tiers: {pcie_gbps: .inf}\n", "s.yaml:1:23: kv_tiers.pcie_gbps: must be a finite number"},
		{"kv_tiers: {host: {read_gbps: -.inf}}\n", "s.yaml:1:30: kv_tiers.host.read_gbps: must be a finite number"},
		{"kv_tiers: {disk: {capacity_gb: 10, latency_us: .nan}}\n", "s.yaml:1:48: kv_tiers.disk.latency_us: must be a finite number"},
		{"seed: 18446744073709551617\n", "s.yaml:1:7: seed: 18446744073709551617 is out of range (at most 18446744073709551615)"},
		{"engine: {max_num_seqs: -9.3e18}\n", "engine.max_num_seqs: -9.3e18 is out of range"},
	} {
		_, err := Parse([]byte(tc.yaml), "s.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.yaml, err, tc.want)
		}
	}
	if s, err := Parse([]byte("seed: 18446744073709551615\n"), "s.yaml"); err != nil || s.Seed != math.MaxUint64 {
		t.Errorf("the largest seed: %v", err)
	}
	s, err := Parse([]byte("instances: [{role: prefill}, {role: decode}]\nhandoff: {policy: pull}\nkv_tiers: {}\n"), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lat := math.NaN()
	s.Handoff.OffloadPinnedAfterS, s.Handoff.OffloadPinnedMaxGB = math.NaN(), math.NaN()
	s.KVTiers.PCIeGBps, s.KVTiers.PCIeLatencyUs, s.KVTiers.Host.ReadGBps = math.NaN(), &lat, math.Inf(1)
	err = s.Validate()
	for _, f := range []string{"handoff.offload_pinned_after_s", "handoff.offload_pinned_max_gb", "kv_tiers.pcie_gbps", "kv_tiers.pcie_latency_us", "kv_tiers.host.read_gbps"} {
		if err == nil || !strings.Contains(err.Error(), f+":") {
			t.Errorf("Validate with NaN in %s: %v", f, err)
		}
	}
}

// TestSecondDocument: a scenario file holds one YAML document. A second
// one with content is an error at its line (the decoder would ignore it);
// empty documents beside the one with content change nothing, even
// before it (the decoder would take the empty first one).
func TestSecondDocument(t *testing.T) {
	_, err := Parse([]byte("seed: 3\n---\nseed: 4\n"), "s.yaml")
	if err == nil || !strings.Contains(err.Error(), "s.yaml:3:") || !strings.Contains(err.Error(), "a second YAML document") {
		t.Errorf("two documents: %v", err)
	}
	for _, data := range []string{"~\n---\nseed: 5\n", "seed: 5\n---\n", "# c\n---\nseed: 5\n---\n# d\n"} {
		s, err := Parse([]byte(data), "s.yaml")
		if err != nil || s.Seed != 5 {
			t.Errorf("%q: %v, want seed 5", data, err)
		}
	}
	if _, err := Parse([]byte("~\n---\nbogus: 1\n"), "s.yaml"); err == nil || !strings.Contains(err.Error(), "s.yaml:3:1: bogus: unknown field") {
		t.Errorf("an unknown field after an empty document: %v", err)
	}
}
