package cluster

// This file holds the statistics of the KV blocks pinned on prefill
// instances for handoffs.

// PinnedStats returns, per instance, the peak and time-averaged number of
// KV blocks pinned for handoffs over the run.
func (s *Sim) PinnedStats() (peak []int, mean []float64) {
	if s.pd == nil {
		return nil, nil
	}
	p := s.pd
	end := s.lastEvent
	peak, mean = make([]int, len(p.pins)), make([]float64, len(p.pins))
	for i, ps := range p.pins {
		peak[i] = ps.peak
		sum := ps.sum + float64(ps.now)*float64(end-ps.last)
		if end > 0 {
			mean[i] = sum / float64(end)
		}
	}
	return peak, mean
}

// pinStat is one instance's pinned-KV statistics: the peak, the time
// integral (block*ns) up to last, and the count since last.
type pinStat struct {
	peak, now int
	sum       float64
	last      int64
}

// trackPinned updates the pinned-KV statistics of instance i.
func (s *Sim) trackPinned(i int, now int64) {
	p := s.pd
	cur := s.engines[i].PinnedBlocks()
	ps := &p.pins[i]
	ps.sum += float64(ps.now) * float64(now-ps.last)
	ps.last, ps.now = now, cur
	if cur > ps.peak {
		ps.peak = cur
	}
}
