package validate

import (
	"errors"
	"io/fs"
	"math"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/servesim/servesim/internal/assets"
	"github.com/servesim/servesim/internal/config"
)

func measured(t *testing.T, name string) fs.FS {
	t.Helper()
	sub, err := fs.Sub(assets.FS(), "vllm-measured/"+name)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// measuredWithMeta is the measured RTXPRO6000-Llama-3.1-8B run with the
// first old in its meta.json replaced by repl.
func measuredWithMeta(t *testing.T, old, repl string) fstest.MapFS {
	t.Helper()
	src := measured(t, "RTXPRO6000-Llama-3.1-8B")
	meta, err := fs.ReadFile(src, "meta.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(meta), old) {
		t.Fatalf("meta.json has no %s to replace", old)
	}
	fsys := fstest.MapFS{"meta.json": {Data: []byte(strings.Replace(string(meta), old, repl, 1))}}
	for _, f := range []string{"requests.jsonl", "llmservingsim-cluster.json"} {
		b, err := fs.ReadFile(src, f)
		if err != nil {
			t.Fatal(err)
		}
		fsys[f] = &fstest.MapFile{Data: b}
	}
	return fsys
}

// TestLlamaMatchesVLLM pins the accuracy of the default model (profile
// tables + async scheduling + the engine-side time of docs/engine-time.md,
// with no constant fitted to this run) against the measured vLLM 0.19.0
// run: 14 of the 15 statistics within 5 %; TTFT p50, the one statistic
// the first-principles model leaves outside (-6.0 %), within 6.5 %.
// docs/engine-time.md §9 lists what was checked; no measured or cited term
// closes it, and the bound is not tightened by a fitted one.
func TestLlamaMatchesVLLM(t *testing.T) {
	rep, err := Run(Options{Measured: measured(t, "RTXPRO6000-Llama-3.1-8B"), Name: "RTXPRO6000-Llama-3.1-8B", CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.String())
	if len(rep.Stats) != 15 {
		t.Fatalf("%d statistics, want 15", len(rep.Stats))
	}
	checkQueueDelay(t, rep, "RTXPRO6000-Llama-3.1-8B")
	worst := 0.0
	for _, r := range rep.Stats {
		if r.Measured <= 0 || r.Simulated <= 0 {
			t.Errorf("%s %s: measured %.2f simulated %.2f", r.Metric, r.Stat, r.Measured, r.Simulated)
		}
		worst = math.Max(worst, math.Abs(r.DiffPct))
	}
	if worst != rep.MaxAbsDiffPct {
		t.Errorf("max_abs_diff_pct %.3f, but the worst row is %.3f", rep.MaxAbsDiffPct, worst)
	}
	for _, r := range rep.Stats {
		bound := 5.0
		if r.Metric == "TTFT" && r.Stat == "p50" {
			bound = 6.5
		}
		if math.Abs(r.DiffPct) > bound {
			t.Errorf("%s %s: %+.2f %% exceeds %.1f %%", r.Metric, r.Stat, r.DiffPct, bound)
		}
	}
	// The measured side must reproduce the data README's definitions.
	for _, r := range rep.Stats {
		if r.Metric == "TPOT" && r.Stat == "mean" && math.Abs(r.Measured-32.458) > 0.01 {
			t.Errorf("measured TPOT mean %.3f ms, want 32.458", r.Measured)
		}
	}
}

// TestQwenMoEMatchesVLLM pins the accuracy on the measured Qwen3-30B-A3B
// run (DP2 x EP2 on two RTX PRO 6000, vLLM 0.19.0) with the shipped
// profile bundle and no constant fitted to the run: lockstep DP ranks with
// vLLM's DP padding, per-rank MoE at the gathered tokens over the local
// experts, the all-gather/reduce-scatter over the PCIe link, and vLLM's DP
// load balancer with its stale counts. TPOT and E2E are within 5 % (under
// 1 % today); TTFT, which is queueing-dominated at this load (the queue
// grows for most of the run), is not: mean -6.2 %, p50 -5.2 %, p90 -17.7 %,
// p95 -8.4 %, p99 +3.5 % (docs/moe.md). Its tail moves by several points
// with the placement of requests on the ranks alone
// (TestQwenPlacementSpread).
func TestQwenMoEMatchesVLLM(t *testing.T) {
	rep, err := Run(Options{Measured: measured(t, "RTXPRO6000-Qwen3-30B-A3B-Instruct-2507"), Name: "RTXPRO6000-Qwen3-30B-A3B-Instruct-2507", CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.String())
	if len(rep.Stats) != 15 {
		t.Fatalf("%d statistics, want 15", len(rep.Stats))
	}
	checkQueueDelay(t, rep, "RTXPRO6000-Qwen3-30B-A3B-Instruct-2507")
	// Most requests of this run were scheduled in the step that picked
	// them up: a measured queue-delay p50 of 0.004 ms, given as a ms
	// difference only.
	if q := rep.QueueDelay[1]; q.Stat != "p50" || q.Measured > 0.01 || q.DiffPct != nil || !strings.Contains(rep.String(), "queue  p50             0.00") {
		t.Errorf("queue p50: %+v", q)
	}
	// What the model achieves (docs/moe.md, validation): TPOT and E2E
	// within 0.7 %, TTFT -6.2 (mean), -5.2 (p50), -17.7 (p90), -8.4 (p95),
	// +3.5 % (p99); the bounds leave about half a point. TTFT is queueing
	// at 10 req/s over capacity: the requests whose completions free the
	// slots decode too fast early in the run, as in the dense Llama run.
	ttft := map[string]float64{"mean": 7, "p50": 6, "p90": 18.5, "p95": 9, "p99": 4}
	for _, r := range rep.Stats {
		bound := 2.0
		if r.Metric == "TTFT" {
			bound = ttft[r.Stat]
		}
		if r.Measured <= 0 || r.Simulated <= 0 || math.Abs(r.DiffPct) > bound {
			t.Errorf("%s %s: measured %.2f simulated %.2f (%+.2f %%), bound %.1f %%", r.Metric, r.Stat, r.Measured, r.Simulated, r.DiffPct, bound)
		}
	}
	// Capacity per rank from the memory model: the experts sharded over
	// the two GPUs, the rest replicated (the run's meta records none).
	if rep.KVBlocks != 37541 || rep.KVBlocksRecorded != 0 {
		t.Errorf("KV blocks %d (recorded %d), want 37541 predicted per rank", rep.KVBlocks, rep.KVBlocksRecorded)
	}
}

// TestQwenPlacementSpread replays the Qwen3-30B-A3B DP2 x EP2 run with the
// DP balancer's ties broken at random: only the ranks the requests go to
// change, so the decode-bound statistics barely move while the TTFT tail,
// set by which requests share a rank when the slots run out, moves by
// several points (docs/moe.md, "Placement").
func TestQwenPlacementSpread(t *testing.T) {
	name := "RTXPRO6000-Qwen3-30B-A3B-Instruct-2507"
	rep, err := Run(Options{Measured: measured(t, name), Name: name, PlacementReplicas: 10})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Placement
	if p == nil || p.Replicas != 10 || len(p.Rows) != 15 || p.Within < 0 || p.Within > 10 {
		t.Fatalf("placement spread %+v", p)
	}
	for _, r := range p.Rows {
		if r.MinPct > r.MedianPct || r.MedianPct > r.MaxPct || r.Inside != (r.MinPct <= 0 && r.MaxPct >= 0) {
			t.Errorf("%s %s: min %.2f median %.2f max %.2f inside %v", r.Metric, r.Stat, r.MinPct, r.MedianPct, r.MaxPct, r.Inside)
		}
		width := r.MaxPct - r.MinPct
		switch {
		case r.Metric != "TTFT" && width > 3:
			t.Errorf("%s %s moves %.2f points with the placement alone; want under 3", r.Metric, r.Stat, width)
		case r.Metric == "TTFT" && r.Stat == "p90" && width < 3:
			t.Errorf("TTFT p90 moves only %.2f points with the placement; want several", width)
		}
	}
	if !strings.Contains(rep.String(), "placement spread: 10 replays") {
		t.Errorf("the report does not print the spread:\n%s", rep.String())
	}
	// A run without data-parallel ranks has no placement to vary.
	llama := "RTXPRO6000-Llama-3.1-8B"
	if _, err := Run(Options{Measured: measured(t, llama), Name: llama, PlacementReplicas: 2}); !errors.Is(err, errNoPlacement) {
		t.Errorf("a dense run with --placement-replicas: got %v, want errNoPlacement", err)
	}
}

func TestMissingFilesAreNamed(t *testing.T) {
	_, err := Run(Options{Measured: fstestEmpty{}, Name: "empty"})
	if err == nil || !strings.Contains(err.Error(), "meta.json") {
		t.Fatalf("want an error naming meta.json, got %v", err)
	}
}

type fstestEmpty struct{}

func (fstestEmpty) Open(name string) (fs.File, error) { return nil, fs.ErrNotExist }

// TestTensorParallelRunBuilds: a measured run at tp=2 is rebuilt with the
// tp2 bundle plus vLLM's all-reduce over the catalog link and
// simulated end to end (the comparison itself needs a measured tp=2 run).
func TestTensorParallelRunBuilds(t *testing.T) {
	tp2 := measuredWithMeta(t, `"tensor_parallel_size": 1`, `"tensor_parallel_size": 2`)
	s, _, _, err := Scenario(Options{Measured: tp2, Name: "tp2"})
	if err != nil {
		t.Fatal(err)
	}
	if *s.Instances[0].TP != 2 || s.Links.TPBandwidthGBps != 0 || s.Links.TPLatencyUs >= 0 {
		t.Fatalf("tp %d, link %g GB/s %g us; want tp 2 over the catalog link (the cluster file's 16 GB/s is not taken)", *s.Instances[0].TP, s.Links.TPBandwidthGBps, s.Links.TPLatencyUs)
	}
	rep, err := Run(Options{Measured: tp2, Name: "tp2", CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Stats) != 15 {
		t.Fatalf("%d statistics", len(rep.Stats))
	}
}

// A run that records num_gpu_blocks and the device memory: the simulation
// uses the recorded capacity and the report prints servesim's prediction
// beside it (94.97 GiB at 0.9 for Llama-3.1-8B: 35,776 blocks, see
// docs/engine-time.md).
func TestRecordedCapacityIsPinnedAndPredictionPrinted(t *testing.T) {
	extra := `"kv_cache": {"num_gpu_blocks": 30000, "block_size": 16, "gpu_memory_utilization": 0.9},
  "hardware": {"device_count": 1, "device_total_memory_bytes": 101973261025},
  "tick_seconds"`
	fsys := measuredWithMeta(t, `"tick_seconds"`, extra)
	rep, err := Run(Options{Measured: fsys, Name: "pinned"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.KVBlocks != 30000 || rep.KVBlocksRecorded != 30000 || rep.KVBlocksPredicted != 35776 {
		t.Fatalf("kv blocks simulated %d recorded %d predicted %d; want 30000, 30000, 35776", rep.KVBlocks, rep.KVBlocksRecorded, rep.KVBlocksPredicted)
	}
	if !strings.Contains(rep.String(), "KV blocks: 30000 recorded by vLLM (simulated), 35776 predicted by servesim (+19.25 %)") {
		t.Fatalf("report lacks the capacity line:\n%s", rep)
	}
}

// resolved_config fields take precedence: graph mode and capture sizes,
// scheduler limits, async scheduling, the hybrid KV cache manager, custom
// all-reduce.
func TestResolvedConfigIsRead(t *testing.T) {
	extra := `"resolved_config": {
    "compilation_config": {"cudagraph_capture_sizes": [1, 2, 4, 8], "cudagraph_mode": [2, 0]},
    "model_config": {"enforce_eager": false},
    "scheduler_config": {"max_num_seqs": 64, "max_num_batched_tokens": 1024, "async_scheduling": false, "long_prefill_token_threshold": 0, "disable_hybrid_kv_cache_manager": true},
    "parallel_config": {"disable_custom_all_reduce": true}},
  "tick_seconds"`
	fsys := measuredWithMeta(t, `"tick_seconds"`, extra)
	s, _, _, err := Scenario(Options{Measured: fsys, Name: "resolved"})
	if err != nil {
		t.Fatal(err)
	}
	e := s.Engine
	if e.CUDAGraphMode != "full_decode_only" || len(e.CUDAGraphCaptureSizes) != 4 || e.MaxNumSeqs != 64 || e.MaxNumBatchedTokens != 1024 ||
		*e.AsyncScheduling || !*e.DisableCustomAllReduce || *e.EnforceEager || e.DisableHybridKVCacheManager == nil || !*e.DisableHybridKVCacheManager {
		t.Fatalf("engine not taken from resolved_config: %+v", e)
	}
}

func TestGraphModeNames(t *testing.T) {
	for raw, want := range map[string]config.CUDAGraphMode{`[2, 1]`: "full_and_piecewise", `[2,0]`: "full_decode_only", `2`: "full", `1`: "piecewise", `0`: "none", `"FULL_AND_PIECEWISE"`: "full_and_piecewise"} {
		got, err := graphMode([]byte(raw))
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", raw, got, err, want)
		}
	}
	if _, err := graphMode([]byte(`[3, 1]`)); err == nil || !strings.Contains(err.Error(), "cudagraph_mode") {
		t.Errorf("unknown mode: %v", err)
	}
}

// The recorded device name selects the catalog accelerator ("NVIDIA "
// prefix and all), overriding the cluster file's hardware label.
func TestDeviceNameSelectsAccelerator(t *testing.T) {
	for name, want := range map[string]string{"NVIDIA GeForce RTX 4090": "RTX4090", "NVIDIA RTX PRO 6000 Blackwell Server Edition": "RTXPRO6000", "Unknown GPU": "RTXPRO6000"} {
		extra := `"hardware": {"device_count": 1, "device_name": "` + name + `"}, "tick_seconds"`
		fsys := measuredWithMeta(t, `"tick_seconds"`, extra)
		s, _, _, err := Scenario(Options{Measured: fsys, Name: "dev"})
		if err != nil {
			t.Fatal(err)
		}
		if s.Instances[0].Hardware != want {
			t.Errorf("%s: hardware %s, want %s", name, s.Instances[0].Hardware, want)
		}
	}
}

// TestKVCacheDtypeOfTheRun: the measured run's engine_kwargs.kv_cache_dtype
// is the simulated scenario's, and an unknown value is refused naming the
// field, not simulated as the default.
func TestKVCacheDtypeOfTheRun(t *testing.T) {
	auto, _, _, err := Scenario(Options{Measured: measured(t, "RTXPRO6000-Llama-3.1-8B"), Name: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if auto.KVCacheDtype != "auto" {
		t.Errorf("kv_cache_dtype %q, want the run's auto", auto.KVCacheDtype)
	}
	fp8, _, _, err := Scenario(Options{Measured: measuredWithMeta(t, `"kv_cache_dtype": "auto"`, `"kv_cache_dtype": "fp8"`), Name: "fp8"})
	if err != nil {
		t.Fatal(err)
	}
	if fp8.KVCacheDtype != "fp8" {
		t.Errorf("kv_cache_dtype %q, want fp8", fp8.KVCacheDtype)
	}
	_, _, _, err = Scenario(Options{Measured: measuredWithMeta(t, `"kv_cache_dtype": "auto"`, `"kv_cache_dtype": "int4_nonsense"`), Name: "bad"})
	if err == nil || !strings.Contains(err.Error(), "meta.json: engine_kwargs.kv_cache_dtype \"int4_nonsense\"") {
		t.Fatalf("unknown kv_cache_dtype: got %v", err)
	}
}

// TestMeasuredSettingsChecked: engine settings vLLM would refuse are bad
// input naming the meta.json field, not taken for absent (tp 0 used to
// run at tp 1), and a value of the wrong type is named by its line,
// column and field, in JSON's terms rather than Go's type names.
func TestMeasuredSettingsChecked(t *testing.T) {
	for _, tc := range []struct{ old, repl, want string }{
		{`"tensor_parallel_size": 1`, `"tensor_parallel_size": 0`, "meta.json: engine_kwargs.tensor_parallel_size must be a whole number >= 1 (got 0)"},
		{`"data_parallel_size": 1`, `"data_parallel_size": -3`, "engine_kwargs.data_parallel_size must be a whole number >= 1 (got -3)"},
		{`"max_num_seqs": 128`, `"max_num_seqs": 0`, "engine_kwargs.max_num_seqs must be a whole number >= 1 (got 0)"},
		{`"max_num_seqs": 128`, `"max_num_seqs": 1.5`, "line 10, column 24: engine_kwargs.max_num_seqs: want an integer, got a JSON number 1.5"},
		{`"engine_kwargs": {`, `"kv_cache": {"num_gpu_blocks": -5}, "engine_kwargs": {`, "kv_cache.num_gpu_blocks must be a whole number >= 1 (got -5)"},
		{`"max_num_seqs": 128`, `"max_num_seqs": "many"`, "engine_kwargs.max_num_seqs: want an integer, got a JSON string"},
	} {
		_, _, _, err := Scenario(Options{Measured: measuredWithMeta(t, tc.old, tc.repl), Name: "run"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.repl, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "Go struct") {
			t.Errorf("%s: Go type names in %v", tc.repl, err)
		}
	}
}
