package assemble

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/model"
)

// faultUnits groups the built engines into the instances that fail as
// one: an instance's data-parallel ranks together. unitOf maps "group[i]"
// to its unit.
func faultUnits(b *Built) ([]cluster.FaultUnit, map[string]int) {
	var units []cluster.FaultUnit
	byName := map[string]int{}
	perGroup := map[string]int{}
	for i := range b.instances {
		in := &b.instances[i]
		if in.Rank == 0 {
			name := fmt.Sprintf("%s[%d]", in.Group, perGroup[in.Group])
			perGroup[in.Group]++
			byName[name] = len(units)
			units = append(units, cluster.FaultUnit{Name: name, Pool: in.Group})
		}
		u := &units[len(units)-1]
		u.Engines = append(u.Engines, i)
		u.GPUs += in.TP * max(in.PP, 1)
	}
	return units, byName
}

// reloadNs is how long an instance of b.instances[i]'s shape takes to load
// its weights at gbps GB/s per GPU (every GPU loads its shard at once).
func reloadNs(b *Built, i int, gbps float64) (int64, error) {
	if gbps == 0 {
		return 0, nil
	}
	s := b.scenario
	bpe, err := model.BytesPerElem(s.Dtype)
	if err != nil {
		return 0, fmt.Errorf("dtype: %w", err)
	}
	qf, err := s.Format()
	if err != nil {
		return 0, err
	}
	in := &b.instances[i]
	w := weightsPerGPU(b.model, in.TP, max(in.PP, 1), max(in.EP, 1), bpe, qf.WeightBytes())
	return int64(math.Ceil(float64(w) / (gbps * 1e9) * 1e9)), nil
}

// faultConfig translates the scenario's faults section (nil when absent).
func faultConfig(b *Built) (*cluster.FaultConfig, error) {
	f := b.scenario.Faults
	if f == nil && b.scenario.Autoscaler == nil {
		return nil, nil
	}
	units, byName := faultUnits(b)
	if f == nil {
		// Autoscaling alone: no faults.
		zero, never := 0, true
		f = &config.Faults{MaxRetries: &zero, Restart: config.Restart{Never: never}}
	}
	cfg := &cluster.FaultConfig{Units: units, MaxRetries: *f.MaxRetries, TransferFailure: f.Transfers.FailureRate, Seed: b.scenario.Seed}
	if f.OnLoss == config.LossFail {
		cfg.OnLoss = cluster.FailOnLoss
	}
	if f.Transfers.KVLoadFailurePolicy == config.LoadFail {
		cfg.LoadFailure = cluster.FailOnLoadFailure
	}
	mtbf := map[string]float64{}
	for _, m := range f.MTBF {
		mtbf[m.Group] = m.Hours
	}
	for u := range cfg.Units {
		unit := &cfg.Units[u]
		unit.Recovery = -1
		if !f.Restart.Never {
			load, err := reloadNs(b, unit.Engines[0], *f.Restart.LoadGBps)
			if err != nil {
				return nil, err
			}
			unit.Recovery = int64(math.Round(*f.Restart.ProvisionS*1e9)) + load
		}
		if h, ok := mtbf[unit.Pool]; ok {
			unit.MTBF = int64(h * 3600e9)
		}
	}
	ref := func(field, r string) (int, error) {
		u, ok := byName[r]
		if !ok {
			return 0, fmt.Errorf("%s: no instance %q", field, r)
		}
		return u, nil
	}
	for i, l := range f.Losses {
		at := int64(math.Round(l.AtS * 1e9))
		if l.Instance != "" {
			u, err := ref(fmt.Sprintf("faults.losses[%d].instance", i), l.Instance)
			if err != nil {
				return nil, err
			}
			cfg.Losses = append(cfg.Losses, cluster.ScheduledLoss{Unit: u, At: at})
			continue
		}
		n := 0
		for u := range cfg.Units {
			if b.instances[cfg.Units[u].Engines[0]].Node == *l.Node {
				cfg.Losses = append(cfg.Losses, cluster.ScheduledLoss{Unit: u, At: at})
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("faults.losses[%d].node: no instance is placed on node %d (see `servesim describe` for the placement)", i, *l.Node)
		}
	}
	for i, st := range f.Stragglers {
		field := fmt.Sprintf("faults.stragglers[%d]", i)
		u, err := ref(field+".instance", st.Instance)
		if err != nil {
			return nil, err
		}
		unit := &cfg.Units[u]
		eng := unit.Engines[0]
		in := &b.instances[eng]
		switch {
		case len(unit.Engines) > 1 && st.Rank < len(unit.Engines):
			eng = unit.Engines[st.Rank]
		case len(unit.Engines) == 1 && st.Rank < in.TP*max(in.PP, 1):
		default:
			return nil, fmt.Errorf("%s.rank: instance %s has %d data-parallel ranks of tp %d x pp %d; rank %d is out of range", field, st.Instance, len(unit.Engines), in.TP, max(in.PP, 1), st.Rank)
		}
		cfg.Stragglers = append(cfg.Stragglers, cluster.StragglerWindow{Engine: eng, Start: sec(st.StartS), End: sec(st.EndS), Factor: st.Factor})
	}
	if a := b.scenario.Autoscaler; a != nil {
		as, err := autoscalerConfig(b, a, cfg.Units)
		if err != nil {
			return nil, err
		}
		cfg.Autoscaler = as
	}
	for i, w := range f.LinkDegradation {
		u, err := ref(fmt.Sprintf("faults.link_degradation[%d].instance", i), w.Instance)
		if err != nil {
			return nil, err
		}
		cfg.Links = append(cfg.Links, cluster.LinkWindow{Engines: cfg.Units[u].Engines, Start: sec(w.StartS), End: sec(w.EndS), Factor: w.Factor})
	}
	return cfg, nil
}

func sec(s float64) int64 { return int64(math.Round(s * 1e9)) }

// autoscalerConfig translates the autoscaler section over the units.
func autoscalerConfig(b *Built, a *config.Autoscaler, units []cluster.FaultUnit) (*cluster.AutoscalerConfig, error) {
	out := &cluster.AutoscalerConfig{Interval: sec(a.IntervalS)}
	for i, p := range a.Pools {
		sp := cluster.ScalePool{Name: p.Group, Target: p.Target, Window: sec(p.WindowS), Min: p.Min, Max: *p.Max, Initial: *p.Initial,
			UpCooldown: sec(*p.ScaleUpCooldownS), DownCooldown: sec(*p.ScaleDownCooldownS)}
		switch p.Metric {
		case config.MetricKVUsage:
			sp.Metric = cluster.KVUsageMetric
		case config.MetricTTFTP90:
			sp.Metric = cluster.TTFTP90Metric
		}
		for u := range units {
			if units[u].Pool == p.Group {
				sp.Units = append(sp.Units, u)
			}
		}
		if len(sp.Units) == 0 {
			return nil, fmt.Errorf("autoscaler.pools[%d].group: no instance of group %s", i, p.Group)
		}
		load, err := reloadNs(b, units[sp.Units[0]].Engines[0], *p.LoadGBps)
		if err != nil {
			return nil, err
		}
		sp.ColdStart = sec(*p.ProvisionS) + load
		out.Pools = append(out.Pools, sp)
	}
	return out, nil
}
