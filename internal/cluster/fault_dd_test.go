package cluster

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestFaultScenarios runs the scenario files in testdata/faults: hand-built
// P/D clusters (the handoff harness of TestHandoffScenarios: steps cost
// 1 ms plus 1 us per token, KV is 1,000 bytes per token, links 1 GB/s,
// times in microseconds) with faults. Each instance is its own fault unit
// inst[i]. Besides the handoff commands (handoffCmd):
//
//	faults [on-loss=fail|retry] [max-retries=N] [recover=US] [transfer-fail=P] [load=recompute|fail]
//	lose unit=N at=US                        a scheduled loss
//	autoscale interval=US pool=NAME target=F min=N max=N initial=N cold=US [up-cool=US] [down-cool=US] [window=US] [metric=queue|kv|ttft]
func TestFaultScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/faults", func(t *testing.T, path string) {
		var sc *ddScenario
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, ok := handoffCmd(t, d, &sc)
			if ok && d.Cmd == "cluster" && sc != nil {
				sc.faults = &FaultConfig{MaxRetries: 3, Seed: 1}
				for i := range sc.insts {
					sc.faults.Units = append(sc.faults.Units, FaultUnit{Name: fmt.Sprintf("inst[%d]", i), Pool: sc.insts[i].role.String(), Engines: []int{i}, GPUs: 1, Recovery: -1})
				}
			}
			if ok {
				return out
			}
			switch d.Cmd {
			case "faults":
				f := sc.faults
				if d.HasArg("on-loss") {
					var v string
					d.ScanArgs(t, "on-loss", &v)
					if v == "fail" {
						f.OnLoss = FailOnLoss
					}
				}
				if d.HasArg("max-retries") {
					d.ScanArgs(t, "max-retries", &f.MaxRetries)
				}
				if d.HasArg("recover") {
					var us int64
					d.ScanArgs(t, "recover", &us)
					for i := range f.Units {
						f.Units[i].Recovery = us * 1000
					}
				}
				if d.HasArg("transfer-fail") {
					d.ScanArgs(t, "transfer-fail", &f.TransferFailure)
				}
				if d.HasArg("load") {
					var v string
					d.ScanArgs(t, "load", &v)
					if v == "fail" {
						f.LoadFailure = FailOnLoadFailure
					}
				}
				return "ok"
			case "autoscale":
				var interval, cold int64
				var pool string
				sp := ScalePool{Min: 1, Max: 1, Initial: 1, Target: 1}
				d.ScanArgs(t, "interval", &interval)
				d.ScanArgs(t, "pool", &pool)
				d.ScanArgs(t, "target", &sp.Target)
				d.ScanArgs(t, "min", &sp.Min)
				d.ScanArgs(t, "max", &sp.Max)
				d.ScanArgs(t, "initial", &sp.Initial)
				d.ScanArgs(t, "cold", &cold)
				sp.Name, sp.ColdStart = pool, cold*1000
				for _, k := range []struct {
					arg string
					dst *int64
				}{{"up-cool", &sp.UpCooldown}, {"down-cool", &sp.DownCooldown}, {"window", &sp.Window}} {
					if d.HasArg(k.arg) {
						var us int64
						d.ScanArgs(t, k.arg, &us)
						*k.dst = us * 1000
					}
				}
				if d.HasArg("metric") {
					var m string
					d.ScanArgs(t, "metric", &m)
					sp.Metric = map[string]ScaleMetric{"queue": QueueDepthMetric, "kv": KVUsageMetric, "ttft": TTFTP90Metric}[m]
				}
				for u, unit := range sc.faults.Units {
					if unit.Pool == pool {
						sp.Units = append(sp.Units, u)
					}
				}
				sc.faults.Autoscaler = &AutoscalerConfig{Interval: interval * 1000, Pools: []ScalePool{sp}}
				return "ok"
			case "lose":
				var unit int
				var at int64
				d.ScanArgs(t, "unit", &unit)
				d.ScanArgs(t, "at", &at)
				sc.faults.Losses = append(sc.faults.Losses, ScheduledLoss{Unit: unit, At: at * 1000})
				return fmt.Sprintf("%d losses", len(sc.faults.Losses))
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}
