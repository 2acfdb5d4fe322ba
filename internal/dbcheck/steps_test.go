package dbcheck

import (
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/perfdb"
)

// TestStepsCollectivesFromTables checks the communication part of the
// perfdb predictor's steps against the database's rows by hand: Llama-3.1-8B
// (32 layers, hidden 4096, vocabulary 128,256) at tp 2 on B200, one
// decode (one token, the CUDA graph of size 1): 2·32 + 1 = 65 all-reduces
// of 1 × 4096 × 2 = 8 KiB, vLLM's dispatch captured in a graph, and one
// all-gather of the logits, 128,256 × 2 bytes; at tp 1 nothing.
func TestStepsCollectivesFromTables(t *testing.T) {
	db, err := perfdb.Open(perfdb.Embedded(), "b200_sxm", "vllm", "")
	if err != nil {
		t.Fatal(err)
	}
	c := db.Collectives(2)
	ar, ok1 := c.AllReduce(true, 8192)
	ag, ok2 := c.AllGather(128256 * 2)
	if !ok1 || !ok2 {
		t.Fatalf("tables lack the sizes: all-reduce %v, all-gather %v", ok1, ok2)
	}
	want := (65*ar + ag) / 1e3
	shape := []StepShape{{Decodes: 1, Context: 1024}}
	rows, skipped, err := Steps([]StepCase{
		{Hardware: "B200", Model: "meta-llama/Llama-3.1-8B", TP: 2},
		{Hardware: "B200", Model: "meta-llama/Llama-3.1-8B", TP: 1},
	}, shape)
	if err != nil || len(skipped) > 0 || len(rows) != 2 {
		t.Fatalf("rows %v, skipped %v, err %v", rows, skipped, err)
	}
	if got := rows[0].PerfDBCommUs; math.Abs(got-want) > 0.01 {
		t.Errorf("tp 2 perfdb communication %.3f µs, want 65 × %.3f + %.3f = %.3f µs", got, ar/1e3, ag/1e3, want)
	}
	if r := rows[0]; !(r.RooflineCommUs > 0) || math.Abs(r.DiffPct-100*(r.PerfDBUs/r.RooflineUs-1)) > 1e-9 {
		t.Errorf("tp 2 row %+v", r)
	}
	if r := rows[1]; r.RooflineCommUs != 0 || r.PerfDBCommUs != 0 || math.Abs(r.RestDiffPct-r.DiffPct) > 1e-9 {
		t.Errorf("tp 1 row has communication: %+v", r)
	}
}

// A case that cannot run is skipped with its reason; none running is an
// error.
func TestStepsSkips(t *testing.T) {
	shape := []StepShape{{Prefill: 128}}
	_, skipped, err := Steps([]StepCase{{Hardware: "H100", Model: "meta-llama/Llama-3.1-8B", Quantization: "modelopt_fp4", TP: 1}}, shape)
	if err == nil || len(skipped) != 1 || !strings.Contains(skipped[0], "needs FP4 tensor cores") {
		t.Errorf("skipped %q, err %v", skipped, err)
	}
}
