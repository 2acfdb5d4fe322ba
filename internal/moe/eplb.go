package moe

import "slices"

// placer places E logical experts, plus R redundant copies, on EP ranks of
// (E+R)/EP physical slots each, and turns per-expert loads into per-rank
// shares. Its buffers are reused layer after layer.
type placer struct {
	experts, redundant, ep, slots int
	count                         []int     // replicas per logical expert
	items                         []item    // physical experts to pack
	load                          []float64 // per rank, while packing
	used                          []int     // slots used per rank
}

// item is one physical expert: its logical expert and the load it takes.
type item struct {
	expert int
	load   float64
}

func newPlacer(experts, redundant, ep int) *placer {
	return &placer{experts: experts, redundant: redundant, ep: ep, slots: (experts + redundant) / ep,
		count: make([]int, experts), items: make([]item, 0, experts+redundant),
		load: make([]float64, ep), used: make([]int, ep)}
}

// linear adds to share (one value per rank) the loads w (one per logical
// expert, summing to 1) under vLLM's initial placement: physical expert i
// is logical expert i mod E, physical experts filled rank after rank, a
// logical expert's load split evenly over its copies.
func (p *placer) linear(w, share []float64) {
	for j := range p.count {
		p.count[j] = 0
	}
	n := p.experts + p.redundant
	for i := 0; i < n; i++ {
		p.count[i%p.experts]++
	}
	for i := 0; i < n; i++ {
		j := i % p.experts
		share[i/p.slots] += w[j] / float64(p.count[j])
	}
}

// rebalance adds to share the loads w after the rebalance of vLLM's EPLB
// (vllm/distributed/eplb/rebalance_algo.py, global policy, from DeepSeek's
// EPLB): the redundant copies go one by one to the expert of the largest
// load per copy (replicate_experts), then the physical experts, heaviest
// first, each to the rank of least load that has a free slot
// (balanced_packing; ties to the lower index).
func (p *placer) rebalance(w, share []float64) {
	for j := range p.count {
		p.count[j] = 1
	}
	for r := 0; r < p.redundant; r++ {
		best := 0
		for j := 1; j < p.experts; j++ {
			if w[j]/float64(p.count[j]) > w[best]/float64(p.count[best]) {
				best = j
			}
		}
		p.count[best]++
	}
	p.items = p.items[:0]
	for j, c := range p.count {
		for k := 0; k < c; k++ {
			p.items = append(p.items, item{expert: j, load: w[j] / float64(c)})
		}
	}
	slices.SortStableFunc(p.items, func(a, b item) int {
		switch {
		case a.load > b.load:
			return -1
		case a.load < b.load:
			return 1
		}
		return 0
	})
	for r := range p.load {
		p.load[r], p.used[r] = 0, 0
	}
	for _, it := range p.items {
		best := -1
		for r := range p.load {
			if p.used[r] < p.slots && (best < 0 || p.load[r] < p.load[best]) {
				best = r
			}
		}
		p.load[best] += it.load
		p.used[best]++
	}
	for r, l := range p.load {
		share[r] += l
	}
}
