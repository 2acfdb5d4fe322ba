package moe

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/servesim/servesim/internal/des"
	"github.com/servesim/servesim/internal/perf"
)

// LayerTimer times one MoE block on one EP rank (perf.Profile does, from
// moe.csv): tokens it runs on and distinct local experts that receive
// tokens, in ns.
type LayerTimer interface {
	MoELayerNs(tokens, activated float64) float64
}

// Dispatch times the token dispatch and combine of one MoE layer for
// gathered tokens when the busiest EP rank receives busiest routed pairs.
// AllGatherReduceScatter is vLLM 0.19's default; DeepEP the DeepEP
// backends (all2all.go).
type Dispatch interface {
	LayerNs(gathered int, busiest float64) int64
}

// AllGatherReduceScatter is vLLM's allgather_reducescatter backend: an NCCL
// all-gather of the hidden states of every DP rank's tokens before the
// experts and a reduce-scatter of their outputs after, each moving
// gathered × HiddenBytes bytes in total over Comm's link.
type AllGatherReduceScatter struct {
	// Comm is the NCCL model of the DP group's link (N = dp).
	Comm perf.AllReduce
	// HiddenBytes is one token's hidden state: hidden_size × bytes per
	// element.
	HiddenBytes int64
}

// LayerNs implements Dispatch: 2 × (latency + (N−1)/N × T·HiddenBytes / BusBW),
// whatever the loads.
func (a AllGatherReduceScatter) LayerNs(gathered int, _ float64) int64 {
	g := a.Comm.GatherNs(int64(gathered) * a.HiddenBytes)
	if g >= math.MaxInt64/2 {
		return math.MaxInt64
	}
	return 2 * g
}

// RoutingKind is the shape of the expert popularity.
type RoutingKind uint8

// Routing kinds.
const (
	// Uniform spreads routed tokens evenly over the experts.
	Uniform RoutingKind = iota
	// Zipf gives the expert of popularity rank i a share proportional
	// to 1/i^Skew.
	Zipf
)

// Routing is the expert popularity.
type Routing struct {
	// Kind is Uniform (the zero value) or Zipf.
	Kind RoutingKind
	// Skew is the Zipf exponent s: expert of popularity rank i (from 1)
	// receives a share proportional to 1/i^s. 0 is uniform.
	Skew float64
	// Weights, when set, are measured per-expert popularities (any
	// non-negative scale): Experts values used for every layer, or
	// Layers × Experts values, layer by layer. They replace Kind and Skew.
	Weights []float64
}

// Config describes one DP/EP group's MoE.
type Config struct {
	Layers  int // MoE layers per step
	Experts int // routed experts per layer (E)
	TopK    int // experts per token (k)
	EP      int // expert-parallel ranks; E + Redundant must divide evenly
	Routing Routing
	// EPLB, when set, is vLLM's expert-parallel load balancer.
	EPLB *EPLB
	// ChunkTokens, when positive, runs each MoE layer in chunks of at
	// most this many tokens a rank, every chunk a dispatch, the experts
	// and a combine: vLLM's VLLM_MOE_DP_CHUNK_SIZE (256) for the batched
	// all-to-all kernels (DeepEP low-latency). DP is the number of ranks
	// contributing the gathered tokens.
	ChunkTokens, DP int
	Timer           LayerTimer
	// Dispatch times the collectives; nil means none (EP on one GPU).
	Dispatch Dispatch
}

// EPLB is vLLM's expert-parallel load balancer (eplb_state.py,
// rebalance_algo.py): Redundant extra physical experts, and every
// StepInterval steps the physical experts re-placed from the measured
// expert loads.
type EPLB struct {
	// Redundant is num_redundant_experts.
	Redundant int
	// StepInterval is the steps between rebalances (>= 1).
	StepInterval int64
}

// Model draws expert loads and times the MoE of a step.
type Model struct {
	cfg   Config
	local int       // physical experts per EP rank
	share []float64 // Layers × EP expected shares of routed pairs
	cond  []condShare
	// balanced and balCond are the shares after EPLB's rebalance
	// (nil without EPLB); the model switches to them at the first
	// rebalance, StepInterval steps in.
	balanced []float64
	balCond  []condShare
	steps    int64
	// lastBusiest is the mean busiest load of the last step (DBO).
	lastBusiest float64
	rng         *rand.Rand
}

// condShare is rank r's share of the pairs left after ranks 0..r-1 and
// the binomial's standard deviation per sqrt(pair), sqrt(q(1-q)).
type condShare struct{ q, sd float64 }

// New builds a group's MoE model; seed drives the per-layer ranking of the
// experts (Zipf) and the load draws.
func New(cfg Config, seed uint64) (*Model, error) {
	switch {
	case cfg.Layers < 1:
		return nil, fmt.Errorf("moe: layers must be >= 1, got %d", cfg.Layers)
	case cfg.EP < 1 || cfg.Experts < cfg.EP || (cfg.Experts+cfg.redundant())%cfg.EP != 0:
		return nil, fmt.Errorf("moe: %d experts (%d redundant) cannot be sharded evenly over ep %d ranks; choose ep dividing %d", cfg.Experts+cfg.redundant(), cfg.redundant(), cfg.EP, cfg.Experts+cfg.redundant())
	case cfg.EPLB != nil && (cfg.EPLB.Redundant < 0 || cfg.EPLB.StepInterval < 1):
		return nil, fmt.Errorf("moe: EPLB needs redundant experts >= 0 and a step interval >= 1, got %d and %d", cfg.EPLB.Redundant, cfg.EPLB.StepInterval)
	case cfg.TopK < 1 || cfg.TopK > cfg.Experts:
		return nil, fmt.Errorf("moe: top-k must be in [1, %d], got %d", cfg.Experts, cfg.TopK)
	case cfg.Timer == nil:
		return nil, fmt.Errorf("moe: a layer timer (profile moe.csv) is required")
	case !(cfg.Routing.Skew >= 0):
		return nil, fmt.Errorf("moe: skew must be >= 0, got %g", cfg.Routing.Skew)
	}
	m := &Model{cfg: cfg, local: (cfg.Experts + cfg.redundant()) / cfg.EP, rng: des.Stream(seed, "moe-loads")}
	m.share = make([]float64, cfg.Layers*cfg.EP)
	pl := newPlacer(cfg.Experts, cfg.redundant(), cfg.EP)
	if cfg.EPLB != nil {
		m.balanced = make([]float64, cfg.Layers*cfg.EP)
	}
	place := func(l int, w []float64) {
		pl.linear(w, m.share[l*cfg.EP:(l+1)*cfg.EP])
		if m.balanced != nil {
			pl.rebalance(w, m.balanced[l*cfg.EP:(l+1)*cfg.EP])
		}
	}
	if w := cfg.Routing.Weights; w != nil {
		if err := measuredShares(cfg, w, place); err != nil {
			return nil, err
		}
		m.condShares()
		return m, nil
	}
	perm := des.Stream(seed, "moe-ranking")
	pop := make([]float64, cfg.Experts)
	w := make([]float64, cfg.Experts)
	s := cfg.Routing.Skew
	if cfg.Routing.Kind != Zipf {
		s = 0
	}
	sum := 0.0
	for i := range pop {
		pop[i] = math.Pow(float64(i+1), -s)
		sum += pop[i]
	}
	for l := 0; l < cfg.Layers; l++ {
		// Expert e gets popularity rank order[e]; a fresh shuffle per layer.
		order := perm.Perm(cfg.Experts)
		for e, rank := range order {
			w[e] = pop[rank] / sum
		}
		place(l, w)
	}
	m.condShares()
	return m, nil
}

// redundant is the EPLB's redundant experts (0 without EPLB).
func (c Config) redundant() int {
	if c.EPLB == nil {
		return 0
	}
	return c.EPLB.Redundant
}

// measuredShares places each layer's measured per-expert weights,
// normalised, with place.
func measuredShares(cfg Config, w []float64, place func(l int, w []float64)) error {
	e, layers := cfg.Experts, cfg.Layers
	norm := make([]float64, e)
	if len(w) != e && len(w) != e*layers {
		return fmt.Errorf("moe: the histogram has %d counts; want one per expert (%d) or per layer and expert (%d)", len(w), e, e*layers)
	}
	for l := 0; l < layers; l++ {
		row := w[:e]
		if len(w) > e {
			row = w[l*e : (l+1)*e]
		}
		sum := 0.0
		for i, v := range row {
			if !(v >= 0) || math.IsInf(v, 1) {
				return fmt.Errorf("moe: histogram count %g of expert %d must be a finite number >= 0", v, i)
			}
			sum += v
		}
		if !(sum > 0) {
			return fmt.Errorf("moe: the histogram of layer %d has no routed tokens", l)
		}
		for i, v := range row {
			norm[i] = v / sum
		}
		place(l, norm)
	}
	return nil
}

// condShares precomputes every rank's conditional share and deviation,
// before and (with EPLB) after the rebalance.
func (m *Model) condShares() {
	m.cond = conditional(m.share, m.cfg.Layers, m.cfg.EP)
	if m.balanced != nil {
		m.balCond = conditional(m.balanced, m.cfg.Layers, m.cfg.EP)
	}
}

// conditional turns layers × ep shares into successive binomial shares.
func conditional(share []float64, layers, ep int) []condShare {
	cond := make([]condShare, len(share))
	for l := 0; l < layers; l++ {
		left := 1.0
		for r := 0; r < ep; r++ {
			q := 1.0
			if left > 0 {
				q = min(max(share[l*ep+r]/left, 0), 1)
			}
			cond[l*ep+r] = condShare{q: q, sd: math.Sqrt(q * (1 - q))}
			left -= share[l*ep+r]
		}
	}
	return cond
}

// Share is the expected share of routed pairs of EP rank r in layer l
// with the initial (linear) placement of the physical experts.
func (m *Model) Share(l, r int) float64 { return m.share[l*m.cfg.EP+r] }

// BalancedShare is Share after EPLB's rebalance (Share without EPLB).
func (m *Model) BalancedShare(l, r int) float64 {
	if m.balanced == nil {
		return m.Share(l, r)
	}
	return m.balanced[l*m.cfg.EP+r]
}

// Rebalanced says whether EPLB has re-placed the experts by now.
func (m *Model) Rebalanced() bool {
	return m.balanced != nil && m.steps >= m.cfg.EPLB.StepInterval
}

// LayerNs is one layer's MoE block time given the busiest rank's load
// (routed pairs) and the gathered tokens: the timer at the tokens that load
// corresponds to, busiest·ep/k (the gathered count itself under a
// balanced load), and the distinct local experts those tokens activate,
// E_l·(1 − (1 − k/E)^tokens) rounded, at least min(k, E_l): with ep = 1 and
// a balanced load exactly perf.ActivatedExperts, the single-rank lookup.
func (m *Model) LayerNs(gathered int, busiest float64) float64 {
	if gathered <= 0 {
		return 0
	}
	k, ep, e := float64(m.cfg.TopK), float64(m.cfg.EP), float64(m.cfg.Experts)
	tokens := busiest * ep / k
	el := float64(m.local)
	active := el
	if m.cfg.TopK < m.cfg.Experts {
		active = math.Round(el * (1 - math.Pow(1-k/e, tokens)))
		active = math.Min(math.Max(active, math.Min(k, el)), el)
	}
	return m.cfg.Timer.MoELayerNs(tokens, active)
}

// StepNs is the MoE time of one step of the group, every layer: for each
// layer a draw of the EP ranks' loads and its busiest rank; the block time
// at the layers' mean busiest load, times the layers; plus the dispatch and
// combine collectives. Looking the table up once at the mean instead of
// once per layer is exact where the table is linear over the layers'
// spread (a few percent of the load, inside one grid segment almost
// always) and keeps a step's cost to one lookup. Zero gathered tokens cost
// nothing.
func (m *Model) StepNs(gathered int) int64 {
	if gathered <= 0 {
		return 0
	}
	cond := m.cond
	if m.Rebalanced() {
		cond = m.balCond
	}
	m.steps++
	pairs := float64(gathered) * float64(m.cfg.TopK)
	sum := 0.0
	for l := 0; l < m.cfg.Layers; l++ {
		sum += m.drawBusiest(cond, l, pairs)
	}
	busiest := sum / float64(m.cfg.Layers)
	m.lastBusiest = busiest
	var total float64
	if m.chunks(gathered) {
		total = float64(m.cfg.Layers) * m.chunked(gathered, busiest, m.blockNs)
	} else {
		// In one piece, summed as before chunking existed (the same
		// float rounding, so unchanged outputs).
		total = float64(m.cfg.Layers) * m.LayerNs(gathered, busiest)
		if m.cfg.Dispatch != nil {
			total += float64(m.cfg.Layers) * float64(m.cfg.Dispatch.LayerNs(gathered, busiest))
		}
	}
	if total >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(math.Round(total))
}

// blockNs is one MoE layer in one piece: the experts at gathered tokens
// with the busiest rank's load, and the dispatch and combine.
func (m *Model) blockNs(gathered int, busiest float64) float64 {
	ns := m.LayerNs(gathered, busiest)
	if m.cfg.Dispatch != nil {
		ns += float64(m.cfg.Dispatch.LayerNs(gathered, busiest))
	}
	return ns
}

// commNs is one layer's dispatch and combine in one piece.
func (m *Model) commNs(gathered int, busiest float64) float64 {
	if m.cfg.Dispatch == nil {
		return 0
	}
	return float64(m.cfg.Dispatch.LayerNs(gathered, busiest))
}

// chunked is f (a layer's time at gathered tokens and a busiest load)
// over the layer's chunks when ChunkTokens is set: each rank runs
// ceil(t/ChunkTokens) chunks of t tokens (vLLM counts them from the
// largest rank; the gathered tokens are spread evenly here), the full
// ones and the rest, the load shared in proportion.
func (m *Model) chunked(gathered int, busiest float64, f func(int, float64) float64) float64 {
	if !m.chunks(gathered) {
		return f(gathered, busiest)
	}
	c, dp := m.cfg.ChunkTokens, max(m.cfg.DP, 1)
	perRank := (gathered + dp - 1) / dp
	full, rem := perRank/c, perRank%c
	share := busiest / float64(perRank)
	ns := float64(full) * f(c*dp, share*float64(c))
	if rem > 0 {
		ns += f(rem*dp, share*float64(rem))
	}
	return ns
}

// chunks says whether a layer at gathered tokens runs in chunks.
func (m *Model) chunks(gathered int) bool {
	dp := max(m.cfg.DP, 1)
	return m.cfg.ChunkTokens > 0 && (gathered+dp-1)/dp > m.cfg.ChunkTokens
}

// drawBusiest draws layer l's loads (a multinomial of pairs over the EP
// ranks, as successive binomials in their normal approximation: rank r
// takes a binomial of the pairs left with its share of what is left) and
// returns the largest.
func (m *Model) drawBusiest(cond []condShare, l int, pairs float64) float64 {
	ep := m.cfg.EP
	if ep == 1 {
		return pairs
	}
	rem, busiest := pairs, 0.0
	for r := 0; r < ep-1; r++ {
		c := cond[l*ep+r]
		x := math.Round(rem*c.q + math.Sqrt(rem)*c.sd*m.rng.NormFloat64())
		x = min(max(x, 0), rem)
		busiest = max(busiest, x)
		rem -= x
	}
	return max(busiest, rem)
}
