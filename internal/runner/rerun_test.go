package runner

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/metrics"
)

// TestBuiltRunsTwiceIdentically: one built scenario run twice gives
// byte-identical outputs. A run must not leave state behind in the built
// scenario (warm prefix caches, router cursors, random streams).
func TestBuiltRunsTwiceIdentically(t *testing.T) {
	cases := map[string]string{
		"mixed prefix cache": "workload: {trace: builtin:example_trace}\ninstances: [{count: 2}]\nrouter: random\ncheck_invariants: true\n",
		"sharegpt":           "workload: {limit: 120}\nrouter: power-of-two\ninstances: [{count: 2}]\ncheck_invariants: true\n",
		"pd":                 "workload: {limit: 120}\ninstances: [{role: prefill, count: 2}, {role: decode, count: 2}]\nhandoff: {placement: retry}\ncheck_invariants: true\n",
		// Host and disk tiers shared by two instances, loads, stores and
		// spills in flight across the run's end.
		"kv tiers": "workload: {chat: {conversations: 40, arrival: {kind: poisson, rate: 2}, turns: {kind: uniform, min: 1, max: 4}, " +
			"think_ms: {kind: fixed, mean: 2000}, system_prompts: 2, system_prompt: {kind: fixed, mean: 600}, message: {kind: fixed, mean: 300}, " +
			"output: {kind: fixed, mean: 100}}}\nengine: {num_gpu_blocks: 600}\ninstances: [{count: 2}]\nrouter: kv-aware\n" +
			"kv_tiers: {host: {capacity_gb: 2}, disk: {capacity_gb: 100}}\ncheck_invariants: true\n",
		// Losses by time and by seeded MTBF with restarts, a straggler,
		// KV load failures, a degraded link and autoscaled pools.
		"pd faults autoscaler": "workload: {limit: 200}\ninstances: [{name: p, role: prefill, count: 2}, {name: d, role: decode, count: 3}]\n" +
			"faults: {losses: [{at_s: 3, instance: 'd[0]'}, {at_s: 6, instance: 'p[1]'}], mtbf: [{group: d, hours: 0.002}], restart: {provision_s: 2}, " +
			"stragglers: [{instance: 'd[1]', start_s: 1, end_s: 9, factor: 2}], transfers: {failure_rate: 0.1}, " +
			"link_degradation: [{instance: 'p[0]', start_s: 2, end_s: 5, factor: 0.1}]}\n" +
			"autoscaler: {interval_s: 1, pools: [{group: d, min: 1, max: 3, initial: 2, target: 2, provision_s: 3, scale_down_cooldown_s: 5}]}\ncheck_invariants: true\n",
		"pd offload": "workload: {limit: 200}\ninstances: [{role: prefill, count: 1}, {role: decode, count: 1, engine: {num_gpu_blocks: 3000}}]\n" +
			"handoff: {offload_pinned_after_s: 0.2}\nkv_tiers: {}\ncheck_invariants: true\n",
	}
	for name, y := range cases {
		t.Run(name, func(t *testing.T) {
			b := buildYAML(t, name, y)
			_, first := runOutputs(t, b)
			_, second := runOutputs(t, b)
			for k := range first {
				if !bytes.Equal(first[k], second[k]) {
					t.Errorf("%s differs between two runs of one built scenario", k)
				}
			}
		})
	}
}

// runOutputs runs b once and returns its summary and every output's bytes
// by file name (summary.json is the summary as indented JSON).
func runOutputs(t *testing.T, b *assemble.Built) (metrics.Result, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	opts := Options{
		RequestsCSV:   filepath.Join(dir, "requests.csv"),
		RequestsJSONL: filepath.Join(dir, "requests.jsonl"),
		Series:        filepath.Join(dir, "timeseries.csv"),
	}
	res, err := Run(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	if out["summary.json"], err = json.MarshalIndent(res, "", "  "); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{opts.RequestsCSV, opts.RequestsJSONL, opts.Series} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			t.Fatalf("%s is empty", p)
		}
		out[filepath.Base(p)] = data
	}
	return res, out
}
