package validate

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/runner"
	"github.com/servesim/servesim/internal/workload"
)

// WithinPct is the difference under which validate counts a simulated
// statistic as matching the measured one.
const WithinPct = 5.0

// PlacementSpread says how much a replay's statistics move when only the
// placement of requests on the ranks of its data-parallel groups changes.
// In a real deployment, which of two equally loaded ranks vLLM's balancer
// picks is decided by timing noise (when a rank's counts reach the front
// end) that no replay reproduces; the run is replayed Replicas more times
// with the balancer's ties broken at random (dp_balance_ties: seeded, seeds
// 1..Replicas), everything else unchanged.
type PlacementSpread struct {
	Replicas int         `json:"replicas"`
	Rows     []SpreadRow `json:"stats"`
	// Within is the number of replicas whose every statistic is within
	// WithinPct of the measured value.
	Within int `json:"replicas_within"`
}

// SpreadRow is one statistic's difference from the measured value over
// the replicas (percent), and whether the measured value lies within the
// replicas' range.
type SpreadRow struct {
	Metric    string  `json:"metric"`
	Stat      string  `json:"stat"`
	MinPct    float64 `json:"min_diff_pct"`
	MedianPct float64 `json:"median_diff_pct"`
	MaxPct    float64 `json:"max_diff_pct"`
	Inside    bool    `json:"inside"`
}

// errNoPlacement is the error of --placement-replicas on a run without a
// balanced data-parallel group.
var errNoPlacement = errors.New("--placement-replicas: the run has no data-parallel group fed by vLLM's balancer (dp > 1, dp_balance: vllm), so every replay places the requests the same way; leave the flag out")

// balancedGroups reports whether scenario s has an instance group served
// by data-parallel ranks that vLLM's balancer feeds.
func balancedGroups(s *config.Scenario) bool {
	for _, g := range s.Instances {
		if dp, _ := g.Parallel(); dp > 1 && g.DPBalance != config.DPBalanceRouter {
			return true
		}
	}
	return false
}

// addPlacementSpread replays scenario s n more times with seeded balancer
// ties and sets rep.Placement.
func addPlacementSpread(rep *Report, s *config.Scenario, cs config.Source, newSrc func() (workload.Source, error), offsetMs float64, n int) error {
	if !balancedGroups(s) {
		return errNoPlacement
	}
	diffs := make([][]float64, len(rep.Stats)) // per row, per replica
	worst := make([]float64, n)
	for r := 1; r <= n; r++ {
		rs := *s
		rs.Seed = s.Seed + uint64(r)
		rs.Instances = slices.Clone(s.Instances)
		for i := range rs.Instances {
			rs.Instances[i].DPBalanceTies = config.TiesSeeded
		}
		built, err := assemble.Build(&rs, cs)
		if err != nil {
			return fmt.Errorf("--placement-replicas: replica %d: %w", r, err)
		}
		ttft, tpot, e2e, err := simStats(built, newSrc, offsetMs)
		if err != nil {
			return fmt.Errorf("--placement-replicas: replica %d: %w", r, err)
		}
		for i, row := range rep.Stats {
			v := statOf(row, ttft, tpot, e2e)
			d := 0.0
			if row.Measured != 0 {
				d = (v - row.Measured) / row.Measured * 100
			}
			diffs[i] = append(diffs[i], d)
			worst[r-1] = math.Max(worst[r-1], math.Abs(round3(d)))
		}
	}
	ps := &PlacementSpread{Replicas: n}
	for i, row := range rep.Stats {
		ds := slices.Clone(diffs[i])
		slices.Sort(ds)
		lo, hi := round3(ds[0]), round3(ds[len(ds)-1])
		ps.Rows = append(ps.Rows, SpreadRow{Metric: row.Metric, Stat: row.Stat, MinPct: lo, MedianPct: round3(median(ds)), MaxPct: hi,
			Inside: lo <= 0 && hi >= 0})
	}
	for _, w := range worst {
		if w <= WithinPct {
			ps.Within++
		}
	}
	rep.Placement = ps
	return nil
}

// median is the median of sorted xs (not empty).
func median(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// statOf is row's statistic of the simulated samples.
func statOf(row Row, ttft, tpot, e2e []float64) float64 {
	var st metrics.Stat
	switch row.Metric {
	case "TTFT":
		st = metrics.Stats(ttft)
	case "TPOT":
		st = metrics.Stats(tpot)
	default:
		st = metrics.Stats(e2e)
	}
	switch row.Stat {
	case "mean":
		return st.Mean
	case "p50":
		return st.P50
	case "p90":
		return st.P90
	case "p95":
		return st.P95
	default:
		return st.P99
	}
}

// simStats runs built on a fresh replay source and returns the simulated
// TTFT, E2E (from pickup, plus offsetMs) and TPOT in ms. Every request
// must finish.
func simStats(built *assemble.Built, newSrc func() (workload.Source, error), offsetMs float64) (ttft, tpot, e2e []float64, err error) {
	src, err := newSrc()
	if err != nil {
		return nil, nil, nil, err
	}
	replay := built.WithSource(func() (workload.Source, io.Closer, error) { return src, io.NopCloser(nil), nil })
	unfinished := 0
	if _, err := runner.Run(replay, runner.Options{OnRecord: func(r *metrics.Record) {
		if r.Outcome != metrics.Finished {
			unfinished++
			return
		}
		ttft = append(ttft, float64(r.FirstToken-r.Queued)/1e6+offsetMs)
		e2e = append(e2e, float64(r.LastToken-r.Queued)/1e6+offsetMs)
		if r.Generated > 1 {
			tpot = append(tpot, float64(r.LastToken-r.FirstToken)/float64(r.Generated-1)/1e6)
		}
	}}); err != nil {
		return nil, nil, nil, err
	}
	if unfinished > 0 {
		return nil, nil, nil, fmt.Errorf("%d requests did not finish", unfinished)
	}
	return ttft, tpot, e2e, nil
}

// write renders the spread below the comparison table.
func (p *PlacementSpread) write(b *strings.Builder) {
	fmt.Fprintf(b, "placement spread: %d replays with the DP balancer's ties broken at random (only the ranks requests go to change; docs/moe.md):\n", p.Replicas)
	fmt.Fprintf(b, "%-6s %-5s %9s %9s %9s  %s\n", "metric", "stat", "min %", "median %", "max %", "measured within range")
	for _, r := range p.Rows {
		in := "no"
		if r.Inside {
			in = "yes"
		}
		fmt.Fprintf(b, "%-6s %-5s %+9.2f %+9.2f %+9.2f  %s\n", r.Metric, r.Stat, r.MinPct, r.MedianPct, r.MaxPct, in)
	}
	fmt.Fprintf(b, "replays with every statistic within %.0f %%: %d of %d\n", WithinPct, p.Within, p.Replicas)
}
