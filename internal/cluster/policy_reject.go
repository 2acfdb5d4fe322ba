package cluster

import "fmt"

// rejectPolicy is pull with admission control at arrival: a request is
// rejected when the predicted prefill queueing time, or the decode KV
// demand it would add, exceeds its threshold.
type rejectPolicy struct{ pullPolicy }

// admission applies the thresholds. The decode demand is the blocks in
// use on the decode pools plus the prompts of every request prefilling,
// pushing or queued for admission (a running counter kept by transition),
// plus this one: O(decode instances) per arrival.
func (rejectPolicy) admission(s *Sim, h *hand, now int64) string {
	p := s.pd
	if p.cfg.MaxPrefillQueue > 0 {
		node := p.nodes[h.p]
		if node.PrefillTokensPerSec > 0 {
			q := float64(s.engines[h.p].WaitingTokens()) / node.PrefillTokensPerSec * 1e9
			if q > float64(p.cfg.MaxPrefillQueue) {
				return fmt.Sprintf("admission: predicted prefill queueing %.0f ms exceeds %.0f ms", q/1e6, float64(p.cfg.MaxPrefillQueue)/1e6)
			}
		}
	}
	if p.cfg.MaxDecodeKVFraction > 0 {
		var demand, capacity float64
		for _, d := range p.decode {
			if s.isDown(d) {
				continue // a lost instance's capacity is gone
			}
			e := s.engines[d]
			capacity += float64(e.Pool().Capacity())
			demand += float64(e.Pool().Used())
		}
		demand += float64(p.demand + p.demandBlocks(&h.req))
		if demand > p.cfg.MaxDecodeKVFraction*capacity {
			return fmt.Sprintf("admission: decode KV demand %.0f blocks exceeds %.0f %% of the decode pool (%.0f blocks)", demand, p.cfg.MaxDecodeKVFraction*100, capacity)
		}
	}
	return ""
}
