package runner

import (
	"bytes"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
)

// TestDecodeLaneOutputsIdentical runs the golden scenarios, a small pool
// that preempts often, a served endpoint's front end (two API servers,
// chunks of two tokens) and the multi-turn chat examples (shared
// prefixes, KV tiers),
// with the decode lane, the anonymous tails and the steady runs on, and
// twice as references: all three off (engine.Config.NoDecodeLane: every
// request visited in every step; NoAnonymousTails: every KV block named;
// cluster.Config.NoSteadyRuns: every step end through the event queue),
// and the steady runs alone off. Every output must be byte for byte
// equal: the lane, with the block commits it makes itself, the tails and
// the steady runs are speed devices only.
func TestDecodeLaneOutputsIdentical(t *testing.T) {
	scenarios := append(goldenScenarios[:len(goldenScenarios):len(goldenScenarios)],
		struct{ name, yaml string }{"tight-pool", `
engine: {num_gpu_blocks: 250, block_size: 8, max_num_seqs: 48}
workload:
  synthetic:
    requests: 300
    arrival: {kind: poisson, rate: 25}
    input: {kind: lognormal, mean: 300, sigma: 1.0, max: 1500}
    output: {kind: lognormal, mean: 200, sigma: 1.0, max: 1200}
`}, struct{ name, yaml string }{"front-end", `
engine: {max_num_seqs: 64}
frontend: {api_server_count: 2, stream_interval: 2}
workload:
  synthetic:
    requests: 400
    arrival: {kind: poisson, rate: 8}
    input: {kind: lognormal, mean: 500, sigma: 1.0, max: 4000}
    output: {kind: lognormal, mean: 200, sigma: 1.0, max: 1200}
`})
	build := func(t *testing.T, name, y string) *assemble.Built {
		if !strings.HasPrefix(name, "chat-") {
			return buildYAML(t, name+".yaml", y+"\ncheck_invariants: true\n")
		}
		s, src, err := config.Load("../../examples/" + name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		s.CheckInvariants = true
		b, err := assemble.Build(s, src)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	scenarios = append(scenarios, struct{ name, yaml string }{"chat-multiturn", ""}, struct{ name, yaml string }{"chat-tiers", ""})
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			onRes, on := runOutputs(t, build(t, sc.name, sc.yaml))
			refs := []struct {
				what string
				b    *assemble.Built
			}{
				{"the decode lane, the tails and the steady runs off", build(t, sc.name, sc.yaml).WithoutDecodeLane().WithoutAnonymousTails().WithoutSteadyRuns()},
				{"the steady runs off", build(t, sc.name, sc.yaml).WithoutSteadyRuns()},
			}
			for _, ref := range refs {
				offRes, off := runOutputs(t, ref.b)
				if onRes.String() != offRes.String() {
					t.Errorf("summaries differ with %s:\n%s\n----\n%s", ref.what, onRes.String(), offRes.String())
				}
				for name, data := range on {
					if !bytes.Equal(data, off[name]) {
						t.Errorf("%s differs with %s", name, ref.what)
					}
				}
			}
			if onRes.Finished == 0 {
				t.Fatal("nothing finished")
			}
		})
	}
}
