package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/servesim/servesim/internal/metrics"
)

// TestPriorityClassesExample runs examples/priority-classes.yaml under
// the priority policy and under fcfs and checks what the policy is for:
// the priority-0 class's p99 TTFT is lower than the priority-1 class's
// under priority, and lower than its own under fcfs; the per-priority
// counts in summary.json match the priority column of requests.csv.
func TestPriorityClassesExample(t *testing.T) {
	run := func(policy string) metrics.Result {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		args := []string{"run", "-c", "../../examples/priority-classes.yaml", "--out", dir, "--set", "engine.scheduling_policy=" + policy}
		if code := execute(args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		var res metrics.Result
		data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &res); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(filepath.Join(dir, "requests.csv"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rows, err := csv.NewReader(f).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		col := len(rows[0]) - 1
		if rows[0][col] != "priority" {
			t.Fatalf("last requests.csv column %q, want priority", rows[0][col])
		}
		count := map[string]int64{}
		for _, r := range rows[1:] {
			count[r[col]]++
		}
		if len(res.Priorities) != 2 || count["0"] != res.Priorities[0].Requests || count["1"] != res.Priorities[1].Requests {
			t.Fatalf("%s: classes %+v, requests.csv priorities %v", policy, res.Priorities, count)
		}
		return res
	}
	prio, fcfs := run("priority"), run("fcfs")
	hi, lo := prio.Priorities[0], prio.Priorities[1]
	if !(hi.TTFT.P99 < lo.TTFT.P99) {
		t.Errorf("priority: class 0 p99 TTFT %.1f ms not below class 1's %.1f ms", hi.TTFT.P99, lo.TTFT.P99)
	}
	if !(hi.TTFT.P99 < fcfs.Priorities[0].TTFT.P99) {
		t.Errorf("class 0 p99 TTFT %.1f ms under priority, not below %.1f ms under fcfs", hi.TTFT.P99, fcfs.Priorities[0].TTFT.P99)
	}
	if prio.Finished != 600 || fcfs.Finished != 600 {
		t.Errorf("finished %d and %d of 600", prio.Finished, fcfs.Finished)
	}
}
