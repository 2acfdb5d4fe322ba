package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// validate --json carries the queue-delay rows beside the 15 statistics,
// and max_abs_diff_pct is over the 15 only.
func TestValidateJSONQueueDelay(t *testing.T) {
	code, out, stderr := run(t, "validate", "--measured", "builtin:RTXPRO6000-Llama-3.1-8B", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Stats []struct {
			DiffPct float64 `json:"diff_pct"`
		} `json:"stats"`
		MaxAbs float64 `json:"max_abs_diff_pct"`
		Queue  []struct {
			Stat      string   `json:"stat"`
			Measured  float64  `json:"measured"`
			Simulated float64  `json:"simulated"`
			DiffMs    float64  `json:"diff_ms"`
			DiffPct   *float64 `json:"diff_pct"`
		} `json:"queue_delay"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	worst := 0.0
	for _, s := range rep.Stats {
		worst = math.Max(worst, math.Abs(s.DiffPct))
	}
	if len(rep.Stats) != 15 || rep.MaxAbs != worst {
		t.Errorf("%d stats, max_abs_diff_pct %.3f, worst of the stats %.3f", len(rep.Stats), rep.MaxAbs, worst)
	}
	want := []string{"mean", "p50", "p90", "p95", "p99"}
	if len(rep.Queue) != len(want) {
		t.Fatalf("queue_delay has %d rows, want 5:\n%s", len(rep.Queue), out)
	}
	for i, q := range rep.Queue {
		// The measured queue delay of this run is seconds at every
		// statistic (it queues at 10 req/s), so every row has a percent.
		if q.Stat != want[i] || q.Measured < 1000 || q.DiffPct == nil ||
			math.Abs(*q.DiffPct-(q.Simulated-q.Measured)/q.Measured*100) > 0.01 || math.Abs(q.DiffMs-(q.Simulated-q.Measured)) > 0.002 {
			t.Errorf("queue row %d: %+v", i, q)
		}
	}
}

// --placement-replicas: bad uses exit 2 and name the flag; on the DP run
// the JSON carries the spread.
func TestValidatePlacementReplicasFlag(t *testing.T) {
	for _, args := range [][]string{
		{"--measured", "builtin:RTXPRO6000-Llama-3.1-8B", "--placement-replicas", "2"},
		{"--measured", "builtin:RTXPRO6000-Qwen3-30B-A3B-Instruct-2507", "--placement-replicas", "-1"},
		{"--bench", "x.json", "--placement-replicas", "2"},
	} {
		code, _, stderr := run(t, append([]string{"validate"}, args...)...)
		if code != 2 || !strings.Contains(stderr, "--placement-replicas") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming the flag", args, code, stderr)
		}
	}
	code, out, stderr := run(t, "validate", "--measured", "builtin:RTXPRO6000-Qwen3-30B-A3B-Instruct-2507", "--placement-replicas", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Placement struct {
			Replicas int `json:"replicas"`
			Stats    []struct {
				Min float64 `json:"min_diff_pct"`
				Max float64 `json:"max_diff_pct"`
			} `json:"stats"`
		} `json:"placement_spread"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Placement.Replicas != 2 || len(rep.Placement.Stats) != 15 || rep.Placement.Stats[0].Min > rep.Placement.Stats[0].Max {
		t.Errorf("placement spread %+v", rep.Placement)
	}
}

// --moe-distribution: a routing the database does not hold, or the flag
// with a predictor other than perfdb, exits 2 naming
// predictor.moe_distribution; with perfdb and a routing the database holds
// the run succeeds (its figures are checked by TestMoEDistributionOption in
// internal/validate).
func TestValidateMoEDistributionFlag(t *testing.T) {
	qwen := "builtin:RTXPRO6000-Qwen3-30B-A3B-Instruct-2507"
	for _, args := range [][]string{
		{"--measured", qwen, "--moe-distribution", "power_law_1.01"},
		{"--measured", qwen, "--predictor", "perfdb", "--moe-distribution", "zipf"},
	} {
		code, _, stderr := run(t, append([]string{"validate"}, args...)...)
		if code != 2 || !strings.Contains(stderr, "predictor.moe_distribution") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming predictor.moe_distribution", args, code, stderr)
		}
	}
	if code, _, stderr := run(t, "validate", "--measured", qwen, "--predictor", "perfdb", "--moe-distribution", "power_law_1.2"); code != 0 {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
