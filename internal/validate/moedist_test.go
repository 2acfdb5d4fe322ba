package validate

import (
	"strings"
	"testing"
)

// MoEDistribution selects the perfdb predictor's moe_perf routing rows
// (validate --moe-distribution). On the Qwen3-30B-A3B DP2 × EP2 run the
// power-law rows at alpha 1.01 time the expert-parallel block 2.7 to 5.7 %
// below the balanced ones at the decode steps' gathered counts (128 to 256
// tokens: 0.4217 against 0.4473 ms, 0.4485 against 0.4610 ms, rows of
// rtx_pro_6000_server), so the run decodes faster; the option is refused
// for the other predictors and for names the tables do not hold.
func TestMoEDistributionOption(t *testing.T) {
	name := "RTXPRO6000-Qwen3-30B-A3B-Instruct-2507"
	o := Options{Measured: measured(t, name), Name: name, Predictor: "perfdb", MoEDistribution: "power_law_1.01"}
	s, _, _, err := Scenario(o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Predictor.MoEDistribution != "power_law_1.01" {
		t.Fatalf("predictor.moe_distribution %q, want power_law_1.01", s.Predictor.MoEDistribution)
	}
	pl, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	o.MoEDistribution = ""
	bal, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Stats[5].Stat != "mean" || pl.Stats[5].Metric != "TPOT" || !(pl.Stats[5].Simulated < bal.Stats[5].Simulated) {
		t.Errorf("TPOT mean: power_law_1.01 %+v, balanced %+v; want the power-law run faster", pl.Stats[5], bal.Stats[5])
	}
	for _, c := range []struct{ pred, dist string }{{"profile", "balanced"}, {"roofline", "power_law_1.2"}, {"perfdb", "zipf"}} {
		_, err := Run(Options{Measured: measured(t, name), Name: name, Predictor: c.pred, MoEDistribution: c.dist})
		if err == nil || !strings.Contains(err.Error(), "predictor.moe_distribution") {
			t.Errorf("%s with %s: %v, want an error naming predictor.moe_distribution", c.pred, c.dist, err)
		}
	}
}
