package runner

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/metrics"
)

// TestIgnoreArrivalTimes: a trace whose requests arrive 10 s apart,
// replayed with max_concurrency 1, is rate-limited by its own arrival
// times (each request runs alone, the run lasts past the last arrival at
// 40 s); with workload.ignore_arrival_times the same requests run
// closed-loop in trace order: request 0 at 0, each next one sent exactly
// when the previous one ended, so the run lasts the sum of the five
// service times, less than 10 s. The requests and their service times
// are the same in both runs (each runs alone on an idle engine).
func TestIgnoreArrivalTimes(t *testing.T) {
	dir := t.TempDir()
	var trace strings.Builder
	for i := range 5 {
		fmt.Fprintf(&trace, `{"input_toks": %d, "output_toks": 40, "arrival_time_ns": %d}`+"\n", 300+100*i, int64(i)*10e9)
	}
	path := filepath.Join(dir, "spaced.jsonl")
	if err := os.WriteFile(path, []byte(trace.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(ignore bool) (metrics.Result, []metrics.Record) {
		t.Helper()
		y := fmt.Sprintf("workload: {trace: %q, max_concurrency: 1, ignore_arrival_times: %v}\n", path, ignore)
		b := buildYAML(t, "spaced.yaml", y)
		var recs []metrics.Record
		res, err := Run(b, Options{OnRecord: func(r *metrics.Record) { recs = append(recs, *r) }})
		if err != nil {
			t.Fatal(err)
		}
		return res, recs
	}
	paced, pacedRecs := run(false)
	if paced.SimTimeS < 40 {
		t.Fatalf("paced replay ended at %.3f s, before the last arrival at 40 s", paced.SimTimeS)
	}
	res, recs := run(true)
	if len(recs) != 5 || res.Finished != 5 {
		t.Fatalf("%d records, %d finished", len(recs), res.Finished)
	}
	var service int64
	for i, r := range recs {
		if r.ID != int64(i) {
			t.Fatalf("record %d is request %d: not in trace order", i, r.ID)
		}
		want := int64(0)
		if i > 0 {
			want = recs[i-1].LastToken
		}
		if r.Arrival != want {
			t.Errorf("request %d sent at %d ns, want %d (when the previous one ended)", i, r.Arrival, want)
		}
		if got, was := r.LastToken-r.Arrival, pacedRecs[i].LastToken-pacedRecs[i].Arrival; got != was {
			t.Errorf("request %d took %d ns closed-loop, %d ns paced: alone on an idle engine both ways", i, got, was)
		}
		service += r.LastToken - r.Arrival
	}
	if end := res.SimTimeS * 1e9; math.Abs(end-float64(recs[4].LastToken)) > 1 || math.Abs(end-float64(service)) > 1 || res.SimTimeS >= 10 {
		t.Errorf("closed-loop run lasted %.6f s, want the summed service time %.6f s", res.SimTimeS, float64(service)/1e9)
	}
}
