package config

import (
	"errors"
	"fmt"
	"slices"

	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/workload"
)

// Validate checks a defaulted scenario and returns every problem, each
// naming its field.
func (s *Scenario) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if s.Dtype != "bf16" && s.Dtype != "fp16" {
		bad("dtype", "must be bf16 or fp16 (got %q)", s.Dtype)
	} else if _, err := s.Format(); err != nil {
		errs = append(errs, err)
	}
	switch s.Predictor.FormatScaling {
	case "", FormatScalingRooflineRatio:
	default:
		bad("predictor.format_scaling", "must be empty (refuse formats the profile was not measured with) or %s (got %q)", FormatScalingRooflineRatio, s.Predictor.FormatScaling)
	}
	switch s.Predictor.Kind {
	case PredictorProfile, PredictorRoofline:
		for _, f := range []struct{ name, v string }{{"path", s.Predictor.Path}, {"system", s.Predictor.System}, {"version", s.Predictor.Version}, {"moe_distribution", s.Predictor.MoEDistribution}} {
			if f.v != "" {
				bad("predictor."+f.name, "applies to predictor.kind perfdb only (kind is %s); remove it or set kind: perfdb", s.Predictor.Kind)
			}
		}
	case PredictorPerfDB:
		switch s.Predictor.MoEDistribution {
		case "", "balanced", "power_law_1.01", "power_law_1.2":
		default:
			bad("predictor.moe_distribution", "must be balanced, power_law_1.01 or power_law_1.2 (got %q)", s.Predictor.MoEDistribution)
		}
	default:
		bad("predictor.kind", "must be profile, roofline or perfdb (got %q)", s.Predictor.Kind)
	}
	s.Engine.validate("engine", bad)
	if err := s.validateAccelerators(); err != nil {
		errs = append(errs, err)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"block_size", s.Engine.BlockSize}} {
		if f.v == 0 {
			bad("engine."+f.name, "must be > 0 (got 0)")
		}
	}
	if s.Engine.GPUMemoryUtilization == 0 {
		bad("engine.gpu_memory_utilization", "must be in (0, 1] (got 0)")
	}
	if s.Seed == 0 {
		bad("seed", "must be > 0 (got 0)")
	}
	if len(s.Instances) == 0 {
		bad("instances", "at least one instance group is required")
	}
	for i := range s.Instances {
		g := &s.Instances[i]
		p := fmt.Sprintf("instances[%d]", i)
		if *g.Count <= 0 {
			bad(p+".count", "must be > 0 (got %d)", *g.Count)
		}
		switch g.Role {
		case RoleMixed, RolePrefill, RoleDecode:
		default:
			bad(p+".role", "must be mixed, prefill or decode (got %q)", g.Role)
		}
		if *g.TP <= 0 {
			bad(p+".tp", "must be > 0 (got %d)", *g.TP)
		}
		if g.PP != nil && *g.PP <= 0 {
			bad(p+".pp", "must be > 0 (got %d)", *g.PP)
		}
		s.validateParallel(g, p, bad)
		if g.Engine != nil {
			g.Engine.validate(p+".engine", bad)
		}
	}
	if !slices.Contains(Routers, s.Router) {
		bad("router", "must be %s or %s (got %q)", joinNames(Routers[:len(Routers)-1], ", "), Routers[len(Routers)-1], s.Router)
	}
	s.validateHandoff(bad)
	s.validateFaults(bad)
	s.validateAutoscaler(bad)
	s.validateSwap(bad)
	s.validateBounds(bad)
	if t := s.KVTiers; t != nil {
		t.validate(s, bad)
	}
	if f := s.FrontEnd; f != nil {
		f.Validate(bad)
	}
	if m := s.MoE; m != nil {
		switch m.Routing {
		case "", RoutingUniform, RoutingZipf:
		case RoutingHistogram:
			if m.Histogram == "" {
				bad("moe.histogram", "routing histogram needs a CSV file of per-expert counts (expert,count)")
			}
		default:
			bad("moe.routing", "must be uniform, zipf or histogram (got %q)", m.Routing)
		}
		if !(m.Skew >= 0 && m.Skew <= 10) {
			bad("moe.skew", "must be in [0, 10] (got %g)", m.Skew)
		}
	}

	for i, t := range s.SLO.Percentiles {
		p := fmt.Sprintf("slo.percentiles[%d]", i)
		switch t.Metric {
		case MetricTTFT, MetricTPOT, MetricITL, MetricE2E:
		default:
			bad(p+".metric", "must be ttft, tpot, itl or e2e (got %q)", t.Metric)
		}
		switch t.Percentile {
		case 50, 90, 95, 99:
		default:
			bad(p+".percentile", "must be 50, 90, 95 or 99 (got %d)", t.Percentile)
		}
	}
	w := &s.Workload
	switch n := countSet(w.Trace != "", w.Synthetic != nil, w.Chat != nil, w.SharedPrefix != nil); {
	case n == 0:
		bad("workload", "set a trace, or one of synthetic, chat and shared_prefix")
	case n > 1:
		bad("workload", "set only one of trace, synthetic, chat and shared_prefix")
	}
	if w.Format != TraceJSONL && w.Format != TraceVLLMRequests {
		bad("workload.format", "must be jsonl or vllm-requests (got %q)", w.Format)
	}
	if w.Limit < 0 {
		bad("workload.limit", "must be >= 0 (got %d)", w.Limit)
	}
	if w.WarmupRequests < 0 || w.WarmupRequests > MaxConcurrencyBound {
		bad("workload.warmup_requests", "must be in [0, %d] (got %d)", MaxConcurrencyBound, w.WarmupRequests)
	}
	if w.MaxConcurrency < 0 || w.MaxConcurrency > MaxConcurrencyBound {
		bad("workload.max_concurrency", "must be in [0, %d] (got %d; 0 means no limit)", MaxConcurrencyBound, w.MaxConcurrency)
	}
	if w.IgnoreArrivalTimes && w.TimeScale != 1 {
		bad("workload.time_scale", "has no effect with workload.ignore_arrival_times (every entry is due at 0; got %g); leave it at 1 or drop ignore_arrival_times", w.TimeScale)
	}
	if w.Chat != nil {
		if err := w.Chat.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if w.SharedPrefix != nil {
		if err := w.SharedPrefix.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if w.Synthetic != nil {
		if err := w.Synthetic.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if w.Priorities != nil {
		if err := workload.ValidatePriorities(w.Priorities, "workload.priorities"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// countSet returns how many of the flags are true.
func countSet(flags ...bool) int {
	n := 0
	for _, f := range flags {
		if f {
			n++
		}
	}
	return n
}

// validateAccelerators checks the scenario's own accelerators against the
// built-in catalog, each error naming its field
// ("accelerators[0].mem_bw_gbps: ..."). With an accelerators_file the
// entries may build on the file's, which is read when the scenario is
// assembled (relative to the scenario file), so they are checked then.
func (s *Scenario) validateAccelerators() error {
	if len(s.Accelerators) == 0 || s.AcceleratorsFile != "" {
		return nil
	}
	base, err := hw.Default()
	if err != nil {
		return err
	}
	_, err = base.With(s.Accelerators, AcceleratorField)
	return err
}

// AcceleratorField names field of the scenario's accelerators[i] in
// errors.
func AcceleratorField(i int, field string) string {
	return fmt.Sprintf("accelerators[%d].%s", i, field)
}
