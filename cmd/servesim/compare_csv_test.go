package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/servesim/servesim/internal/compare"
	"github.com/servesim/servesim/internal/sweep"
)

// TestCompareCSV: compare --csv writes one row per variant, named in its
// first column, with the sweep's result columns (the tier group when a
// variant has tiers) holding the same figures as the comparison's JSON;
// the mean pinned KV is the mean over the prefill instances. --csv with
// --json is refused.
func TestCompareCSV(t *testing.T) {
	t.Chdir("../..")
	args := []string{"compare", "-q", "-c", "examples/pd-stress.yaml", "--limit", "120",
		"--variant", "offload: kv_tiers={}, handoff.offload_pinned_after_s=1"}
	var js, stderr bytes.Buffer
	if code := execute(append(args, "--json"), &js, &stderr); code != 0 {
		t.Fatalf("compare --json: exit %d: %s", code, stderr.String())
	}
	var results []compare.Result
	if err := json.Unmarshal(js.Bytes(), &results); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "c.csv")
	var stdout bytes.Buffer
	if code := execute(append(args, "--csv", out), &stdout, &stderr); code != 0 {
		t.Fatalf("compare --csv: exit %d: %s", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("compare --csv printed %q; want nothing on stdout", stdout.String())
	}
	recs, err := readCSV(out)
	if err != nil {
		t.Fatal(err)
	}
	head := recs[0]
	wantHead := append([]string{"variant"}, sweep.ResultColumns(sweep.Extras{Tiers: true})...)
	if !slices.Equal(head, wantHead) {
		t.Fatalf("header %v, want %v", head, wantHead)
	}
	if len(recs) != 3 || recs[1][0] != "pd-stress" || recs[2][0] != "offload" {
		t.Fatalf("rows %v: want pd-stress and offload", recs[1:])
	}
	col := func(rec []string, name string) string { return rec[slices.Index(head, name)] }
	for i, r := range results {
		rec := recs[i+1]
		s := r.Summary
		if got := col(rec, "finished"); got != strconv.FormatInt(s.Finished, 10) {
			t.Errorf("%s: finished %s, want %d", rec[0], got, s.Finished)
		}
		mean := 0.0
		for _, p := range s.PinnedKV {
			mean += p.MeanBlocks
		}
		mean /= float64(len(s.PinnedKV))
		if got, err := strconv.ParseFloat(col(rec, "pinned_kv_mean_blocks"), 64); err != nil || got != mean {
			t.Errorf("%s: pinned_kv_mean_blocks %s, want %g", rec[0], col(rec, "pinned_kv_mean_blocks"), mean)
		}
		if got := col(rec, "offload_peak_bytes"); got != strconv.FormatInt(s.OffloadPeakBytes, 10) {
			t.Errorf("%s: offload_peak_bytes %s, want %d", rec[0], got, s.OffloadPeakBytes)
		}
	}
	if results[1].Summary.OffloadPeakBytes == 0 {
		t.Error("the offload variant offloaded nothing")
	}
	if code := execute(append(args, "--csv", out, "--json"), &stdout, &stderr); code != 2 {
		t.Errorf("--csv with --json: exit %d, want 2", code)
	}
}

func readCSV(path string) ([][]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return csv.NewReader(bytes.NewReader(data)).ReadAll()
}
