package assemble

import (
	"fmt"

	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/moe"
	"github.com/servesim/servesim/internal/perf"
)

// groupSpec is one data-parallel instance as built: its ranks' engine
// indices and what times its lockstep steps.
type groupSpec struct {
	ranks          []int
	pred           perf.Predictor
	timer          moe.LayerTimer
	graph          perf.EngineTime
	balance        bool
	seededTies     bool
	hiddenBytes    int64
	link           hw.Link
	linkBWOverride float64 // links.tp_bandwidth_gbps in bytes/s, 0: the catalog's
}

// dpGroups makes the run-time DP groups, each with a fresh MoE model (its
// own seeded load stream) and its predictor's per-run copy counting into
// counts.
func (b *Built) dpGroups(counts *perf.TableCounts) ([]cluster.DPGroup, error) {
	m := b.model
	routing := moe.Routing{}
	if r := b.scenario.MoE; r != nil {
		routing = moe.Routing{Skew: r.Skew, Weights: b.routing}
		if r.Routing == config.RoutingZipf {
			routing.Kind = moe.Zipf
		}
	}
	out := make([]cluster.DPGroup, len(b.groups))
	for gi, g := range b.groups {
		in := b.instances[g.ranks[0]]
		dp := len(g.ranks)
		cfg := moe.Config{Layers: m.NumMoELayers(), Experts: int(m.NumExperts), TopK: int(m.ExpertsPerTok), EP: in.EP,
			Routing: routing, Timer: g.timer}
		if dp > 1 {
			bw := g.link.Bandwidth
			if g.linkBWOverride > 0 {
				bw = g.linkBWOverride
			}
			// vLLM's dispatch and combine use NCCL (no custom kernel).
			comm := perf.NewAllReduce(dp, perf.Interconnect{NVLink: g.link.FullyConnected(), P2P: g.link.P2P, LinkBW: bw}, true)
			cfg.Dispatch = moe.AllGatherReduceScatter{Comm: comm, HiddenBytes: g.hiddenBytes}
		}
		mm, err := moe.New(cfg, b.scenario.Seed+uint64(gi)*0x9e3779b97f4a7c15)
		if err != nil {
			return nil, fmt.Errorf("instance group %s: %w", in.Group, err)
		}
		out[gi] = cluster.DPGroup{Ranks: g.ranks, Pred: perf.ForRun(g.pred, counts), MoE: mm, Graph: g.graph.Dispatch, Balance: g.balance,
			SeededTies: g.seededTies, TieSeed: b.scenario.Seed + uint64(gi)}
	}
	return out, nil
}
