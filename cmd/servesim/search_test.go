package main

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/search"
)

// TestMaxRateCLI: max-rate on examples/pd-2p2d.yaml prints the rate found
// with its attainment (>= 90 %) and the run at 5 % more (< 90 %).
func TestMaxRateCLI(t *testing.T) {
	code, stdout, stderr := runCapacity(t, "search", "max-rate", "-q", "-c", "../../examples/pd-2p2d.yaml", "--ttft-ms", "2000", "--tpot-ms", "100")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m := regexp.MustCompile(`([0-9.]+) req/s meets the target \(attainment ([0-9.]+) %\); 5 % more, ([0-9.]+) req/s, misses it \(attainment ([0-9.]+) %\)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no verdict line in:\n%s", stdout)
	}
	f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	if f(m[2]) < 90 || f(m[4]) >= 90 || f(m[3]) <= f(m[1]) {
		t.Fatalf("verdict %q", m[0])
	}
	if !strings.Contains(stdout, "SLO TTFT <= 2000 ms, TPOT <= 100 ms, attainment >= 90 %") {
		t.Fatalf("header:\n%s", stdout)
	}

	code, stdout, _ = runCapacity(t, "search", "max-rate", "-c", "../../examples/pd-2p2d.yaml", "--json", "--resample", "400")
	var res search.MaxRateResult
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil || !res.Best.Pass || res.Above.Pass {
		t.Fatalf("json: exit %d: %.300s", code, stdout)
	}
}

// TestPDRatioCLI: pd-ratio for 8 GPUs on the ShareGPT workload (resampled
// to 500 requests to stay fast) prints the max rate per GPU of every split
// and marks the one with the highest.
func TestPDRatioCLI(t *testing.T) {
	code, stdout, stderr := runCapacity(t, "search", "pd-ratio", "-q", "-c", "../../examples/pd-2p2d.yaml", "--gpus", "8", "--resample", "500")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Logf("\n%s", stdout)
	row := regexp.MustCompile(`(?m)^\s+(\d)\s+(\d)\s+([0-9.]+)\s+([0-9.]+) %\s+([0-9.]+)\s+([0-9.]+) %\s+([0-9.]+)\s+([0-9.]+)(\s+<- best)?`)
	rows := row.FindAllStringSubmatch(stdout, -1)
	if len(rows) != 7 {
		t.Fatalf("%d split rows, want 7:\n%s", len(rows), stdout)
	}
	bestPerGPU, bestRow, marked := -1.0, -1, -1
	for i, r := range rows {
		if r[1] != strconv.Itoa(i+1) || r[2] != strconv.Itoa(7-i) {
			t.Fatalf("row %d is %sP%sD", i, r[1], r[2])
		}
		perGPU, _ := strconv.ParseFloat(r[7], 64)
		if perGPU <= 0 {
			t.Fatalf("split %sP%sD has no max rate", r[1], r[2])
		}
		if perGPU > bestPerGPU {
			bestPerGPU, bestRow = perGPU, i
		}
		if r[9] != "" {
			marked = i
		}
	}
	if marked != bestRow {
		t.Fatalf("marked best row %d, highest max rate per GPU in row %d", marked, bestRow)
	}
	want := "Best split: " + strconv.Itoa(bestRow+1) + " prefill + " + strconv.Itoa(7-bestRow) + " decode instances"
	if !strings.Contains(stdout, want) {
		t.Fatalf("no %q in:\n%s", want, stdout)
	}
}

func TestSearchCLIBadInput(t *testing.T) {
	pd := "../../examples/pd-2p2d.yaml"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"search"}, "max-rate or pd-ratio"},
		{[]string{"search", "max-rate", "-c", pd, "--target", "90"}, "--target: must be in (0, 1]"},
		{[]string{"search", "max-rate", "-c", pd, "--ttft-ms", "0", "--tpot-ms", "0"}, "no SLO"},
		{[]string{"search", "max-rate", "-c", pd, "--tolerance", "0.1"}, "--tolerance"},
		{[]string{"search", "max-rate", "-c", pd, "--ttft-ms", "-5"}, "--ttft-ms: must be >= 0 (got -5;"},
		{[]string{"search", "max-rate", "-c", pd, "--e2e-ms", "-0.5"}, "--e2e-ms: must be >= 0 (got -0.5;"},
		{[]string{"search", "pd-ratio", "-c", pd, "--gpus", "1"}, "--gpus: must be >= 2"},
		{[]string{"search", "max-rate", "-c", pd, "--resample", "0"}, "--resample"},
		{[]string{"search", "max-rate", "-c", pd, "-q", "--limit", "20"}, "the workload is too short to load this cluster"},
	} {
		code, _, stderr := runCapacity(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d %q, want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestMaxRateErrorBarsCLI: --error-bars prints the answer's 90 % interval,
// the JSON carries it with the two end searches, and the interval holds the
// answer, wider below for the slow end (steps slower, less load). Without
// a band (the profile predictor) it is a clear input error.
func TestMaxRateErrorBarsCLI(t *testing.T) {
	code, stdout, stderr := runCapacity(t, "search", "max-rate", "-q", "--predictor", "roofline", "--error-bars", "--json")
	var res search.MaxRateResult
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil {
		t.Fatalf("exit %d: %s %.300s", code, stderr, stdout)
	}
	iv := res.Interval
	if iv == nil || iv.Coverage != 0.9 || !(iv.FastScale < 1 && iv.SlowScale > 1) ||
		!(iv.LoRPS == iv.SlowRPS && iv.SlowRPS < res.Best.RateRPS && res.Best.RateRPS < iv.FastRPS && iv.FastRPS == iv.HiRPS) {
		t.Fatalf("interval %+v around %g", iv, res.Best.RateRPS)
	}
	code, stdout, stderr = runCapacity(t, "search", "max-rate", "-q", "--predictor", "roofline", "--error-bars")
	want := regexp.MustCompile(`max rate [0-9.]+ req/s \(90 % interval [0-9.]+–[0-9.]+\)`)
	if code != 0 || !want.MatchString(stdout) {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	code, _, stderr = runCapacity(t, "search", "max-rate", "-q", "--error-bars")
	if code != 2 || !strings.Contains(stderr, "--error-bars") || !strings.Contains(stderr, "roofline") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("profile predictor: exit %d, %q", code, stderr)
	}
}

// TestMaxRateSeedErrorBarsCLI: a synthetic workload gets seed variance with
// --error-bars even without a step band (profile predictor): the interval
// holds the answer and spans the seed answers' 5th–95th percentiles;
// --seed-replicas below 2 is an input error.
func TestMaxRateSeedErrorBarsCLI(t *testing.T) {
	dir := t.TempDir()
	sc := write(t, dir, "syn.yaml", `workload:
  synthetic:
    requests: 150
    arrival: {kind: poisson, rate: 4}
    input: {kind: lognormal, mean: 800, sigma: 0.6}
    output: {kind: lognormal, mean: 150, sigma: 0.6}
`)
	code, stdout, stderr := run(t, "search", "max-rate", "-q", "-c", sc, "--error-bars", "--seed-replicas", "3", "--json")
	var res search.MaxRateResult
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil {
		t.Fatalf("exit %d: %s %.300s", code, stderr, stdout)
	}
	iv := res.Interval
	if iv == nil || iv.Band != "" || iv.Replicas != 3 || len(iv.SeedRPS) != 3 ||
		!(iv.LoRPS <= res.Best.RateRPS && res.Best.RateRPS <= iv.HiRPS && iv.LoRPS < iv.HiRPS) {
		t.Fatalf("interval %+v around %g", iv, res.Best.RateRPS)
	}
	code, stdout, stderr = run(t, "search", "max-rate", "-q", "-c", sc, "--error-bars", "--seed-replicas", "3")
	if code != 0 || !strings.Contains(stdout, "searched again with 3 more seeds") || strings.Contains(stdout, "steps x") {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	code, _, stderr = run(t, "search", "max-rate", "-q", "-c", sc, "--error-bars", "--seed-replicas", "1")
	if code != 2 || !strings.Contains(stderr, "--seed-replicas") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("1 replica: exit %d, %q", code, stderr)
	}
}

// TestSearchedWorkloadUnit: a rate search over a chat workload scales
// conversation starts and says so; request workloads keep req/s.
func TestSearchedWorkloadUnit(t *testing.T) {
	for _, c := range []struct {
		yaml, name, unit string
	}{
		{"workload: {chat: {conversations: 5, arrival: {kind: poisson, rate: 2}, turns: {kind: fixed, mean: 3}, think_ms: {kind: fixed, mean: 100}, message: {kind: fixed, mean: 10}, output: {kind: fixed, mean: 5}}}\n", "chat", "conversations/s"},
		{"workload: {synthetic: {requests: 5, arrival: {kind: poisson, rate: 2}, input: {kind: fixed, mean: 10}, output: {kind: fixed, mean: 5}}}\n", "synthetic", "req/s"},
		{"", "builtin:", "req/s"},
	} {
		s, err := config.Parse([]byte(c.yaml), "s.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if name, unit := searchedWorkload(s); unit != c.unit || !strings.HasPrefix(name, c.name) {
			t.Errorf("%q: workload %q in %q, want %q in %q", c.yaml, name, unit, c.name, c.unit)
		}
	}
}

// TestTargetValues: a max-rate answer under percentile targets shows each
// target's value and verdict at both rates.
func TestTargetValues(t *testing.T) {
	v1, v2 := 49.744, 50.48
	r := &metrics.Result{SLO: &metrics.SLOResult{Targets: []metrics.TargetResult{
		{Metric: metrics.Metric("tpot"), Percentile: 99, MaxMs: 50, ValueMs: &v1, Met: true},
		{Metric: metrics.Metric("ttft"), Percentile: 90, MaxMs: 500, ValueMs: &v2, Met: false},
	}}}
	want := " (p99 TPOT 49.74 ms, target <= 50 ms met, p90 TTFT 50.48 ms, target <= 500 ms MISSED)"
	if got := targetValues(r); got != want {
		t.Errorf("targetValues = %q, want %q", got, want)
	}
	if got := targetValues(&metrics.Result{}); got != "" {
		t.Errorf("no targets: %q, want empty", got)
	}
}
