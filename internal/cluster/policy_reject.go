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
func (rejectPolicy) admission(s handoffSim, h *hand, now int64) string {
	cfg := s.config()
	if cfg.MaxPrefillQueue > 0 {
		if q := s.prefillQueueNs(h.p); q > float64(cfg.MaxPrefillQueue) {
			return fmt.Sprintf("admission: predicted prefill queueing %.0f ms exceeds %.0f ms", q/1e6, float64(cfg.MaxPrefillQueue)/1e6)
		}
	}
	if cfg.MaxDecodeKVFraction > 0 {
		demand, capacity := s.decodeDemand(h)
		if demand > cfg.MaxDecodeKVFraction*capacity {
			return fmt.Sprintf("admission: decode KV demand %.0f blocks exceeds %.0f %% of the decode pool (%.0f blocks)", demand, cfg.MaxDecodeKVFraction*100, capacity)
		}
	}
	return ""
}
