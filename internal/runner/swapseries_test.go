package runner

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/metrics"
)

// swapPressure is two requests (512-token prompts, 1,000 output tokens:
// 95 blocks each at the end) arriving together on one Llama-3.1-8B
// instance of 100 KV blocks: they cannot both grow past 800 tokens (50
// blocks each), so the second is preempted; the mode is filled in.
const swapPressure = `
engine: {num_gpu_blocks: 100, preemption_mode: %s}
kv_tiers: {}
workload:
  synthetic:
    requests: 2
    arrival: {kind: burst}
    input: {kind: fixed, mean: 512}
    output: {kind: fixed, mean: 1000}
check_invariants: true
`

// runSeries runs the scenario yaml and returns its summary, records and
// time series (header, then rows).
func runSeries(t *testing.T, yaml string) (metrics.Result, map[int64]metrics.Record, [][]string) {
	t.Helper()
	b := buildYAML(t, "swap.yaml", yaml)
	path := filepath.Join(t.TempDir(), "timeseries.csv")
	recs := map[int64]metrics.Record{}
	res, err := Run(b, Options{Series: path, OnRecord: func(r *metrics.Record) { recs[r.ID] = *r }})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(string(data))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return res, recs, rows
}

// TestSwapSeriesColumns checks the swap columns of the time series on
// swapPressure against a hand computation.
//
// Request 1 (the last admitted) is preempted when request 0 needs its 51st
// block: request 1 then holds 50 blocks, so its KV (at most 800 tokens,
// more than 784) is swapped out as 50 blocks of 2 x 32 layers x 8 KV heads
// x 128 x 2 bytes x 16 tokens = 2,097,152 bytes: 104,857,600 bytes, 0.105
// GB. It is swapped back in when request 0 finishes and frees its blocks.
// Request 1's output stalls over the whole swap, so its largest
// inter-token gap spans it: the swap-out starts after LastToken(0) -
// MaxITL(1) and the swap-in ends after LastToken(0), within a copy and a
// step. Every 1 s sample in between shows one swapped request holding
// 0.105 GB, every other one none.
func TestSwapSeriesColumns(t *testing.T) {
	res, recs, rows := runSeries(t, strings.Replace(swapPressure, "%s", "swap", 1))
	const blockBytes, blocks = 2 * 32 * 8 * 128 * 2 * 16, 50
	if w := res.Swap; w == nil || w.SwapOuts != 1 || w.SwapIns != 1 || w.PeakBlocks != blocks || w.BytesOut != blocks*blockBytes {
		t.Fatalf("swap summary %+v, want one swap-out and one swap-in of %d blocks (%d bytes)", res.Swap, blocks, blocks*blockBytes)
	}
	header := rows[0]
	want := slices.Concat(metrics.SeriesColumns, metrics.TierSeriesColumns, metrics.SwapSeriesColumns)
	if !slices.Equal(header, want) {
		t.Fatalf("header %v, want %v", header, want)
	}
	a, b := recs[0], recs[1]
	if a.Preemptions != 0 || b.Preemptions != 1 || a.LastToken >= b.LastToken {
		t.Fatalf("request 0: %d preemptions, ends %d; request 1: %d, ends %d: not the scenario the test describes",
			a.Preemptions, a.LastToken, b.Preemptions, b.LastToken)
	}
	const slack int64 = 100e6                           // ns: covers a step and a copy (1.7 ms)
	in0, in1 := a.LastToken-b.MaxITL+slack, a.LastToken // surely swapped out
	out0, out1 := a.LastToken-b.MaxITL, a.LastToken+slack
	nSwapped := 0
	for _, row := range rows[1:] {
		sec, err := strconv.ParseFloat(row[0], 64)
		if err != nil {
			t.Fatal(err)
		}
		at := int64(sec * 1e9)
		got := [2]string{row[len(row)-2], row[len(row)-1]}
		switch {
		case at >= in0 && at <= in1:
			nSwapped++
			if got != [2]string{"1", "0.105"} {
				t.Errorf("t=%s s: swapped_requests, swap_used_gb = %v, want [1 0.105]", row[0], got)
			}
		case at < out0 || at > out1:
			if got != [2]string{"0", "0.000"} {
				t.Errorf("t=%s s: swapped_requests, swap_used_gb = %v, want [0 0.000]", row[0], got)
			}
		default:
			t.Errorf("t=%s s lies within %d ms of the swap's start or end: move the scenario so that every sample is decided", row[0], slack/1e6)
		}
	}
	if nSwapped < 3 {
		t.Errorf("%d samples inside the swap (%.3f s to %.3f s), want several", nSwapped, float64(in0)/1e9, float64(in1)/1e9)
	}
}

// TestNoSwapNoSwapColumns: a run that preempts by recompute has no swap
// columns (its outputs stay as they were before the columns existed).
func TestNoSwapNoSwapColumns(t *testing.T) {
	res, _, rows := runSeries(t, strings.Replace(swapPressure, "%s", "recompute", 1))
	if res.Swap != nil || res.Preemptions == 0 {
		t.Fatalf("swap summary %+v, %d preemptions: want recompute preemptions only", res.Swap, res.Preemptions)
	}
	if want := slices.Concat(metrics.SeriesColumns, metrics.TierSeriesColumns); !slices.Equal(rows[0], want) {
		t.Fatalf("header %v, want %v", rows[0], want)
	}
}
