package assemble

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/model"
	"github.com/servesim/servesim/internal/quant"
)

// TestWideEPGroups: a DP instance larger than a node builds when it fills
// whole nodes, names its nodes and backend in the summary, and is refused
// naming the fix when it does not.
func TestWideEPGroups(t *testing.T) {
	for _, c := range []struct {
		name     string
		dp, node int
		backend  config.All2AllBackend
		want     string // error substring, or summary substring when ok
		ok       bool
	}{
		{"two nodes of 4", 8, 4, config.All2AllDeepEPLowLatency, "ep 8 over 2 nodes of 4 GPUs (dp 4 a node); all-to-all deepep_low_latency across the NICs", true},
		{"default backend across nodes", 4, 2, "", "ep 4 over 2 nodes of 2 GPUs (dp 2 a node); all-to-all allgather_reducescatter across the NICs", true},
		{"uneven", 6, 4, "", "span nodes of 4 H100 GPUs unevenly", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := qwenMoE(t, c.dp, c.dp)
			s.Hardware = "H100"
			s.Instances[0].Hardware = "H100"
			s.Predictor.Kind = config.PredictorRoofline
			s.Instances[0].NodeGPUs = c.node
			s.Instances[0].All2AllBackend = c.backend
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			b, err := Build(s, config.Source{})
			if !c.ok {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("err %v, want %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(b.Describe().Lines(), "\n"); !strings.Contains(got, c.want) {
				t.Errorf("summary lacks %q:\n%s", c.want, got)
			}
		})
	}
}

// TestRedundantExpertBytes: DeepSeek-V3's routed experts, 256 per MoE
// layer over 58 layers of 3 x 7168 x 2048 weights (653,908,770,816
// parameters, 2,554,331,136 an expert), in block FP8 (1 + 4/128² bytes a
// weight). 32 redundant experts over 16 GPUs put 2 more on each:
// 5,108,662,272 x (1 + 1/4096) = 5,109,909,504 bytes.
func TestRedundantExpertBytes(t *testing.T) {
	m, err := model.Load(model.Builtin(), "deepseek-ai/DeepSeek-V3")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.RoutedExpertParams(); got != 58*256*3*7168*2048 {
		t.Fatalf("routed expert parameters %d, want %d", got, 58*256*3*7168*2048)
	}
	qf := quant.Format{Method: quant.FP8, Block: [2]int{128, 128}}
	if got := redundantExpertBytes(m, 32, 16, qf); got != 5_109_909_504 {
		t.Errorf("%d bytes, want 5109909504", got)
	}
	if got := redundantExpertBytes(m, 0, 16, qf); got != 0 {
		t.Errorf("no redundancy: %d bytes", got)
	}
}

// TestDeepEPTableUsed: under the perfdb predictor an EP group of exactly
// one H200 node on a DeepEP backend reads the database's DeepEP table (the
// summary names it); across two nodes, or under the roofline, the model
// answers.
func TestDeepEPTableUsed(t *testing.T) {
	for _, c := range []struct {
		name  string
		dp    int
		kind  config.PredictorKind
		table bool
	}{
		{"one node, perfdb", 8, config.PredictorPerfDB, true},
		{"two nodes, perfdb", 16, config.PredictorPerfDB, false},
		{"one node, roofline", 8, config.PredictorRoofline, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := config.Default()
			s.Model, s.Hardware, s.Quantization = "deepseek-ai/DeepSeek-R1", "H200", "fp8"
			s.QuantizationConfig = &config.QuantizationConfig{WeightBlockSize: []int{128, 128}}
			s.Predictor.Kind = c.kind
			dp := c.dp
			s.Instances = []config.Group{{DP: &dp, EP: &dp, WideEP: config.WideEP{All2AllBackend: config.All2AllDeepEPLowLatency}}}
			s.FillGroups()
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			b, err := Build(s, config.Source{})
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(b.Describe().Lines(), "\n")
			want := "DeepEP times from the database's data/h200_sxm/comm/sglang/0.5.12/wideep_deepep_ll_perf.parquet"
			if strings.Contains(got, want) != c.table {
				t.Errorf("table named: %v, want %v:\n%s", !c.table, c.table, got)
			}
		})
	}
}
