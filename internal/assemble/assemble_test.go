package assemble

import (
	"fmt"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/perf"
)

func TestRooflineOnEveryAccelerator(t *testing.T) {
	cat, err := hw.Default()
	if err != nil {
		t.Fatal(err)
	}
	tpot := map[string]float64{}
	for _, a := range cat.All() {
		b := mustBuild(t, a.Name, "predictor: {kind: roofline}\nhardware: "+a.Name+"\nworkload: {limit: 40}\ncheck_invariants: true\n")
		if done := runToEnd(t, a.Name, b); done != 40 {
			t.Fatalf("%s: %d requests ended, want 40", a.Name, done)
		}
		// One decode step of 8 sequences at 1,000 tokens of context.
		tpot[a.Name] = float64(b.instances[0].Predictor.StepTime(&perf.Batch{NumDecode: 8, DecodeKVSum: 8000, DecodeKVMax: 1000, DecodeKVMin: 1000}))
	}
	if !(tpot["B200"] < tpot["H200"] && tpot["H200"] < tpot["H100"] && tpot["H100"] < tpot["A100"]) {
		t.Errorf("decode step times must follow memory bandwidth: %v", tpot)
	}
}

func TestModelThatDoesNotFitNamesChoices(t *testing.T) {
	s, err := config.Parse([]byte("predictor: {kind: roofline}\nmodel: meta-llama/Llama-3.1-70B\nhardware: H100\n"), "big.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(s, config.Source{})
	if err == nil || !strings.Contains(err.Error(), "it fits with tp=2 on H100") || !strings.Contains(err.Error(), "B200") {
		t.Fatalf("want the nearest valid choices, got %v", err)
	}
}

// mustBuild parses the scenario document y (named name in errors) and
// builds it.
func mustBuild(t *testing.T, name, y string) *Built {
	t.Helper()
	s, err := config.Parse([]byte(y), name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(s, config.Source{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// runToEnd simulates b (named name in errors), requires every request
// seen to have ended, and returns how many did.
func runToEnd(t *testing.T, name string, b *Built) int64 {
	t.Helper()
	sim, closer, err := b.NewSim(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if _, err := sim.Run(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	done, seen := sim.Progress()
	if done != seen {
		t.Fatalf("%s: %d of %d requests ended", name, done, seen)
	}
	return done
}

func buildAndRun(t *testing.T, yaml string) (*Built, int64) {
	t.Helper()
	b := mustBuild(t, "pp.yaml", yaml)
	return b, runToEnd(t, "pp.yaml", b)
}

func TestPipelineParallelGroup(t *testing.T) {
	one, _ := buildAndRun(t, "workload: {limit: 40}\ncheck_invariants: true\ninstances: [{}]\n")
	two, done := buildAndRun(t, "workload: {limit: 40}\ncheck_invariants: true\ninstances: [{pp: 2}]\n")
	if done != 40 {
		t.Fatalf("%d requests ended, want 40", done)
	}
	cfg := two.instances[0].Engine
	if cfg.PipelineParallel != 2 || cfg.PPSend.BytesPerToken != int64(two.model.HiddenSize)*2 || cfg.PPSend.Bandwidth <= 0 {
		t.Fatalf("pipeline not configured: %+v", cfg)
	}
	if one.instances[0].Engine.PipelineParallel > 1 {
		t.Fatal("pp defaults to 1")
	}
	if b1, b2 := one.instances[0].NumBlocks, two.instances[0].NumBlocks; b2 < 2*b1 || two.instances[0].PP != 2 {
		t.Fatalf("pp=2 holds %d blocks, pp=1 %d: want at least twice", b2, b1)
	}
	// Disaggregated serving with a pipelined prefill instance.
	buildAndRun(t, "predictor: {kind: roofline}\nworkload: {limit: 40}\ncheck_invariants: true\ninstances:\n  - {role: prefill, pp: 2}\n  - {role: decode}\n")
}

func TestPipelineParallelFitsLargerModel(t *testing.T) {
	const base = "predictor: {kind: roofline}\nmodel: meta-llama/Llama-3.1-8B\nhardware: H100\nworkload: {limit: 20}\ncheck_invariants: true\n"
	s, err := config.Parse([]byte(base+"instances: [{memory_gb: 16}]\n"), "small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(s, config.Source{}); err == nil {
		t.Fatal("Llama-3.1-8B must not fit a 16 GB GPU at tp=1, pp=1")
	}
	if _, err := config.Parse([]byte(base+"instances: [{pp: 0}]\n"), "bad.yaml"); err == nil || !strings.Contains(err.Error(), "instances[0].pp") {
		t.Fatalf("pp: 0 must be rejected, got %v", err)
	}
	b, done := buildAndRun(t, base+"instances: [{memory_gb: 16, pp: 2}]\n")
	if done != 20 || b.instances[0].NumBlocks <= 0 {
		t.Fatalf("%d requests ended, %d blocks", done, b.instances[0].NumBlocks)
	}
}

func TestEveryRouterServesEveryRequest(t *testing.T) {
	for _, router := range []string{"round-robin", "random", "least-loaded", "least-kv", "prefix-affinity", "kv-aware", "power-of-two"} {
		for _, layout := range []string{"instances: [{count: 3}]", "instances: [{role: prefill, count: 2}, {role: decode}]"} {
			y := "router: " + router + "\n" + layout + "\nworkload: {limit: 60}\ncheck_invariants: true\n"
			var first []int
			for rep := 0; rep < 2; rep++ {
				b := mustBuild(t, router, y)
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

// TestUnknownRouterIsAnError: a scenario whose router is none of
// config.Routers (built in code, past Validate) is refused by Build, not
// served round-robin; every listed router builds and runs.
func TestUnknownRouterIsAnError(t *testing.T) {
	s, err := config.Parse([]byte("workload: {limit: 5}\n"), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s.Router = "fastest"
	if _, err := Build(s, config.Source{}); err == nil || !strings.Contains(err.Error(), `router: unknown router "fastest"`) {
		t.Fatalf("unknown router: %v", err)
	}
	for _, r := range config.Routers {
		b := mustBuild(t, string(r)+".yaml", "workload: {limit: 5}\ninstances: [{count: 2}]\nrouter: "+string(r)+"\n")
		if done := runToEnd(t, string(r), b); done != 5 {
			t.Errorf("%s: %d requests ended, want 5", r, done)
		}
	}
}

// TestTierErrorsNameTheField: the KV tiers' errors found while building
// start with the scenario field at fault, once.
func TestTierErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"kv_tiers: {write_buffer_mb: 0.001}\n", "kv_tiers.write_buffer_mb: 1000 bytes cannot hold one"},
		{"kv_tiers: {host: {capacity_gb: 0.000001}}\n", "kv_tiers.host: node 0's host tier of 1000 bytes holds no chunk"},
		{"kv_tiers: {disk: {capacity_gb: 0.000001}}\n", "kv_tiers.disk.capacity_gb: node 0's disk tier"},
	} {
		s, err := config.Parse([]byte(tc.yaml+"workload: {limit: 3}\n"), "k.yaml")
		if err != nil {
			t.Fatal(err)
		}
		_, err = Build(s, config.Source{})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want it to start with %q", tc.yaml, err, tc.want)
		}
	}
}
