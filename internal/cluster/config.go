package cluster

import (
	"errors"
	"fmt"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/frontend"
	"github.com/servesim/servesim/internal/kvtier"
	"github.com/servesim/servesim/internal/link"
	"github.com/servesim/servesim/internal/workload"
)

// Config is everything a simulation is made of. New checks it (Validate)
// and returns the Sim; nothing is set on a Sim after New.
type Config struct {
	// Engines are the instances, indexed by their position (at least
	// one).
	Engines []*engine.Engine
	// Source is the workload.
	Source workload.Source
	// Router places arrivals on instances (nil: round-robin).
	Router Router
	// Observer sees requests and steps (nil: none).
	Observer Observer
	// CheckInvariants turns on the cluster-level checks (every request
	// in exactly one handoff state): after every event while few
	// requests are in flight, amortised over events when many are
	// (checkPDDue), and on the state the run ends in.
	CheckInvariants bool
	// MaxConcurrency limits the workload entries in flight (0: no
	// limit), as a benchmark client with that many concurrent requests
	// does: an entry is sent at its arrival time or, when MaxConcurrency
	// are in flight, as soon as one of them ends, and its arrival is the
	// time it was sent.
	MaxConcurrency int
	// Warmup makes the workload's first Warmup requests (ids 0 to
	// Warmup-1) warm-up requests, as vllm bench serve --num-warmups runs
	// them: the measured requests are sent only once every warm-up
	// request has ended, and their arrival schedule starts then.
	Warmup int64
	// FrontEnd is the served endpoint between the clients and the
	// engines (nil: none). Arrivals become the clients' send times;
	// records get client-side times (metrics.Record.FrontEnd) and the
	// gaps shown to the observer are the client's.
	FrontEnd *frontend.Model
	// Limits bound the run (zero: the automatic event budget only).
	Limits Limits
	// Interrupt, when set, is called every few thousand events; when it
	// returns true Run stops and returns ErrInterrupted. The check is the
	// caller's (e.g. a context's Done channel): the core reads no clock.
	Interrupt func() bool
	// DPGroups are the data-parallel groups among the engines. An engine
	// belongs to at most one; engines outside every group step on their
	// own.
	DPGroups []DPGroup
	// Tiers are the KV tiers below the GPUs, their instances the engines
	// in order (nil: none). Every prefix-caching engine, and every engine
	// that swaps preempted requests' KV to host, is connected to them.
	Tiers *kvtier.Hierarchy
	// PD disaggregates prefill and decode (nil: colocated serving).
	PD *PDSetup
	// Faults is the run's fault model and autoscaler (fault.go,
	// autoscale.go; nil: none).
	Faults *FaultConfig
	// NoSteadyRuns sends every step end through the event queue, even
	// the ends of steady batches that nothing else can come before
	// (steady.go): the reference steady runs are checked against.
	NoSteadyRuns bool
}

// PDSetup is a disaggregated simulation's handoff configuration and KV
// network.
type PDSetup struct {
	Config PDConfig
	// Nodes are every instance's network attachment, index-aligned with
	// the engines.
	Nodes []Node
	// Net is the network the KV transfers run on.
	Net *link.Network
}

// Validate checks the configuration and returns every problem found.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("cluster: "+format, args...)) }
	if len(c.Engines) == 0 {
		bad("at least one instance is required")
	}
	for i, e := range c.Engines {
		if e == nil {
			bad("engine %d is nil", i)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if c.Source == nil {
		bad("a workload source is required")
	}
	if c.MaxConcurrency < 0 {
		bad("max concurrency must be >= 0 (got %d)", c.MaxConcurrency)
	}
	if c.Warmup < 0 {
		bad("warm-up requests must be >= 0 (got %d)", c.Warmup)
	}
	if c.Limits.MaxTime < 0 || c.Limits.MaxEvents < 0 {
		bad("limits must be >= 0 (got max time %d ns, max events %d)", c.Limits.MaxTime, c.Limits.MaxEvents)
	}
	c.validateDPGroups(bad)
	for i, e := range c.Engines {
		if c.Tiers != nil && e.Config().Local.Groups > 0 {
			// Loads and swaps fill a request's full-attention blocks only.
			bad("instance %d keeps local KV cache groups (a hybrid model's windows), which KV tiers do not support", i)
		}
	}
	if c.PD != nil {
		c.validatePD(bad)
	}
	return errors.Join(errs...)
}

// validateDPGroups checks that every DP group has ranks, a predictor and a
// graph dispatch, and that its ranks are distinct engines of one role
// without pipeline parallelism.
func (c *Config) validateDPGroups(bad func(format string, args ...any)) {
	in := make([]bool, len(c.Engines))
	for gi, g := range c.DPGroups {
		if len(g.Ranks) == 0 || g.Pred == nil || g.Graph == nil {
			bad("DP group %d needs ranks, a predictor and a graph dispatch", gi)
			continue
		}
		for _, r := range g.Ranks {
			if r < 0 || r >= len(c.Engines) || in[r] {
				bad("DP group %d: engine %d is out of range or already in a group", gi, r)
				continue
			}
			in[r] = true
			cfg := c.Engines[r].Config()
			if c.Engines[r].Config().Role != c.Engines[g.Ranks[0]].Config().Role {
				bad("DP group %d: engine %d has role %s, its first rank %s; a group's ranks share one role", gi, r, cfg.Role, c.Engines[g.Ranks[0]].Config().Role)
			}
			if cfg.PipelineParallel > 1 {
				bad("DP group %d: engine %d uses pipeline parallelism, which DP ranks do not model", gi, r)
			}
		}
	}
}

// validatePD checks the P/D setup: one node per instance, a network, a
// known policy, and at least one decode and one prefill instance.
func (c *Config) validatePD(bad func(format string, args ...any)) {
	p := c.PD
	if len(p.Nodes) != len(c.Engines) {
		bad("%d network nodes for %d instances", len(p.Nodes), len(c.Engines))
	}
	if p.Net == nil {
		bad("P/D mode needs a KV network")
	} else {
		for i, nd := range p.Nodes {
			if len(nd.Endpoints) == 0 {
				bad("instance %d has no network endpoint", i)
			}
			for _, ep := range nd.Endpoints {
				if ep < 0 || int(ep) >= p.Net.Endpoints() {
					bad("instance %d: endpoint %d is not on the network (%d endpoints)", i, ep, p.Net.Endpoints())
				}
			}
		}
	}
	if int(p.Config.Policy) >= len(Policies) {
		bad("unknown handoff policy %d", p.Config.Policy)
	}
	if p.Config.MaxReprefills < 0 {
		bad("max_reprefills must be >= 0 (got %d)", p.Config.MaxReprefills)
	}
	var prefill, decode bool
	for _, e := range c.Engines {
		if e.Config().Role == engine.Decode {
			decode = true
		} else {
			prefill = true
		}
	}
	if !decode {
		bad("P/D mode needs at least one decode instance")
	}
	if !prefill {
		bad("P/D mode needs at least one prefill instance")
	}
}

// New returns the simulation cfg describes, after checking it.
func New(cfg Config) (*Sim, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	router := cfg.Router
	if router == nil {
		router = &RoundRobin{}
	}
	s := &Sim{engines: cfg.Engines, src: cfg.Source, router: router, obs: cfg.Observer, sessions: map[int64][]workload.Request{},
		checks: cfg.CheckInvariants, maxConc: cfg.MaxConcurrency, limits: cfg.Limits, interrupt: cfg.Interrupt}
	s.rel, _ = cfg.Source.(workload.Releaser)
	s.hashBS = make([]int, len(cfg.Engines))
	for i, e := range cfg.Engines {
		if c := e.Config(); c.PrefixCaching {
			s.hashBS[i] = c.BlockSize
		}
	}
	s.setWarmup(cfg.Warmup)
	if cfg.FrontEnd != nil {
		s.fe = &feState{m: cfg.FrontEnd, simple: cfg.FrontEnd.Simple(), reqs: map[int64]feReq{}}
	}
	if len(cfg.DPGroups) > 0 {
		s.setDPGroups(cfg.DPGroups)
	}
	if cfg.Tiers != nil {
		s.setTiers(cfg.Tiers)
	}
	if p := cfg.PD; p != nil {
		if err := s.setPD(p.Config, p.Nodes, p.Net); err != nil {
			return nil, err
		}
	}
	if cfg.Faults != nil {
		if err := s.setFaults(*cfg.Faults); err != nil {
			return nil, err
		}
	}
	s.steady = s.steadyOK(&cfg)
	return s, nil
}
