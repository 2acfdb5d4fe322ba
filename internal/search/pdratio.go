package search

import (
	"context"
	"fmt"
	"strings"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/sweep"
	"github.com/servesim/servesim/internal/workpool"
)

// Split is one prefill/decode split of a GPU budget and its capacity.
type Split struct {
	// Prefill and Decode are the instance counts; PrefillTP and DecodeTP
	// their tensor-parallel degrees. GPUs = Prefill*PrefillTP +
	// Decode*DecodeTP.
	Prefill   int `json:"prefill"`
	Decode    int `json:"decode"`
	PrefillTP int `json:"prefill_tp"`
	DecodeTP  int `json:"decode_tp"`
	GPUs      int `json:"gpus"`
	// MaxRate is the split's max-rate search (nil when Err is set before
	// any run).
	MaxRate *MaxRateResult `json:"max_rate,omitempty"`
	// RatePerGPU is the max rate divided by GPUs: DistServe's per-GPU
	// goodput, the highest arrival rate per GPU at which the SLO
	// attainment target is met. Splits are ranked by it.
	RatePerGPU float64 `json:"max_rate_per_gpu"`
	// GoodputRPS is the goodput of the run at the max rate as vLLM's bench
	// serve defines it (requests meeting the SLO / the run's duration), and
	// GoodputPerGPU that divided by GPUs.
	GoodputRPS    float64 `json:"goodput_rps"`
	GoodputPerGPU float64 `json:"goodput_per_gpu"`
	// Err says why the split has no max rate (e.g. the SLO cannot be met
	// at any rate); such a split is never the best.
	Err string `json:"error,omitempty"`
}

// PDRatioResult is the outcome of PDRatio.
type PDRatioResult struct {
	Scenario string  `json:"scenario"`
	GPUs     int     `json:"gpus"`
	SLO      SLO     `json:"slo"`
	Target   float64 `json:"target"`
	Margin   float64 `json:"margin"`
	Splits   []Split `json:"splits"`
	// Best indexes the split with the highest max rate per GPU (-1: none
	// has a max rate). Ties go to the split with fewer prefill instances.
	Best int `json:"best"`
}

// Templates returns the prefill and decode instance groups PDRatio varies:
// the scenario's prefill and decode groups, or, for a scenario with one
// mixed group, that group in both roles. Any other layout is an error.
func Templates(s *config.Scenario) (prefill, decode config.Group, err error) {
	var ps, ds, ms []config.Group
	for i, g := range s.Instances {
		if dp, _ := g.Parallel(); dp > 1 {
			return prefill, decode, fmt.Errorf("instances[%d].dp: pd-ratio splits GPUs into prefill and decode instances, and P/D with data-parallel (DP/EP) instances is not modelled yet; search a dp: 1 scenario, or use search max-rate for the DP/EP instance", i)
		}
		switch g.Role {
		case config.RolePrefill:
			ps = append(ps, g)
		case config.RoleDecode:
			ds = append(ds, g)
		default:
			ms = append(ms, g)
		}
	}
	switch {
	case len(ps) == 1 && len(ds) == 1 && len(ms) == 0:
		prefill, decode = ps[0], ds[0]
	case len(ps) == 0 && len(ds) == 0 && len(ms) == 1:
		prefill, decode = ms[0], ms[0]
		prefill.Name, decode.Name = "prefill", "decode"
	default:
		return prefill, decode, fmt.Errorf("instances: pd-ratio needs exactly one prefill and one decode group, or one mixed group to split (got %d prefill, %d decode, %d mixed groups)", len(ps), len(ds), len(ms))
	}
	prefill.Role, decode.Role = config.RolePrefill, config.RoleDecode
	return prefill, decode, nil
}

// Splits lists the prefill/decode splits of gpus GPUs: every prefill count
// p >= 1 with d >= 1 decode instances such that p*prefillTP + d*decodeTP =
// gpus, in increasing p.
func Splits(gpus, prefillTP, decodeTP int) []Split {
	var out []Split
	for p := 1; p*prefillTP+decodeTP <= gpus; p++ {
		rest := gpus - p*prefillTP
		if rest%decodeTP != 0 {
			continue
		}
		out = append(out, Split{Prefill: p, Decode: rest / decodeTP, PrefillTP: prefillTP, DecodeTP: decodeTP, GPUs: gpus})
	}
	return out
}

// SplitScenario returns base with its instances replaced by p prefill and
// d decode instances made from the templates, named after base and the
// split ("pd-2p2d 3P+5D"), so that each split's results and messages say
// which one they are.
func SplitScenario(base *config.Scenario, prefill, decode config.Group, p, d int) (*config.Scenario, error) {
	prefill.Count, decode.Count = &p, &d
	path, err := sweep.ParsePath("instances")
	if err != nil {
		return nil, fmt.Errorf("split: %w", err)
	}
	s, err := sweep.Apply(base, sweep.Assignment{Path: path, Value: []config.Group{prefill, decode}})
	if err != nil {
		return nil, fmt.Errorf("%d prefill + %d decode: %w", p, d, err)
	}
	s.Name = fmt.Sprintf("%s %dP+%dD", base.Name, p, d)
	return s, nil
}

// PDRatio runs MaxRate for every prefill/decode split of gpus GPUs (see
// Splits; the tensor-parallel degrees come from Templates) and picks the
// split with the most goodput per GPU at its max rate. Splits are searched
// in parallel on workers goroutines (<= 0: GOMAXPROCS); each search is
// sequential and deterministic, so the result does not depend on workers.
// progress, if set, is called after each split with the count done.
func PDRatio(ctx context.Context, base *config.Scenario, src config.Source, gpus int, opts Options, workers int, progress func(done, total int)) (*PDRatioResult, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	o.OnProbe = nil
	pre, dec, err := Templates(base)
	if err != nil {
		return nil, err
	}
	if gpus < 2 {
		return nil, fmt.Errorf("gpus must be >= 2 to split prefill and decode (got %d)", gpus)
	}
	splits := Splits(gpus, *pre.TP, *dec.TP)
	if len(splits) == 0 {
		return nil, fmt.Errorf("no split of %d GPUs into prefill instances of tp %d and decode instances of tp %d", gpus, *pre.TP, *dec.TP)
	}
	scenarios := make([]*config.Scenario, len(splits))
	for i, sp := range splits {
		if scenarios[i], err = SplitScenario(base, pre, dec, sp.Prefill, sp.Decode); err != nil {
			return nil, err
		}
	}
	res := &PDRatioResult{Scenario: base.Name, GPUs: gpus, SLO: o.SLO, Target: o.Target, Margin: o.Margin, Splits: splits, Best: -1}
	done := 0
	err = workpool.Run(ctx, workers, workpool.Count(len(splits)),
		func(ctx context.Context, i int) (*MaxRateResult, error) { return MaxRate(ctx, scenarios[i], src, o) },
		func(i int, mr *MaxRateResult, err error) error {
			sp := &res.Splits[i]
			if err != nil {
				sp.Err = strings.ReplaceAll(err.Error(), "\n", "; ")
			}
			if mr != nil && mr.Best.Multiplier > 0 {
				sp.MaxRate = mr
				sp.RatePerGPU = mr.Best.RateRPS / float64(gpus)
				sp.GoodputRPS = mr.Best.GoodputRPS
				sp.GoodputPerGPU = mr.Best.GoodputRPS / float64(gpus)
			}
			done++
			if progress != nil {
				progress(done, len(splits))
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	for i, sp := range res.Splits {
		if sp.Err != "" || sp.MaxRate == nil {
			continue
		}
		if res.Best < 0 || sp.RatePerGPU > res.Splits[res.Best].RatePerGPU {
			res.Best = i
		}
	}
	return res, nil
}

// AddIntervals gives the max rate of every split that has one an interval
// (RateInterval): the search again at the step-error band's ends fast and
// slow when band is not "", and over replicas other seeds when replicas >
// 0. Splits are done on workers goroutines (<= 0: GOMAXPROCS); each is
// deterministic, so the result does not depend on workers. opts are the
// options r was found with.
func (r *PDRatioResult) AddIntervals(ctx context.Context, base *config.Scenario, src config.Source, opts Options, workers int, band string, coverage, fast, slow float64, replicas int) error {
	if band == "" && replicas <= 0 {
		return fmt.Errorf("error bars: neither a step band nor seed replicas")
	}
	pre, dec, err := Templates(base)
	if err != nil {
		return err
	}
	opts.OnProbe = nil
	var todo []int
	for i, sp := range r.Splits {
		if sp.MaxRate != nil {
			todo = append(todo, i)
		}
	}
	return workpool.Run(ctx, workers, workpool.Count(len(todo)),
		func(ctx context.Context, k int) (struct{}, error) {
			sp := &r.Splits[todo[k]]
			s, err := SplitScenario(base, pre, dec, sp.Prefill, sp.Decode)
			if err != nil {
				return struct{}{}, err
			}
			if band != "" {
				if err := sp.MaxRate.AddInterval(ctx, s, src, opts, band, coverage, fast, slow); err != nil {
					return struct{}{}, fmt.Errorf("%d prefill + %d decode: %w", sp.Prefill, sp.Decode, err)
				}
			}
			if replicas > 0 {
				if err := sp.MaxRate.AddSeedVariance(ctx, s, src, opts, coverage, replicas); err != nil {
					return struct{}{}, fmt.Errorf("%d prefill + %d decode: %w", sp.Prefill, sp.Decode, err)
				}
			}
			return struct{}{}, nil
		},
		func(_ int, _ struct{}, err error) error { return err })
}
