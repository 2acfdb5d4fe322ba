package calibrate

import (
	"errors"
	"fmt"
	"math"

	"github.com/servesim/servesim/internal/perf"
)

// allReduceNs is an all-reduce row as a run times it with constants c:
// vLLM's dispatch on the accelerator's link (perf.NewAllReduce, custom
// all-reduce enabled).
func (in *PerfDBInput) allReduceNs(r allReduceRow, c perf.CollectiveEff) float64 {
	return float64(perf.NewAllReduce(r.gpus, in.link, false).With(c, in.link).Ns(r.bytes))
}

// collectiveParams are the fitted all-reduce constants (perf.CollectiveEff)
// on NVLink, where the custom kernel and NCCL share one bus efficiency.
var collectiveParams = []param{
	field("allreduce.custom_latency", func(e *perf.Efficiency) *float64 { return &e.Collective.CustomLatencyNs }, perf.CustomARLatencyNVLinkNs, 500, 1e5),
	field("allreduce.nccl_latency", func(e *perf.Efficiency) *float64 { return &e.Collective.NCCLLatencyNs }, perf.NCCLLatencyNVLinkNs, 500, 1e5),
	field("allreduce.bus_eff", func(e *perf.Efficiency) *float64 { return &e.Collective.BusEff }, perf.NCCLBusEffNVLink, 0.05, 1.2),
}

// PCIe all-reduce constants, one pair per algorithm: vLLM's custom kernel
// (latency, peer-read efficiency) and NCCL (latency, bus efficiency).
var (
	pcieCustomParams = []param{
		field("allreduce.custom_latency", func(e *perf.Efficiency) *float64 { return &e.Collective.CustomLatencyNs }, perf.CustomARLatencyPCIeNs, 500, 1e5),
		field("allreduce.custom_bus_eff", func(e *perf.Efficiency) *float64 { return &e.Collective.CustomBusEff }, perf.NCCLBusEffPCIe, 0.02, 1.2),
	}
	pcieNCCLParams = []param{
		field("allreduce.nccl_latency", func(e *perf.Efficiency) *float64 { return &e.Collective.NCCLLatencyNs }, perf.NCCLLatencyP2PNs, 500, 1e5),
		field("allreduce.bus_eff", func(e *perf.Efficiency) *float64 { return &e.Collective.BusEff }, perf.NCCLBusEffPCIe, 0.02, 1.2),
	}
)

// runsCustom reports whether vLLM's dispatch (perf.NewAllReduce, custom
// all-reduce enabled) runs row r on its custom kernel: on link, of r's
// GPU count, under perf.CustomARMaxBytes.
func (in *PerfDBInput) runsCustom(r allReduceRow) bool {
	return perf.NewAllReduce(r.gpus, in.link, false).Custom && r.bytes < perf.CustomARMaxBytes
}

// fitAllReduce fits the all-reduce constants on the all-reduce rows,
// every GPU count weighing the same (robust loss on the log error, as
// the other tables), each row timed by the algorithm vLLM 0.19's dispatch
// runs it on (perf.NewAllReduce): on NVLink the custom kernel's and
// NCCL's latencies and one bus efficiency (both run over the same
// NVLink); over PCIe, where the custom kernel runs only at two GPUs with
// peer-to-peer and NCCL everywhere else, each algorithm's latency and
// bandwidth apart (those of an algorithm no row runs stay unset), and,
// when NCCL rows of several GPU counts are present, NCCL's ring with and
// without a shared host path (perf.CollectiveEff.NCCLHostShared), the
// better kept. No rows: eff unchanged.
func fitAllReduce(eff perf.Efficiency, in *PerfDBInput) perf.Efficiency {
	if len(in.allReduce) == 0 {
		return eff
	}
	eff.Collective = perf.CollectiveEff{}
	if in.link.NVLink {
		e, _ := fitCollective(eff, in.allReduce, in, collectiveParams)
		return e
	}
	// Each algorithm on the rows vLLM runs on it: the parameters of the
	// one do not time the rows of the other.
	var custom, nccl []allReduceRow
	counts := map[int]bool{}
	for _, r := range in.allReduce {
		if in.runsCustom(r) {
			custom = append(custom, r)
		} else {
			nccl = append(nccl, r)
			counts[r.gpus] = true
		}
	}
	if len(custom) > 0 {
		eff, _ = fitCollective(eff, custom, in, pcieCustomParams)
	}
	if len(nccl) > 0 {
		ring, cost := fitCollective(eff, nccl, in, pcieNCCLParams)
		if len(counts) > 1 {
			shared := eff
			shared.Collective.NCCLHostShared = true
			if e, c := fitCollective(shared, nccl, in, pcieNCCLParams); c < cost {
				ring = e
			}
		}
		eff = ring
	}
	return eff
}

// fitCollective fits params of eff's all-reduce constants on rows, some
// of in's all-reduce rows (see fitAllReduce), and returns the fitted
// efficiencies and their cost. A row weighs one over the number of all
// of in's rows of its GPU count, so that every GPU count weighs the same
// in the whole table, whichever algorithm its rows run on.
func fitCollective(eff perf.Efficiency, rows []allReduceRow, in *PerfDBInput, params []param) (perf.Efficiency, float64) {
	count := map[int]float64{}
	for _, r := range in.allReduce {
		count[r.gpus]++
	}
	decode := func(x []float64) perf.Efficiency {
		e := eff
		for i, p := range params {
			p.set(&e, math.Min(p.max, math.Max(p.min, math.Exp(x[i]))))
		}
		return e
	}
	cost := func(x []float64) float64 {
		c := decode(x).Collective
		var sum float64
		for _, r := range rows {
			sum += robust(math.Log(in.allReduceNs(r, c)/r.ns)) / count[r.gpus]
		}
		return sum
	}
	x0 := make([]float64, len(params))
	for i, p := range params {
		v := p.get(&eff)
		if v == 0 {
			v = p.init
		}
		x0[i] = math.Log(v)
	}
	best, bestCost := x0, cost(x0)
	for range 4 {
		x, c := nelderMead(cost, best, 0.3, 300*len(params), 1e-10)
		if c >= bestCost-1e-12 {
			break
		}
		best, bestCost = x, c
	}
	return decode(best), bestCost
}

// FitPerfDBAllReduce fits only the all-reduce constants of base (an
// entry fitted on other tables, e.g. whole-step profiles) on the
// database's all-reduce rows, every other field held, as FitPerfDB fits
// them (fitAllReduce: per algorithm of vLLM's dispatch on the
// accelerator's link). The returned entry is base with those constants,
// the all-reduce table's in-sample accuracy added to its fit record and
// FP8Source naming the tables; the report is the check of the whole
// entry on every selected row.
func FitPerfDBAllReduce(in *PerfDBInput, base *Entry) (*Entry, *Report, error) {
	if base == nil {
		return nil, nil, errors.New("calibrate: no calibration to fit the all-reduce constants of")
	}
	if len(in.allReduce) == 0 {
		return nil, nil, fmt.Errorf("calibrate: %s has no all-reduce rows for %s (a single-GPU node, or no link rate in the catalog?)", in.Source, in.Accelerator)
	}
	eff := fitAllReduce(base.Efficiency(), in)
	rep, err := CheckPerfDB(eff, in)
	if err != nil {
		return nil, nil, err
	}
	fitted := NewEntry(eff, in.Source, rep)
	en := *base
	en.AllReduce = fitted.AllReduce
	en.FP8Source = in.Source
	en.Fit = map[string]FitStats{}
	for k, v := range base.Fit {
		en.Fit[k] = v
	}
	en.Fit[TableAllReduce] = fitted.Fit[TableAllReduce]
	return &en, rep, nil
}
