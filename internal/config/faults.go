package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Faults injects failures into a run (docs/faults.md): instance and node
// losses at given times or at a seeded mean time between failures, with a
// restart after provisioning plus weight loading; straggler windows; KV
// transfers that fail to load; and link degradation windows.
type Faults struct {
	// OnLoss is what happens to a request running (or waiting) on an
	// instance that is lost: retry (default: the router sends it again
	// to a live instance, from scratch) or fail.
	OnLoss LossAction `yaml:"on_loss" json:"on_loss"`
	// MaxRetries bounds how many times one request is sent again after
	// losses (retry); the next loss fails it. Default 3.
	MaxRetries *int `yaml:"max_retries" json:"max_retries"`
	// Restart is how a lost instance comes back.
	Restart Restart `yaml:"restart" json:"restart"`
	// Losses are instance or node losses at given times.
	Losses []Loss `yaml:"losses" json:"losses"`
	// MTBF gives instance groups random losses.
	MTBF []MTBF `yaml:"mtbf" json:"mtbf"`
	// Stragglers are windows in which one rank runs slower.
	Stragglers []Straggler `yaml:"stragglers" json:"stragglers"`
	// Transfers makes KV transfers fail to load (P/D only).
	Transfers TransferFaults `yaml:"transfers" json:"transfers"`
	// LinkDegradation are windows in which an instance's KV NICs run at a
	// fraction of their bandwidth (P/D only).
	LinkDegradation []LinkWindow `yaml:"link_degradation" json:"link_degradation"`
}

// Restart is the recovery of a lost instance: provisioning (detection,
// rescheduling, process start) then loading the weights.
type Restart struct {
	// ProvisionS is the time from the loss until weights start loading,
	// seconds. Default 30.
	ProvisionS *float64 `yaml:"provision_s" json:"provision_s"`
	// LoadGBps is the rate each GPU loads its weight shard at, GB/s
	// (storage or network bound). Default 2; 0: instant.
	LoadGBps *float64 `yaml:"load_gbps" json:"load_gbps"`
	// Never keeps lost instances down for the rest of the run.
	Never bool `yaml:"never" json:"never"`
}

// Loss is one scheduled loss: of an instance ("group[index]") or of every
// instance on a node.
type Loss struct {
	AtS      float64 `yaml:"at_s" json:"at_s"`
	Instance string  `yaml:"instance" json:"instance"`
	Node     *int    `yaml:"node" json:"node"`
}

// MTBF makes every instance of a group fail at exponentially distributed
// intervals of mean Hours (from the scenario seed's "faults" streams),
// counted from the start of the run and from each restart.
type MTBF struct {
	Group string  `yaml:"group" json:"group"`
	Hours float64 `yaml:"hours" json:"hours"`
}

// Straggler slows one rank of an instance by Factor over [StartS, EndS):
// its steps last Factor times longer, and a data-parallel group it belongs
// to waits for it in lockstep (a tensor-parallel instance is one engine:
// any slow rank slows all of it).
type Straggler struct {
	Instance string  `yaml:"instance" json:"instance"`
	Rank     int     `yaml:"rank" json:"rank"`
	StartS   float64 `yaml:"start_s" json:"start_s"`
	EndS     float64 `yaml:"end_s" json:"end_s"`
	Factor   float64 `yaml:"factor" json:"factor"`
}

// TransferFaults makes KV handoff transfers fail.
type TransferFaults struct {
	// FailureRate is the probability that one KV transfer fails to load,
	// drawn per transfer from the seed's "faults/transfers" stream.
	FailureRate float64 `yaml:"failure_rate" json:"failure_rate"`
	// KVLoadFailurePolicy is vLLM's kv_load_failure_policy: recompute
	// (default: the decode instance computes the prompt itself) or fail.
	KVLoadFailurePolicy LoadFailurePolicy `yaml:"kv_load_failure_policy" json:"kv_load_failure_policy"`
}

// LinkWindow scales an instance's KV NIC bandwidth by Factor (in (0, 1])
// over [StartS, EndS).
type LinkWindow struct {
	Instance string  `yaml:"instance" json:"instance"`
	StartS   float64 `yaml:"start_s" json:"start_s"`
	EndS     float64 `yaml:"end_s" json:"end_s"`
	Factor   float64 `yaml:"factor" json:"factor"`
}

// LossAction is what happens to a request on a lost instance
// (faults.on_loss).
type LossAction string

// Loss actions.
const (
	LossRetry LossAction = "retry"
	LossFail  LossAction = "fail"
)

// LoadFailurePolicy is vLLM's kv_load_failure_policy
// (faults.transfers.kv_load_failure_policy).
type LoadFailurePolicy string

// KV load failure policies.
const (
	LoadRecompute LoadFailurePolicy = "recompute"
	LoadFail      LoadFailurePolicy = "fail"
)

// ScaleMetric is an autoscaled pool's metric
// (autoscaler.pools[].metric).
type ScaleMetric string

// Autoscaler metrics.
const (
	MetricQueueDepth ScaleMetric = "queue_depth"
	MetricKVUsage    ScaleMetric = "kv_usage"
	MetricTTFTP90    ScaleMetric = "ttft_p90"
)

// Fault defaults.
const (
	DefaultMaxRetries = 3
	DefaultProvisionS = 30.0
	DefaultLoadGBps   = 2.0
)

// defaults fills a faults section's defaults.
func (f *Faults) defaults() {
	if f.OnLoss == "" {
		f.OnLoss = LossRetry
	}
	if f.MaxRetries == nil {
		n := DefaultMaxRetries
		f.MaxRetries = &n
	}
	if f.Restart.ProvisionS == nil {
		v := DefaultProvisionS
		f.Restart.ProvisionS = &v
	}
	if f.Restart.LoadGBps == nil {
		v := DefaultLoadGBps
		f.Restart.LoadGBps = &v
	}
	if f.Transfers.KVLoadFailurePolicy == "" {
		f.Transfers.KVLoadFailurePolicy = LoadRecompute
	}
}

// ParseInstanceRef splits "group[index]" into the group name and index.
func ParseInstanceRef(ref string) (string, int, error) {
	open := strings.IndexByte(ref, '[')
	if open <= 0 || !strings.HasSuffix(ref, "]") {
		return "", 0, fmt.Errorf("must name one instance as group[index], e.g. decode[0] (got %q)", ref)
	}
	i, err := strconv.Atoi(ref[open+1 : len(ref)-1])
	if err != nil || i < 0 {
		return "", 0, fmt.Errorf("must name one instance as group[index] with index >= 0 (got %q)", ref)
	}
	return ref[:open], i, nil
}

// instanceRef checks an instance reference against the groups.
func (s *Scenario) instanceRef(field, ref string, bad func(field, format string, args ...any)) {
	name, i, err := ParseInstanceRef(ref)
	if err != nil {
		bad(field, "%v", err)
		return
	}
	for _, g := range s.Instances {
		if g.Name == name {
			if i >= *g.Count {
				bad(field, "group %s has %d instances; index %d is out of range (0..%d)", name, *g.Count, i, *g.Count-1)
			}
			return
		}
	}
	bad(field, "no instance group is named %q (groups: %s)", name, strings.Join(s.groupNames(), ", "))
}

func (s *Scenario) groupNames() []string {
	var out []string
	for _, g := range s.Instances {
		out = append(out, g.Name)
	}
	return out
}

// window checks a [start, end) window in seconds.
func window(field string, start, end float64, bad func(field, format string, args ...any)) {
	if !(start >= 0) || start > MaxDurationS {
		bad(field+".start_s", "must be in [0, %g] seconds (got %g)", float64(MaxDurationS), start)
	}
	if !(end > start) || end > MaxDurationS {
		bad(field+".end_s", "must be after start_s and at most %g seconds (got %g)", float64(MaxDurationS), end)
	}
}

// validateFaults checks the faults section.
func (s *Scenario) validateFaults(bad func(field, format string, args ...any)) {
	f := s.Faults
	if f == nil {
		return
	}
	if f.OnLoss != LossRetry && f.OnLoss != LossFail {
		bad("faults.on_loss", "must be retry or fail (got %q)", f.OnLoss)
	}
	if *f.MaxRetries < 0 || *f.MaxRetries > 1000 {
		bad("faults.max_retries", "must be in [0, 1000] (got %d)", *f.MaxRetries)
	}
	if v := *f.Restart.ProvisionS; !(v >= 0) || v > MaxDurationS {
		bad("faults.restart.provision_s", "must be in [0, %g] seconds (got %g)", float64(MaxDurationS), v)
	}
	if v := *f.Restart.LoadGBps; !(v >= 0) || v > 1e4 {
		bad("faults.restart.load_gbps", "must be in [0, 10000] GB/s, 0 for instant loading (got %g)", v)
	}
	for i, l := range f.Losses {
		p := fmt.Sprintf("faults.losses[%d]", i)
		if !(l.AtS >= 0) || l.AtS > MaxDurationS {
			bad(p+".at_s", "must be in [0, %g] seconds (got %g)", float64(MaxDurationS), l.AtS)
		}
		switch {
		case (l.Instance == "") == (l.Node == nil):
			bad(p, "set exactly one of instance (group[index]) and node")
		case l.Instance != "":
			s.instanceRef(p+".instance", l.Instance, bad)
		case *l.Node < 0:
			bad(p+".node", "must be >= 0 (got %d)", *l.Node)
		}
	}
	for i, m := range f.MTBF {
		p := fmt.Sprintf("faults.mtbf[%d]", i)
		if !s.hasGroup(m.Group) {
			bad(p+".group", "no instance group is named %q (groups: %s)", m.Group, strings.Join(s.groupNames(), ", "))
		}
		if !(m.Hours > 0) || m.Hours > 1e6 {
			bad(p+".hours", "must be in (0, 1e6] hours (got %g)", m.Hours)
		}
	}
	for i, st := range f.Stragglers {
		p := fmt.Sprintf("faults.stragglers[%d]", i)
		s.instanceRef(p+".instance", st.Instance, bad)
		window(p, st.StartS, st.EndS, bad)
		if !(st.Factor >= 1) || st.Factor > 1000 {
			bad(p+".factor", "must be in [1, 1000] (got %g)", st.Factor)
		}
		if st.Rank < 0 {
			bad(p+".rank", "must be >= 0 (got %d)", st.Rank)
		}
	}
	t := f.Transfers
	if !(t.FailureRate >= 0 && t.FailureRate <= 1) {
		bad("faults.transfers.failure_rate", "must be a probability in [0, 1] (got %g)", t.FailureRate)
	}
	if t.KVLoadFailurePolicy != LoadRecompute && t.KVLoadFailurePolicy != LoadFail {
		bad("faults.transfers.kv_load_failure_policy", "must be recompute or fail, as vLLM's kv_load_failure_policy (got %q)", t.KVLoadFailurePolicy)
	}
	for i, w := range f.LinkDegradation {
		p := fmt.Sprintf("faults.link_degradation[%d]", i)
		s.instanceRef(p+".instance", w.Instance, bad)
		window(p, w.StartS, w.EndS, bad)
		if !(w.Factor > 0 && w.Factor <= 1) {
			bad(p+".factor", "must be in (0, 1]: the fraction of the bandwidth left (got %g)", w.Factor)
		}
	}
	if (t.FailureRate > 0 || len(f.LinkDegradation) > 0) && !s.PD() {
		bad("faults.transfers", "KV transfer failures and link degradation apply to disaggregated (prefill/decode) clusters only")
	}
	if s.PD() && s.Handoff.Policy != PolicyPull && s.Handoff.Policy != PolicyReject {
		bad("faults", "are modelled with handoff.policy pull or reject (got %s): the reserve, push and eager policies' in-flight states are not covered", s.Handoff.Policy)
	}
	if s.KVTiers != nil {
		bad("faults", "cannot be combined with kv_tiers yet (host and disk tiers surviving an instance loss are not modelled); remove one")
	}
	if s.FrontEnd != nil {
		bad("faults", "cannot be combined with frontend yet; remove one")
	}
}

func (s *Scenario) hasGroup(name string) bool {
	for _, g := range s.Instances {
		if g.Name == name {
			return true
		}
	}
	return false
}

// Autoscaler scales instance groups with load (docs/faults.md). Each
// pool's group count is its largest size; instances beyond the current
// size are parked (not serving, not counted in GPU-hours).
type Autoscaler struct {
	// IntervalS is the time between evaluations, seconds. Default 10.
	IntervalS float64 `yaml:"interval_s" json:"interval_s"`
	// Pools lists the autoscaled groups.
	Pools []ScalePool `yaml:"pools" json:"pools"`
}

// ScalePool autoscales one instance group.
type ScalePool struct {
	Group string `yaml:"group" json:"group"`
	// Metric is queue_depth (requests waiting, or queued for a handoff,
	// per serving instance; default), kv_usage (mean fraction of KV
	// blocks in use) or ttft_p90 (p90 TTFT in ms of the requests finished
	// within window_s, cluster-wide).
	Metric ScaleMetric `yaml:"metric" json:"metric"`
	Target float64     `yaml:"target" json:"target"`
	// WindowS is the ttft_p90 window, seconds. Default 60.
	WindowS float64 `yaml:"window_s" json:"window_s"`
	// Min and Max bound the pool's size (Max default: the group count);
	// Initial is its size at the start (default Min).
	Min     int  `yaml:"min" json:"min"`
	Max     *int `yaml:"max" json:"max"`
	Initial *int `yaml:"initial" json:"initial"`
	// Cool-downs after a scale-up and after a scale-down, seconds.
	// Defaults 30 and 120.
	ScaleUpCooldownS   *float64 `yaml:"scale_up_cooldown_s" json:"scale_up_cooldown_s"`
	ScaleDownCooldownS *float64 `yaml:"scale_down_cooldown_s" json:"scale_down_cooldown_s"`
	// Cold start: ProvisionS (default 60) then loading the weights at
	// LoadGBps per GPU (default 2; 0: instant).
	ProvisionS *float64 `yaml:"provision_s" json:"provision_s"`
	LoadGBps   *float64 `yaml:"load_gbps" json:"load_gbps"`
}

func f64(v float64) *float64 { return &v }

// defaults fills the autoscaler's defaults (group counts known).
func (a *Autoscaler) defaults(s *Scenario) {
	if a.IntervalS == 0 {
		a.IntervalS = 10
	}
	for i := range a.Pools {
		p := &a.Pools[i]
		if p.Metric == "" {
			p.Metric = MetricQueueDepth
		}
		if p.WindowS == 0 {
			p.WindowS = 60
		}
		if p.Max == nil {
			for _, g := range s.Instances {
				if g.Name == p.Group && g.Count != nil {
					n := *g.Count
					p.Max = &n
				}
			}
		}
		if p.Initial == nil {
			n := p.Min
			p.Initial = &n
		}
		if p.ScaleUpCooldownS == nil {
			p.ScaleUpCooldownS = f64(30)
		}
		if p.ScaleDownCooldownS == nil {
			p.ScaleDownCooldownS = f64(120)
		}
		if p.ProvisionS == nil {
			p.ProvisionS = f64(60)
		}
		if p.LoadGBps == nil {
			p.LoadGBps = f64(DefaultLoadGBps)
		}
	}
}

// validateAutoscaler checks the autoscaler section.
func (s *Scenario) validateAutoscaler(bad func(field, format string, args ...any)) {
	a := s.Autoscaler
	if a == nil {
		return
	}
	if !(a.IntervalS > 0) || a.IntervalS > MaxDurationS {
		bad("autoscaler.interval_s", "must be in (0, %g] seconds (got %g)", float64(MaxDurationS), a.IntervalS)
	}
	if len(a.Pools) == 0 {
		bad("autoscaler.pools", "list at least one pool ({group: NAME, target: N}) or remove the section")
	}
	seen := map[string]bool{}
	for i, p := range a.Pools {
		f := fmt.Sprintf("autoscaler.pools[%d]", i)
		count := -1
		for _, g := range s.Instances {
			if g.Name == p.Group {
				count = *g.Count
				if dp, _ := g.Parallel(); dp > 1 {
					bad(f+".group", "group %s has data-parallel instances; autoscaling them is not modelled", p.Group)
				}
			}
		}
		if count < 0 {
			bad(f+".group", "no instance group is named %q (groups: %s)", p.Group, strings.Join(s.groupNames(), ", "))
			continue
		}
		if seen[p.Group] {
			bad(f+".group", "group %s is autoscaled twice", p.Group)
		}
		seen[p.Group] = true
		switch p.Metric {
		case MetricQueueDepth, MetricKVUsage, MetricTTFTP90:
		default:
			bad(f+".metric", "must be queue_depth, kv_usage or ttft_p90 (got %q)", p.Metric)
		}
		if !(p.Target > 0) || p.Target > 1e9 || (p.Metric == MetricKVUsage && p.Target > 1) {
			bad(f+".target", "must be > 0 (a fraction <= 1 for kv_usage) (got %g)", p.Target)
		}
		if !(p.WindowS > 0) || p.WindowS > MaxDurationS {
			bad(f+".window_s", "must be in (0, %g] seconds (got %g)", float64(MaxDurationS), p.WindowS)
		}
		if p.Min < 1 || *p.Max < p.Min || *p.Max > count {
			bad(f, "needs 1 <= min <= max <= the group's count %d (got min %d, max %d)", count, p.Min, *p.Max)
		} else if *p.Initial < p.Min || *p.Initial > *p.Max {
			bad(f+".initial", "must be within [min %d, max %d] (got %d)", p.Min, *p.Max, *p.Initial)
		}
		for _, d := range []struct {
			name string
			v    float64
		}{{"scale_up_cooldown_s", *p.ScaleUpCooldownS}, {"scale_down_cooldown_s", *p.ScaleDownCooldownS}, {"provision_s", *p.ProvisionS}} {
			if !(d.v >= 0) || d.v > MaxDurationS {
				bad(f+"."+d.name, "must be in [0, %g] seconds (got %g)", float64(MaxDurationS), d.v)
			}
		}
		if v := *p.LoadGBps; !(v >= 0) || v > 1e4 {
			bad(f+".load_gbps", "must be in [0, 10000] GB/s, 0 for instant loading (got %g)", v)
		}
	}
	if s.PD() && s.Handoff.Policy != PolicyPull && s.Handoff.Policy != PolicyReject {
		bad("autoscaler", "is modelled with handoff.policy pull or reject (got %s)", s.Handoff.Policy)
	}
	if s.KVTiers != nil || s.FrontEnd != nil {
		bad("autoscaler", "cannot be combined with kv_tiers or frontend yet; remove one")
	}
}
