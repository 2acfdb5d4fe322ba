package compare

import (
	"context"
	"errors"
	"fmt"
	"github.com/servesim/servesim/internal/metrics"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/runner"
)

func parse(t *testing.T, y string) *config.Scenario {
	t.Helper()
	s, err := config.Parse([]byte(y), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRunMatchesSingleRuns: every column of a comparison is the summary a
// single run of that variant gives (same numbers, in the variants'
// order), whatever the number of workers, and OnDone is told of each.
func TestRunMatchesSingleRuns(t *testing.T) {
	base := parse(t, "workload: {limit: 40}\ninstances: [{role: prefill}, {role: decode, engine: {num_gpu_blocks: 3000}}]\n")
	vs, err := Policies(base, config.Source{}, []string{"pull", "reserve", "reject"})
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 3} {
		done := 0
		rs, err := Run(context.Background(), vs, Options{Workers: workers, OnDone: func() { done++ }})
		if err != nil {
			t.Fatal(err)
		}
		if done != len(vs) || len(rs) != len(vs) {
			t.Fatalf("%d results, %d done calls, want %d", len(rs), done, len(vs))
		}
		for i, v := range vs {
			b, err := assemble.Build(v.Scenario, v.Source)
			if err != nil {
				t.Fatal(err)
			}
			want, err := runner.Run(b, runner.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rs[i].Policy != v.Name || rs[i].Summary.String() != want.String() {
				t.Errorf("workers %d, column %d (%s): summary differs from a single run", workers, i, rs[i].Name())
			}
		}
	}
}

// TestTableStopped: a stopped column keeps its counts and reads "stopped"
// for rates and latencies, with the stop explained below the table.
func TestTableStopped(t *testing.T) {
	rs := []Result{{Policy: "pull"}, {Policy: "eager", Stopped: "decode instance 1 out of KV memory"}}
	rs[0].Summary.Finished, rs[1].Summary.Finished = 40, 7
	rs[0].Summary.ThroughputRPS = 2.5
	got := Table("T", rs)
	for _, want := range []string{
		fmt.Sprintf("%-32s %13s %13s\n", "finished", "40", "7"),
		fmt.Sprintf("%-32s %13s %13s\n", "throughput (req/s, whole run)", "2.500", "stopped"),
		"\neager: decode instance 1 out of KV memory\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

// TestTableNoSamples: a latency with no samples (nothing finished, or no
// handoff in a colocated variant) reads "-", never 0.0 ms; one with
// samples shows its value.
func TestTableNoSamples(t *testing.T) {
	rs := []Result{{Policy: "pull"}, {Policy: "reserve"}}
	rs[0].Summary.Failed, rs[1].Summary.Finished = 3, 3
	rs[1].Summary.TTFT.Count, rs[1].Summary.TTFT.Mean = 3, 12.5
	got := Table("T", rs)
	for _, want := range []string{
		fmt.Sprintf("%-32s %13s %13s\n", "TTFT mean (ms)", "-", "12.5"),
		fmt.Sprintf("%-32s %13s %13s\n", "E2E p99 (s)", "-", "-"),
		fmt.Sprintf("%-32s %13s %13s\n", "KV transfer mean (ms)", "-", "-"),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

// TestTableSLO: with an slo section the table ends with its bounds, SLO
// attainment, goodput and each percentile target's value and verdict, as
// the run summary prints them; a variant without per-request bounds reads
// n/a, one without the target "-". Without any slo there are no SLO rows.
func TestTableSLO(t *testing.T) {
	met, att, good := int64(45), 0.9, 4.5
	v1, v2 := 1324.5, 116.0
	rs := []Result{{Policy: "a"}, {Policy: "b"}, {Policy: "c"}}
	rs[0].Summary.SLO = &metrics.SLOResult{TTFTMs: 2000, TPOTMs: 100, Met: &met, Attainment: &att, GoodputRPS: &good,
		Targets: []metrics.TargetResult{{Metric: "ttft", Percentile: 99, MaxMs: 2000, ValueMs: &v1, Met: true}}}
	rs[1].Summary.SLO = &metrics.SLOResult{Targets: []metrics.TargetResult{{Metric: "tpot", Percentile: 99, MaxMs: 116, ValueMs: &v2}}}
	got := Table("T", rs)
	for _, want := range []string{
		fmt.Sprintf("%-32s %13s %13s %13s\n", "SLO TTFT/TPOT/E2E bounds (ms)", "2000/100/-", "n/a", "n/a"),
		fmt.Sprintf("%-32s %13s %13s %13s\n", "SLO attainment (%)", "90.00", "n/a", "n/a"),
		fmt.Sprintf("%-32s %13s %13s %13s\n", "goodput (req/s, met / duration)", "4.500", "n/a", "n/a"),
		fmt.Sprintf("%-32s %13s %13s %13s\n", "target p99 TTFT <= 2000 ms", "1324.5 met", "-", "-"),
		fmt.Sprintf("%-32s %13s %13s %13s\n", "target p99 TPOT <= 116 ms", "-", "116.0 MISSED", "-"),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	rs[0].Summary.SLO, rs[1].Summary.SLO = nil, nil
	if got := Table("T", rs); strings.Contains(got, "SLO") || strings.Contains(got, "goodput") {
		t.Errorf("SLO rows without an slo section:\n%s", got)
	}
}

// TestBadVariantIsBuildError: a variant that cannot be assembled fails
// the comparison with a BuildError naming the variant, after the others
// ran; a scenario without P/D has no policies to compare.
func TestBadVariantIsBuildError(t *testing.T) {
	good := parse(t, "workload: {limit: 5}\n")
	bad := parse(t, "workload: {limit: 5}\nhardware: H100\n") // no H100 profile tables
	_, err := Run(context.Background(), []Variant{{Name: "ok", Scenario: good}, {Name: "h100", Scenario: bad}}, Options{})
	var be *BuildError
	if !errors.As(err, &be) || !strings.HasPrefix(err.Error(), "h100: ") {
		t.Errorf("error %v, want a BuildError naming h100", err)
	}
	if _, err := Policies(good, config.Source{}, []string{"pull"}); err == nil {
		t.Error("policies of a colocated scenario were accepted")
	}
}

// TestRunReusesBuilt: a variant that carries its built scenario is run
// from it, not rebuilt (its Scenario, which would not assemble, is not
// read), and gives the same summary as one Run builds itself, also when
// run twice from the same build.
func TestRunReusesBuilt(t *testing.T) {
	base := parse(t, "workload: {limit: 30}\ninstances: [{role: prefill}, {role: decode, engine: {num_gpu_blocks: 3000}}]\n")
	vs, err := Policies(base, config.Source{}, []string{"pull", "reserve"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Run(context.Background(), vs, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	broken := parse(t, "model: no-such/model\n")
	if _, err := assemble.Build(broken, config.Source{}); err == nil {
		t.Fatal("the broken scenario assembles")
	}
	reused := make([]Variant, 0, 2*len(vs))
	for _, v := range vs {
		b, err := assemble.Build(v.Scenario, v.Source)
		if err != nil {
			t.Fatal(err)
		}
		v.Scenario, v.Built = broken, b
		reused = append(reused, v, v)
	}
	got, err := Run(context.Background(), reused, Options{Workers: 1})
	if err != nil {
		t.Fatalf("a variant with its build was rebuilt: %v", err)
	}
	for i := range got {
		if w := want[i/2]; got[i].Name() != w.Name() || got[i].Summary.String() != w.Summary.String() {
			t.Errorf("column %d (%s): summary differs from the one Run built itself", i, got[i].Name())
		}
	}
}
