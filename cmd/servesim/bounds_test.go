package main

import (
	"strings"
	"testing"
)

// TestBadNumbers: every value that is NaN, infinite, a fraction in an
// integer field, or beyond the simulator's fixed bounds is bad input: exit
// 2 and one line naming the field, never a stall, a panic or a huge
// allocation.
func TestBadNumbers(t *testing.T) {
	dir := t.TempDir()
	const small = "workload: {synthetic: {requests: 2, arrival: {kind: constant, rate: 10}, input: {kind: fixed, mean: 50}, output: {kind: fixed, mean: 3}}}\n"
	tests := []struct {
		name, yaml string
		args       []string
		want       []string
	}{
		{"blocks beyond bound", "engine: {num_gpu_blocks: 9223372036854775807}\n" + small, nil, []string{"engine.num_gpu_blocks", "at most"}},
		{"infinite link latency", "links: {latency_us: .inf}\n" + small, nil, []string{"links.latency_us", "+Inf"}},
		{"NaN link bandwidth", "links: {bandwidth_gbps: .nan}\n" + small, nil, []string{"links.bandwidth_gbps", "NaN"}},
		{"huge tp latency", "links: {tp_latency_us: 1e300}\n" + small, nil, []string{"links.tp_latency_us"}},
		{"gamma cv", "workload: {synthetic: {requests: 2, arrival: {kind: gamma, rate: 10, cv: 1e155}, input: {kind: fixed, mean: 50}, output: {kind: fixed, mean: 3}}}\n", nil, []string{"arrival.cv", "(0, 100]"}},
		{"NaN memory utilization", "engine: {gpu_memory_utilization: .nan}\n" + small, nil, []string{"engine.gpu_memory_utilization", "NaN"}},
		{"fraction in integer field", "engine: {max_num_seqs: 1.5}\n" + small, nil, []string{":1:", "engine.max_num_seqs", "whole number"}},
		{"fraction in group integer", "instances: [{count: 2.5}]\n" + small, nil, []string{"instances[0].count", "whole number"}},
		{"fraction in synthetic integer", "workload: {synthetic: {requests: 2.5, arrival: {kind: constant, rate: 10}, input: {kind: fixed, mean: 50}, output: {kind: fixed, mean: 3}}}\n", nil, []string{"workload.synthetic.requests", "whole number"}},
		{"NaN in integer field", "engine: {max_num_seqs: .nan}\n" + small, nil, []string{"1:"}},
		{"step overhead overflow", "predictor: {step_overhead_us: 1e300}\n" + small, nil, []string{"predictor.step_overhead_us"}},
		{"negative collective scale", "predictor: {collective_scale: -1}\n" + small, nil, []string{"predictor.collective_scale", "[0, 100]"}},
		{"lease overflow", "handoff: {lease_s: 1e300}\n" + small, nil, []string{"handoff.lease_s"}},
		{"retry infinite", "handoff: {retry_after_s: .inf}\n" + small, nil, []string{"handoff.retry_after_s"}},
		{"prefill queue infinite", "handoff: {max_prefill_queue_s: .inf}\n" + small, nil, []string{"handoff.max_prefill_queue_s"}},
		{"push buffer NaN", "handoff: {push_buffer_fraction: .nan}\n" + small, nil, []string{"handoff.push_buffer_fraction"}},
		{"memory overflow", "instances: [{memory_gb: 1e300}]\n" + small, nil, []string{"instances[0].memory_gb"}},
		{"memory NaN", "instances: [{memory_gb: .nan}]\n" + small, nil, []string{"instances[0].memory_gb"}},
		{"SLO NaN", "slo: {ttft_ms: .nan}\n" + small, nil, []string{"slo.ttft_ms"}},
		{"SLO target infinite", "slo: {percentiles: [{metric: ttft, percentile: 99, max_ms: .inf}]}\n" + small, nil, []string{"slo.percentiles[0].max_ms"}},
		{"time scale overflow", "workload: {time_scale: 1e300}\n", nil, []string{"workload.time_scale"}},
		{"too many instances", "instances: [{count: 100000000}]\n" + small, nil, []string{"instances", "4096"}},
		{"pp beyond layers", "instances: [{pp: 64}]\n" + small, nil, []string{"instances[0].pp", "32 layers"}},
		{"synthetic arrivals beyond the clock", "workload: {synthetic: {requests: 3, arrival: {kind: constant, rate: 1e-300}, input: {kind: fixed, mean: 50}, output: {kind: fixed, mean: 3}}}\n", nil, []string{"arrival.rate"}},
		{"chunking off, budget below max_model_len", "engine: {enable_chunked_prefill: false, max_num_batched_tokens: 256}\n" + small, nil,
			[]string{"engine", "max_num_batched_tokens 256", "max_model_len 131072", "enable_chunked_prefill"}},
		{"budget below max_num_seqs", "engine: {max_num_batched_tokens: 16, max_num_seqs: 64}\n" + small, nil, []string{"max_num_batched_tokens 16", "max_num_seqs 64"}},
		{"group budget below max_num_seqs", "instances: [{engine: {max_num_seqs: 16384}}]\n" + small, nil, []string{"instances[0].engine", "max_num_seqs 16384"}},
		{"fraction in a grid's integer field", "", []string{"sweep", "--grid", "FRACGRID", "-q"}, []string{"grid.yaml:1:", "engine.max_num_seqs", "whole number"}},
		{"shard count overflow", "", []string{"sweep", "--grid", "GRID", "--shard", "1/9223372036854775807", "--list"}, []string{"--shard", "n must be in"}},
	}
	grid := write(t, dir, "grid.yaml", "engine.max_num_seqs: [64, 128]\n")
	fracGrid := write(t, t.TempDir(), "grid.yaml", "engine.max_num_seqs: [64, 1.5]\n")
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if args == nil {
				args = []string{"run", "-q", "-c", write(t, dir, "s"+string(rune('a'+i))+".yaml", tc.yaml)}
			}
			for j, a := range args {
				switch a {
				case "GRID":
					args[j] = grid
				case "FRACGRID":
					args[j] = fracGrid
				}
			}
			code, _, stderr := run(t, args...)
			if code != 2 {
				t.Fatalf("exit code %d, want 2; stderr: %s", code, stderr)
			}
			oneLineError(t, stderr, tc.want...)
		})
	}
}

// TestLongPromptFailsAtArrival: with chunked prefill off and a step budget
// equal to max_model_len, a prompt longer than max_model_len fails at
// arrival with the reason, and the other requests finish.
func TestLongPromptFailsAtArrival(t *testing.T) {
	dir := t.TempDir()
	trace := write(t, dir, "t.jsonl",
		`{"input_toks": 100, "output_toks": 5, "arrival_time_ns": 0}`+"\n"+
			`{"input_toks": 3000, "output_toks": 5, "arrival_time_ns": 1000}`+"\n")
	sc := write(t, dir, "s.yaml", "engine: {enable_chunked_prefill: false, max_num_batched_tokens: 2048, max_model_len: 2048}\n")
	code, stdout, stderr := run(t, "run", "-q", "-c", sc, "--workload", trace, "--requests-csv", dir+"/r.csv", "--check-invariants")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "Failed") && !strings.Contains(stdout, "failed") {
		t.Fatalf("summary does not report the failed request:\n%s", stdout)
	}
	csv := string(readFile(t, dir+"/r.csv"))
	if !strings.Contains(csv, "exceeds max_model_len 2048") {
		t.Fatalf("requests.csv lacks the reason:\n%s", csv)
	}
}

// TestToolTimeOverflowIsBadInput: a session whose tool time would overflow
// the clock is refused at its trace line (it used to vanish: total 1,
// finished 1, exit 0).
func TestToolTimeOverflowIsBadInput(t *testing.T) {
	dir := t.TempDir()
	trace := write(t, dir, "s.jsonl", `{"session_id": "s", "arrival_time_ns": 0, "sub_requests": [`+
		`{"input_toks": 10, "output_toks": 2, "tool_duration_ns": 9223372036854775000}, {"input_toks": 10, "output_toks": 2}]}`+"\n")
	code, _, stderr := run(t, "run", "-q", "--workload", trace)
	if code != 2 || !strings.Contains(stderr, "s.jsonl:1:") || !strings.Contains(stderr, "tool_duration_ns") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q; want 2 and one line naming s.jsonl:1 and tool_duration_ns", code, stderr)
	}
}
