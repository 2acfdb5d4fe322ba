package runner

import (
	"bytes"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
)

// TestDecodeLaneOutputsIdentical runs the golden scenarios, a small pool
// that preempts often, and the multi-turn chat examples (shared prefixes,
// KV tiers),
// with the decode lane and the anonymous tails on and off
// (engine.Config.NoDecodeLane: every request visited in every step;
// NoAnonymousTails: every KV block named) and requires every output byte
// for byte equal. The lane, with the block commits it makes itself, and
// the tails are speed devices only.
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
			b := build(t, sc.name, sc.yaml).WithoutDecodeLane().WithoutAnonymousTails()
			offRes, off := runOutputs(t, b)
			if onRes.String() != offRes.String() {
				t.Errorf("summaries differ:\n%s\n----\n%s", onRes.String(), offRes.String())
			}
			for name, data := range on {
				if !bytes.Equal(data, off[name]) {
					t.Errorf("%s differs with the decode lane off", name)
				}
			}
			if onRes.Finished == 0 {
				t.Fatal("nothing finished")
			}
		})
	}
}
