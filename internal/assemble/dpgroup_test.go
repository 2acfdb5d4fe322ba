package assemble

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/moe"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/workload"
)

func qwenMoE(t *testing.T, dp, ep int) *config.Scenario {
	t.Helper()
	s := config.Default()
	s.Model = "Qwen/Qwen3-30B-A3B-Instruct-2507"
	s.Instances = []config.Group{{DP: &dp, EP: &ep}}
	s.FillGroups()
	return s
}

// TestExpertShardedWeights: Qwen3-30B-A3B has 30,532,122,624 parameters,
// 28,991,029,248 of them routed experts (48 layers x 128 x 3 x 2048 x
// 768). With ep 2 one GPU holds the 1,541,093,376 others and half the
// experts, 16,036,608,000 parameters: 32,073,216,000 bytes in bf16.
func TestExpertShardedWeights(t *testing.T) {
	m, err := model.Load(model.Builtin(), "Qwen/Qwen3-30B-A3B-Instruct-2507")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.ParamCount(); got != 30532122624 {
		t.Fatalf("params %d", got)
	}
	if got := m.RoutedExpertParams(); got != 28991029248 {
		t.Fatalf("expert params %d", got)
	}
	if got := weightsPerGPU(m, 1, 1, 2, 2, 2); got != 32073216000 {
		t.Errorf("ep 2: %d bytes per GPU, want 32073216000", got)
	}
	if got := weightsPerGPU(m, 1, 1, 1, 2, 2); got != 2*30532122624 {
		t.Errorf("ep 1: %d bytes per GPU, want all weights", got)
	}
}

// TestDPGroupBuild: dp 2 x ep 2 gives two engines (one per rank), each
// with the KV of its own GPU, in one lockstep group; a dense model or an
// uneven expert split is refused naming the field.
func TestDPGroupBuild(t *testing.T) {
	s := qwenMoE(t, 2, 2)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := Build(s, config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.instances) != 2 || len(b.groups) != 1 || len(b.groups[0].ranks) != 2 {
		t.Fatalf("%d engines, groups %+v", len(b.instances), b.groups)
	}
	for i, in := range b.instances {
		if in.DP != 2 || in.EP != 2 || in.Rank != i {
			t.Errorf("engine %d: dp %d ep %d rank %d", i, in.DP, in.EP, in.Rank)
		}
	}
	sim, closer, err := b.NewSim(nil)
	if err != nil {
		t.Fatal(err)
	}
	closer.Close()
	if _, n := sim.LastGroupStep(0); n != 0 {
		t.Errorf("fresh group ran %d steps", n)
	}

	dense := config.Default()
	two := 2
	dense.Instances = []config.Group{{EP: &two}}
	dense.FillGroups()
	if _, err := Build(dense, config.Source{}); err == nil || !strings.Contains(err.Error(), "instances[0].ep") {
		t.Errorf("dense model with ep 2: %v", err)
	}
	three := qwenMoE(t, 3, 3)
	if _, err := Build(three, config.Source{}); err == nil || !strings.Contains(err.Error(), "instances[0].ep") {
		t.Errorf("128 experts over 3 ranks: %v", err)
	}
}

// TestNodePlacement: RTX PRO 6000 nodes hold 8 GPUs. Three dp 2 x tp 2
// instances take 4 GPUs each: two share node 0, the third opens node 1; a
// node_gpus of 4 puts each on its own node, and one of 2 cannot hold an
// instance (refused, naming the field's fix).
func TestNodePlacement(t *testing.T) {
	for _, c := range []struct {
		nodeGPUs int
		want     []int
	}{{0, []int{0, 0, 1}}, {4, []int{0, 1, 2}}} {
		s := qwenMoE(t, 2, 4)
		three, two := 3, 2
		s.Instances[0].Count, s.Instances[0].TP, s.Instances[0].NodeGPUs = &three, &two, c.nodeGPUs
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		b, err := Build(s, config.Source{})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range c.want {
			for r := 0; r < 2; r++ {
				if got := b.instances[2*i+r].Node; got != want {
					t.Errorf("node_gpus %d: instance %d rank %d on node %d, want %d", c.nodeGPUs, i, r, got, want)
				}
			}
		}
	}
	s := qwenMoE(t, 2, 2)
	s.Instances[0].NodeGPUs = 1
	if _, err := Build(s, config.Source{}); err == nil || !strings.Contains(err.Error(), "no network card to cross nodes") {
		t.Errorf("2 GPUs on a node of 1: %v", err)
	}
}

// TestRoutingHistogram: a measured histogram giving the experts of EP rank
// 0 three times the counts of rank 1's sets shares 3/4 and 1/4, so the
// same workload runs slower than under uniform routing; malformed files
// are refused naming file:line.
func TestRoutingHistogram(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("# routed tokens by expert\nexpert,count\n")
	for e := 0; e < 128; e++ {
		c := 1
		if e < 64 {
			c = 3
		}
		fmt.Fprintf(&b, "%d,%d\n", e, c)
	}
	good := filepath.Join(dir, "h.csv")
	if err := os.WriteFile(good, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	simTime := func(m *config.MoE) int64 {
		s := qwenMoE(t, 2, 2)
		s.MoE = m
		syn := workload.ShareGPTLike(200, 4)
		s.Workload.Trace, s.Workload.Synthetic = "", &syn
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		built, err := Build(s, config.Source{})
		if err != nil {
			t.Fatal(err)
		}
		if m != nil && m.Routing == "histogram" {
			groups, err := built.dpGroups(&perf.TableCounts{})
			if err != nil {
				t.Fatal(err)
			}
			mm := groups[0].MoE.(*moe.Model)
			if mm.Share(5, 0) != 0.75 || mm.Share(5, 1) != 0.25 {
				t.Fatalf("shares %g %g, want 0.75 0.25", mm.Share(5, 0), mm.Share(5, 1))
			}
		}
		sim, closer, err := built.NewSim(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer closer.Close()
		end, err := sim.Run()
		if err != nil {
			t.Fatal(err)
		}
		return end
	}
	uniform, skewed := simTime(nil), simTime(&config.MoE{Routing: "histogram", Histogram: good})
	if skewed <= uniform {
		t.Errorf("skewed histogram run ends at %d ns, not after the uniform run's %d", skewed, uniform)
	}
	for _, c := range []struct{ body, want string }{
		{"expert,count\n0,1\n", "no row for expert 1"},
		{"expert,count\n0,1\n0,2\n", "bad.csv:3: a second row"},
		{"expert,count\n200,1\n", "bad.csv:2: expert 200"},
		{"expert,n\n", "bad.csv:1: header"},
		{"expert,count\n0,-1\n", "bad.csv:2: count"},
		{"expert,count\n0,1,2\n", "bad.csv:2: wrong number of fields: 3, want 2 (expert,count)"},
		{"expert,count,extra\n", `bad.csv:1: header "expert,count,extra"`},
		{"", "bad.csv: empty file"},
		{"expert,count\n0,\"1\n", "bad.csv:2: extraneous or missing \" in quoted-field"},
		{"expert,count\nx,1\n", `bad.csv:2: expert "x" is not an index >= 0`},
		{"layer,expert,count\n-1,0,1\n", `bad.csv:2: layer "-1" is not an index >= 0`},
		{"layer,expert,count\n0,0,1\n", "no row for layer 0 expert 1"},
	} {
		bad := filepath.Join(dir, "bad.csv")
		if err := os.WriteFile(bad, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		s := qwenMoE(t, 2, 2)
		s.MoE = &config.MoE{Routing: "histogram", Histogram: bad}
		if _, err := Build(s, config.Source{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error containing %q", c.body, err, c.want)
		}
	}
}

// TestDPGroupRoofline: with the roofline predictor a dp 2 x ep 2 group
// times its MoE with the roofline's expert-parallel rank (no moe.csv
// needed) and runs every request to an end.
func TestDPGroupRoofline(t *testing.T) {
	s := qwenMoE(t, 2, 2)
	s.Predictor.Kind = "roofline"
	s.Workload.Limit = 60
	s.CheckInvariants = true
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := Build(s, config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.groups) != 1 {
		t.Fatalf("%d groups", len(b.groups))
	}
	if _, ok := b.groups[0].timer.(perf.EPRankTimer); !ok {
		t.Fatalf("group timer %T, want the roofline's EP rank", b.groups[0].timer)
	}
	sim, closer, err := b.NewSim(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	if done, seen := sim.Progress(); done != seen || done != 60 {
		t.Fatalf("%d of %d requests ended, want 60", done, seen)
	}
	if _, n := sim.LastGroupStep(0); n == 0 {
		t.Error("the group never stepped")
	}
}

// TestMoESectionChecked: the moe section is checked even where no group
// uses it: on a dense model it is an error, and at ep 1 its histogram is
// still read and checked against the model; at ep 2 a good one builds.
func TestMoESectionChecked(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.csv")
	if err := os.WriteFile(short, []byte("expert,count\n0,1\n1,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dense := config.Default()
	dense.MoE = &config.MoE{Routing: "zipf", Skew: 1}
	if _, err := Build(dense, config.Source{}); err == nil || !strings.Contains(err.Error(), "moe: meta-llama/Llama-3.1-8B is a dense model") {
		t.Errorf("moe on a dense model: %v", err)
	}
	for _, ep := range []int{1, 2} {
		s := qwenMoE(t, ep, ep)
		s.MoE = &config.MoE{Routing: "histogram", Histogram: short}
		if _, err := Build(s, config.Source{}); err == nil || !strings.Contains(err.Error(), "short.csv") {
			t.Errorf("ep %d, a histogram of 2 of the 128 experts: %v", ep, err)
		}
		s.MoE = &config.MoE{Routing: "zipf", Skew: 1}
		if _, err := Build(s, config.Source{}); err != nil {
			t.Errorf("ep %d, zipf routing: %v", ep, err)
		}
	}
}
