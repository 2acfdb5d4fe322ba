package cluster

import (
	"fmt"
	"math"
	"slices"

	"github.com/servesim/servesim/internal/des"
	"github.com/servesim/servesim/internal/metrics"
)

// This file holds the autoscaler (docs/faults.md): per pool of instances,
// a target metric evaluated every interval, bounds and cool-downs, cold
// starts (provisioning plus weight loading) and graceful scale-down (a
// draining instance takes no new requests, finishes what it holds, hands
// off its pinned KV, then parks). It shares the fault model's units and
// their down/closed marks.

// evScale is the autoscaler's periodic evaluation; evReady ends a cold
// start (Target = unit).
const (
	evScale int32 = 70 + iota
	evReady
)

// ScaleMetric is what an autoscaler pool tracks.
type ScaleMetric uint8

// Autoscaler metrics.
const (
	QueueDepthMetric ScaleMetric = iota // requests waiting (and queued for a handoff) per serving instance
	KVUsageMetric                       // mean fraction of KV blocks in use over serving instances
	TTFTP90Metric                       // p90 TTFT (ms) of the requests finished within the window
)

// ScalePool is one autoscaled pool: its units in order (the first
// Initial serve from the start, the rest are parked).
type ScalePool struct {
	Name                     string
	Units                    []int
	Metric                   ScaleMetric
	Target                   float64
	Window                   int64 // TTFT window, ns
	Min, Max, Initial        int
	UpCooldown, DownCooldown int64 // ns
	ColdStart                int64 // provisioning plus weight loading, ns
}

// AutoscalerConfig configures the autoscaler.
type AutoscalerConfig struct {
	Interval int64 // ns between evaluations
	Pools    []ScalePool
}

// unitState is where a fault unit stands.
type unitState uint8

const (
	uServing unitState = iota
	uDraining
	uStarting
	uLost // down after a loss (restarting, or gone for good)
	uParked
)

var unitStateNames = [...]string{"serving", "draining", "starting", "lost", "parked"}

// scaler is the autoscaler's run state.
type scaler struct {
	cfg            AutoscalerConfig
	lastUp, lastDn []int64 // per pool: last scale-up decision; last scale-down or instance ready
	ttft           []ttftSample
	scratch        []float64
}

type ttftSample struct{ at, ns int64 }

// setupScaler parks the units beyond each pool's initial size and arms
// the first evaluation.
func (s *Sim) setupScaler(cfg AutoscalerConfig) error {
	f := s.ft
	if cfg.Interval <= 0 {
		return fmt.Errorf("cluster: autoscaler interval must be > 0")
	}
	sc := &scaler{cfg: cfg, lastUp: make([]int64, len(cfg.Pools)), lastDn: make([]int64, len(cfg.Pools))}
	for pi, p := range cfg.Pools {
		if p.Min < 0 || p.Max < p.Min || p.Max > len(p.Units) || p.Initial < p.Min || p.Initial > p.Max || !(p.Target > 0) {
			return fmt.Errorf("cluster: autoscaler pool %s: need 0 <= min <= initial <= max <= %d units and a target > 0", p.Name, len(p.Units))
		}
		sc.lastUp[pi], sc.lastDn[pi] = math.MinInt64/2, math.MinInt64/2
		for k, u := range p.Units {
			if u < 0 || u >= len(f.cfg.Units) {
				return fmt.Errorf("cluster: autoscaler pool %s: unknown unit %d", p.Name, u)
			}
			if k >= p.Initial {
				f.ustate[u] = uParked
				f.billedFrom[u] = -1
				for _, e := range f.cfg.Units[u].Engines {
					f.down[e], f.closed[e] = true, true
				}
			}
		}
	}
	f.scale = sc
	return s.schedule(des.Event{At: cfg.Interval, Kind: evScale})
}

// scaleTick evaluates every pool and re-arms the next evaluation.
func (s *Sim) scaleTick(now int64) error {
	sc := s.ft.scale
	for pi := range sc.cfg.Pools {
		if err := s.scalePool(pi, now); err != nil {
			return err
		}
	}
	return s.schedule(des.Event{At: satAdd(now, sc.cfg.Interval), Kind: evScale})
}

// scalePool applies one pool's decision at now: desired = ceil(serving x
// metric / target) (the Kubernetes horizontal autoscaler's rule), within
// [min, max], scaling up (cold starts) after the up cool-down and down
// (draining) after the down cool-down.
func (s *Sim) scalePool(pi int, now int64) error {
	f := s.ft
	sc := f.scale
	p := &sc.cfg.Pools[pi]
	serving, starting := 0, 0
	for _, u := range p.Units {
		switch f.ustate[u] {
		case uServing:
			serving++
		case uStarting:
			starting++
		case uDraining:
			if err := s.maybePark(u, now); err != nil {
				return err
			}
		}
	}
	v := s.poolMetric(p, now)
	desired := p.Min
	if serving > 0 {
		desired = int(math.Ceil(float64(serving) * v / p.Target))
	} else if v > 0 {
		desired = max(p.Min, 1)
	}
	desired = min(max(desired, p.Min), p.Max)
	switch {
	case desired > serving+starting && now-sc.lastUp[pi] >= p.UpCooldown:
		sc.lastUp[pi] = now
		for _, u := range p.Units {
			if serving+starting >= desired {
				break
			}
			if f.ustate[u] != uParked {
				continue
			}
			starting++
			f.ustate[u] = uStarting
			f.billedFrom[u] = now
			f.stats.ScaleUps++
			s.logFault(now, u, "scale-up")
			if err := s.schedule(des.Event{At: satAdd(now, p.ColdStart), Kind: evReady, Target: int32(u)}); err != nil {
				return err
			}
		}
	case desired < serving && now-sc.lastDn[pi] >= p.DownCooldown:
		sc.lastDn[pi] = now
		for k := len(p.Units) - 1; k >= 0 && serving > desired; k-- {
			u := p.Units[k]
			if f.ustate[u] != uServing {
				continue
			}
			serving--
			f.ustate[u] = uDraining
			f.stats.ScaleDowns++
			s.logFault(now, u, "scale-down")
			for _, e := range f.cfg.Units[u].Engines {
				f.closed[e] = true
			}
			if err := s.maybePark(u, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// poolMetric is the pool's metric over its serving units.
func (s *Sim) poolMetric(p *ScalePool, now int64) float64 {
	f := s.ft
	if p.Metric == TTFTP90Metric {
		sc := f.scale
		from := now - p.Window
		k := 0
		for _, t := range sc.ttft {
			if t.at >= from {
				sc.ttft[k] = t
				k++
			}
		}
		sc.ttft = sc.ttft[:k]
		if k == 0 {
			return 0
		}
		sc.scratch = sc.scratch[:0]
		for _, t := range sc.ttft {
			sc.scratch = append(sc.scratch, float64(t.ns)/1e6)
		}
		slices.Sort(sc.scratch)
		return sc.scratch[int(math.Ceil(0.9*float64(k)))-1]
	}
	sum, n := 0.0, 0
	for _, u := range p.Units {
		if f.ustate[u] != uServing {
			continue
		}
		n++
		for _, e := range f.cfg.Units[u].Engines {
			eng := s.engines[e]
			if p.Metric == KVUsageMetric {
				sum += float64(eng.Pool().Used()) / float64(eng.Pool().Capacity()) / float64(len(f.cfg.Units[u].Engines))
			} else {
				sum += float64(eng.Waiting() + eng.HandoffQueue())
			}
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// noteTTFT records a finished request's TTFT for the TTFT metric.
func (s *Sim) noteTTFT(rec *metrics.Record, now int64) {
	if rec.Outcome != metrics.Finished || rec.FirstToken < 0 {
		return
	}
	s.ft.scale.ttft = append(s.ft.scale.ttft, ttftSample{at: now, ns: rec.FirstToken - rec.Arrival})
}

// ready ends unit u's cold start: it serves from now on.
func (s *Sim) ready(u int, now int64) error {
	f := s.ft
	if f.ustate[u] != uStarting {
		return nil
	}
	f.ustate[u] = uServing
	s.logFault(now, u, "ready")
	for pi, p := range f.scale.cfg.Pools {
		if slices.Contains(p.Units, u) {
			f.scale.lastDn[pi] = now // the down cool-down counts from the last change of size
		}
	}
	for _, e := range f.cfg.Units[u].Engines {
		f.down[e], f.closed[e] = false, false
	}
	return s.armMTBF(u, now)
}

// maybePark parks draining unit u once it holds nothing: no request, no
// queued or reserved handoff, no pinned KV.
func (s *Sim) maybePark(u int, now int64) error {
	f := s.ft
	if f.ustate[u] != uDraining {
		return nil
	}
	for _, e := range f.cfg.Units[u].Engines {
		eng := s.engines[e]
		if eng.HasWork() || eng.InFlight() > 0 || eng.HandoffQueue() > 0 || eng.Reserved() > 0 || eng.PinnedBlocks() > 0 {
			return nil
		}
	}
	for _, e := range f.cfg.Units[u].Engines {
		if s.pd != nil && s.pdHolds(e) {
			return nil
		}
	}
	f.ustate[u] = uParked
	s.unbill(u, now)
	s.logFault(now, u, "parked")
	for _, e := range f.cfg.Units[u].Engines {
		f.down[e], f.closed[e] = true, true
		f.floor[e] = s.engines[e].NextBatchID()
		if err := s.engines[e].Reset(); err != nil {
			return err
		}
	}
	return nil
}

// parkIfDrained parks engine inst's unit once it is draining and holds
// nothing any more.
func (s *Sim) parkIfDrained(inst int, now int64) error {
	if u, ok := s.unitDraining(inst); ok {
		return s.maybePark(u, now)
	}
	return nil
}

// pdHolds reports whether a handoff still has state on engine e.
func (s *Sim) pdHolds(e int) bool {
	for _, h := range s.pd.hands.all {
		if (h.p == e && (h.holds.has(holdPinned) || h.st == hPrefilling)) || (h.d == e && (h.st == hQueued || h.st == hTransfer || h.st == hDecoding)) {
			return true
		}
	}
	return false
}

// unbill stops unit u's GPU-time count at now.
func (s *Sim) unbill(u int, now int64) {
	f := s.ft
	if f.billedFrom[u] >= 0 {
		f.billedNs[u] += now - f.billedFrom[u]
		f.billedFrom[u] = -1
	}
}

// unitDraining reports whether engine e's unit is draining.
func (s *Sim) unitDraining(e int) (int, bool) {
	if s.ft == nil || s.ft.scale == nil {
		return -1, false
	}
	u := s.ft.unitOf[e]
	return int(u), u >= 0 && s.ft.ustate[u] == uDraining
}

// UnitState returns the state name of engine e's unit for time series
// ("serving" when e is in no unit).
func (s *Sim) UnitState(e int) string {
	if s.ft == nil || s.ft.unitOf[e] < 0 {
		return "serving"
	}
	return unitStateNames[s.ft.ustate[s.ft.unitOf[e]]]
}
