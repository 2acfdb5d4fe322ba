package config

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/perf"
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
		y2, _ := Marshal(back)
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
		{"bad utilisation", "engine: {gpu_memory_utilization: 1.5}\n", []string{"engine.gpu_memory_utilization"}},
		{"bad slo target", "slo:\n  percentiles: [{metric: ttft, percentile: 98, max_ms: 10}]\n", []string{"slo.percentiles[0].percentile"}},
		{"trace and nothing", "workload: {trace: \"\"}\n", []string{"workload"}},
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
	m := s.Instances[0].merged(s.Engine)
	if m.MaxNumSeqs != 64 || m.NumGPUBlocks != 500 || *m.PrefixCaching || !*m.ChunkedPrefill {
		t.Errorf("merged engine: %+v", m)
	}
}

// TestRooflineOnEveryAccelerator: every catalog accelerator builds and
// serves a small workload with the roofline predictor, and faster memory
// gives faster decoding.
func TestRooflineOnEveryAccelerator(t *testing.T) {
	cat, err := hw.Default()
	if err != nil {
		t.Fatal(err)
	}
	tpot := map[string]float64{}
	for _, a := range cat.All() {
		s, err := Parse([]byte("predictor: {kind: roofline}\nhardware: "+a.Name+"\nworkload: {limit: 40}\ncheck_invariants: true\n"), a.Name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Build(s, Source{})
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		sim, closer, err := b.NewSim(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Run(); err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		closer.Close()
		done, seen := sim.Progress()
		if done != 40 || seen != 40 {
			t.Fatalf("%s: %d of %d requests ended", a.Name, done, seen)
		}
		// One decode step of 8 sequences at 1,000 tokens of context.
		tpot[a.Name] = float64(b.preds[0].StepTime(&perf.Batch{NumDecode: 8, DecodeKVSum: 8000, DecodeKVMax: 1000, DecodeKVMin: 1000}))
	}
	if !(tpot["B200"] < tpot["H200"] && tpot["H200"] < tpot["H100"] && tpot["H100"] < tpot["A100"]) {
		t.Errorf("decode step times must follow memory bandwidth: %v", tpot)
	}
}

func TestModelThatDoesNotFitNamesChoices(t *testing.T) {
	s, err := Parse([]byte("predictor: {kind: roofline}\nmodel: meta-llama/Llama-3.1-70B\nhardware: H100\n"), "big.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(s, Source{})
	if err == nil || !strings.Contains(err.Error(), "it fits with tp=4 on H100") || !strings.Contains(err.Error(), "B200") {
		t.Fatalf("want the nearest valid choices, got %v", err)
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

// buildAndRun builds a scenario, runs it with invariant checks and returns
// the built scenario and the number of requests that ended.
func buildAndRun(t *testing.T, yaml string) (*Built, int64) {
	t.Helper()
	s, err := Parse([]byte(yaml), "pp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(s, Source{})
	if err != nil {
		t.Fatal(err)
	}
	sim, closer, err := b.NewSim(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	done, seen := sim.Progress()
	if done != seen {
		t.Fatalf("%d of %d requests ended", done, seen)
	}
	return b, done
}

// TestPipelineParallelGroup: a pp=2 instance builds with the pipeline
// configured in its engine and serves a workload, with more KV blocks
// than pp=1 (half the weights and half the layers' KV per GPU).
func TestPipelineParallelGroup(t *testing.T) {
	one, _ := buildAndRun(t, "workload: {limit: 40}\ncheck_invariants: true\ninstances: [{}]\n")
	two, done := buildAndRun(t, "workload: {limit: 40}\ncheck_invariants: true\ninstances: [{pp: 2}]\n")
	if done != 40 {
		t.Fatalf("%d requests ended, want 40", done)
	}
	cfg := two.Engines[0].Config()
	if cfg.PipelineParallel != 2 || cfg.PPSend.BytesPerToken != int64(two.Model.HiddenSize)*2 || cfg.PPSend.Bandwidth <= 0 {
		t.Fatalf("pipeline not configured: %+v", cfg)
	}
	if one.Engines[0].Config().PipelineParallel > 1 {
		t.Fatal("pp defaults to 1")
	}
	if b1, b2 := one.Instances[0].NumBlocks, two.Instances[0].NumBlocks; b2 < 2*b1 || two.Instances[0].PP != 2 {
		t.Fatalf("pp=2 holds %d blocks, pp=1 %d: want at least twice", b2, b1)
	}
	// Disaggregated serving with a pipelined prefill instance.
	buildAndRun(t, "predictor: {kind: roofline}\nworkload: {limit: 40}\ncheck_invariants: true\ninstances:\n  - {role: prefill, pp: 2}\n  - {role: decode}\n")
}

// TestPipelineParallelFitsLargerModel: a model whose weights exceed one GPU
// does not build at tp=1 but does split over two pipeline stages.
func TestPipelineParallelFitsLargerModel(t *testing.T) {
	const base = "predictor: {kind: roofline}\nmodel: meta-llama/Llama-3.1-8B\nhardware: H100\nworkload: {limit: 20}\ncheck_invariants: true\n"
	s, err := Parse([]byte(base+"instances: [{memory_gb: 16}]\n"), "small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(s, Source{}); err == nil {
		t.Fatal("Llama-3.1-8B must not fit a 16 GB GPU at tp=1, pp=1")
	}
	if _, err := Parse([]byte(base+"instances: [{pp: 0}]\n"), "bad.yaml"); err == nil || !strings.Contains(err.Error(), "instances[0].pp") {
		t.Fatalf("pp: 0 must be rejected, got %v", err)
	}
	b, done := buildAndRun(t, base+"instances: [{memory_gb: 16, pp: 2}]\n")
	if done != 20 || b.Instances[0].NumBlocks <= 0 {
		t.Fatalf("%d requests ended, %d blocks", done, b.Instances[0].NumBlocks)
	}
}

// TestEveryRouterServesEveryRequest: each arrival router places requests
// on a 3-instance cluster (and on the prefill side of a P/D one) with the
// invariants on; random and power-of-two are deterministic per seed.
func TestEveryRouterServesEveryRequest(t *testing.T) {
	for _, router := range []string{"round-robin", "random", "least-loaded", "least-kv", "prefix-affinity", "power-of-two"} {
		for _, layout := range []string{"instances: [{count: 3}]", "instances: [{role: prefill, count: 2}, {role: decode}]"} {
			y := "router: " + router + "\n" + layout + "\nworkload: {limit: 60}\ncheck_invariants: true\n"
			var first []int
			for rep := 0; rep < 2; rep++ {
				s, err := Parse([]byte(y), router)
				if err != nil {
					t.Fatal(err)
				}
				b, err := Build(s, Source{})
				if err != nil {
					t.Fatal(err)
				}
				sim, closer, err := b.NewSim(nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := sim.Run(); err != nil {
					t.Fatalf("%s %s: %v", router, layout, err)
				}
				closer.Close()
				if done, seen := sim.Progress(); done != 60 || seen != 60 {
					t.Fatalf("%s %s: %d of %d ended", router, layout, done, seen)
				}
				var steps []int
				for _, e := range sim.Engines() {
					steps = append(steps, int(e.Pool().HitRate()*1e6))
				}
				if rep == 0 {
					first = steps
				} else if fmt.Sprint(first) != fmt.Sprint(steps) {
					t.Fatalf("%s %s: not deterministic: %v vs %v", router, layout, first, steps)
				}
			}
		}
	}
}
