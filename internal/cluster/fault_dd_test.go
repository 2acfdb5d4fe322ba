package cluster

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/servesim/servesim/internal/workload"
)

// TestFaultScenarios runs the scenario files in testdata/faults: hand-built
// P/D clusters (the handoff harness of TestHandoffScenarios: steps cost
// 1 ms plus 1 us per token, KV is 1,000 bytes per token, links 1 GB/s,
// times in microseconds) with faults. Each instance is its own fault unit
// inst[i]. Besides the handoff commands:
//
//	faults [on-loss=fail|retry] [max-retries=N] [recover=US] [transfer-fail=P] [load=recompute|fail]
//	lose unit=N at=US                        a scheduled loss
//	requests from=ID n=N in=N out=N at=US [every=US]   n requests, ids from..from+n-1
func TestFaultScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/faults", func(t *testing.T, path string) {
		var sc *ddScenario
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "cluster":
				var err error
				sc, err = newDDScenario(d)
				if err != nil {
					return "error: " + err.Error()
				}
				sc.faults = &FaultConfig{MaxRetries: 3, Seed: 1}
				for i := range sc.insts {
					sc.faults.Units = append(sc.faults.Units, FaultUnit{Name: fmt.Sprintf("inst[%d]", i), Pool: sc.insts[i].role.String(), Engines: []int{i}, GPUs: 1, Recovery: -1})
				}
				return "ok"
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
			case "request":
				var id, in, out int
				var at int64
				d.ScanArgs(t, "id", &id)
				d.ScanArgs(t, "in", &in)
				d.ScanArgs(t, "out", &out)
				if d.HasArg("at") {
					d.ScanArgs(t, "at", &at)
				}
				sc.reqs = append(sc.reqs, workload.Request{ID: int64(id), Arrival: at * 1000, InputTokens: in, OutputTokens: out})
				return fmt.Sprintf("%d requests", len(sc.reqs))
			case "requests":
				var from, n, in, out int
				var at, every int64
				d.ScanArgs(t, "from", &from)
				d.ScanArgs(t, "n", &n)
				d.ScanArgs(t, "in", &in)
				d.ScanArgs(t, "out", &out)
				d.ScanArgs(t, "at", &at)
				if d.HasArg("every") {
					d.ScanArgs(t, "every", &every)
				}
				for i := 0; i < n; i++ {
					sc.reqs = append(sc.reqs, workload.Request{ID: int64(from + i), Arrival: (at + int64(i)*every) * 1000, InputTokens: in, OutputTokens: out})
				}
				return fmt.Sprintf("%d requests", len(sc.reqs))
			case "run":
				out := sc.run(t, d.HasArg("trace"))
				return strings.TrimRight(out, "\n") + "\n"
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}
