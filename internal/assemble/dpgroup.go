package assemble

import (
	"fmt"

	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/moe"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/perfdb"
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
	// nic is a GPU's NIC and linkGPUs the GPUs of one NVLink domain:
	// where a group larger than a node crosses nodes.
	nic      hw.NIC
	linkGPUs int
	tp       int
	wide     config.WideEP
	// dispatchBytes is one token's hidden state as DeepEP dispatches it
	// (FP8 with a scale per 128 elements under block FP8, else BF16).
	dispatchBytes float64
	hidden        int64
	// deepEP is the measured DeepEP table of the group's system and
	// backend (perfdb predictor, the model's shape measured; else nil).
	deepEP *perfdb.DeepEPTable
	shape  perfdb.DeepEPShape
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
		if g.wide.EnableEPLB {
			cfg.EPLB = &moe.EPLB{Redundant: g.wide.NumRedundantExperts, StepInterval: int64(g.wide.StepInterval())}
		}
		if dp > 1 {
			cfg.Dispatch = g.dispatch(dp, in.EP, cfg.Experts+g.wide.NumRedundantExperts, cfg.TopK)
			if g.wide.All2AllBackend.LowLatency() {
				cfg.ChunkTokens, cfg.DP = moe.VLLMMoEDPChunkSize, dp
			}
		}
		mm, err := moe.New(cfg, b.scenario.Seed+uint64(gi)*0x9e3779b97f4a7c15)
		if err != nil {
			return nil, fmt.Errorf("instance group %s: %w", in.Group, err)
		}
		out[gi] = cluster.DPGroup{Ranks: g.ranks, Pred: b.withShadow(perf.ForRun(g.pred, counts), gi, true), MoE: mm, Graph: g.graph.Dispatch, Balance: g.balance,
			SeededTies: g.seededTies, TieSeed: b.scenario.Seed + uint64(gi)}
		if g.wide.EnableDBO {
			out[gi].DBODecodeTokens, out[gi].DBOPrefillTokens = g.wide.DBOThresholds()
			out[gi].Overlap = mm
		}
	}
	return out, nil
}

// dispatch is the group's all-to-all backend for dp ranks, ep expert
// ranks and experts physical experts of which each token takes k.
func (g *groupSpec) dispatch(dp, ep, experts, k int) moe.Dispatch {
	bw := g.link.Bandwidth
	if g.linkBWOverride > 0 {
		bw = g.linkBWOverride
	}
	intra := perf.Interconnect{NVLink: g.link.FullyConnected(), P2P: g.link.P2P, LinkBW: bw}
	if g.wide.All2AllBackend.DeepEP() {
		nodeRanks := ep // every GPU is an EP rank
		if g.linkGPUs > 0 {
			nodeRanks = min(ep, g.linkGPUs)
		}
		return moe.DeepEP{Fabric: moe.Fabric{EP: ep, NodeRanks: nodeRanks, NVLinkBW: bw, NICBW: g.nic.Bandwidth},
			LowLatency: g.wide.All2AllBackend.LowLatency(), DP: dp, TopK: k, Experts: experts,
			DispatchBytes: g.dispatchBytes, CombineBytes: float64(2 * g.hidden), Measured: g.measuredDeepEP()}
	}
	// vLLM's dispatch and combine use NCCL (no custom kernel); a group
	// larger than a node runs its rings across the NICs.
	comm := perf.NewAllReduce(dp, intra, true)
	if g.linkGPUs > 0 && dp*g.tp > g.linkGPUs {
		comm = perf.NewSpanningAllReduce(dp, intra, g.nic.Bandwidth, g.nic.LatencyNs)
	}
	return moe.AllGatherReduceScatter{Comm: comm, HiddenBytes: g.hiddenBytes}
}
