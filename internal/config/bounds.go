package config

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/internal/kv"
)

// Fixed bounds on the simulator's own state and on the times a scenario
// states. They are the same on every machine, so a scenario that validates
// here validates everywhere; docs/configuration.md lists them.
const (
	// MaxInstances bounds the number of instances (the sum of the groups'
	// counts).
	MaxInstances = 4096
	// MaxParallel bounds tp and pp of a group (pp is also at most the
	// model's number of layers).
	MaxParallel = 1024
	// MaxBlocksPerInstance bounds one instance's KV blocks (given as
	// num_gpu_blocks or computed from memory): the KV pool's own bound
	// (2^27), above what vLLM gives one instance of the catalog's models
	// on its largest GPUs even with block_size 1 (Qwen3-30B-A3B at tp 4 x
	// pp 2 on a B200: 13,298,498 blocks). A block costs the pool at most 28 bytes
	// (its state word, hash and up to four free-queue entries), so the
	// largest pool takes under 4 GB.
	MaxBlocksPerInstance = kv.MaxCapacity
	// MaxTotalBlocks bounds the KV blocks of the whole cluster (2^28, at
	// most 7.5 GB of pool state).
	MaxTotalBlocks = 1 << 28
	// MaxNumSeqs bounds max_num_seqs.
	MaxNumSeqs = 1 << 20
	// MaxTokens bounds token-count settings: max_num_batched_tokens,
	// max_model_len, long_prefill_token_threshold, reserved_decode_tokens
	// and local_prefill_below.
	MaxTokens = 1 << 26
	// MaxBlockSize bounds block_size.
	MaxBlockSize = 1 << 16
	// MaxDurationS bounds the handoff durations in seconds (lease_s,
	// retry_after_s, max_prefill_queue_s) and the run limit max_sim_time_s.
	MaxDurationS = 1e6
	// MaxMicroseconds bounds per-step and per-message times in
	// microseconds (step_overhead_us, links.latency_us,
	// links.tp_latency_us): one second.
	MaxMicroseconds = 1e6
	// MinBandwidthGBps and MaxBandwidthGBps bound a set link bandwidth.
	MinBandwidthGBps = 1e-3
	MaxBandwidthGBps = 1e6
	// MaxMemoryGB bounds an accelerator memory override.
	MaxMemoryGB = 1e5
	// MaxTimeScale bounds workload.time_scale.
	MaxTimeScale = 1e6
	// MaxCollectiveScale bounds predictor.collective_scale.
	MaxCollectiveScale = 100
	// MaxSLOMs bounds SLO latency bounds and targets, ms.
	MaxSLOMs = 1e12
)

// finite reports whether v is neither NaN nor infinite.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// boundsChecker collects range errors naming their fields.
type boundsChecker struct {
	bad func(field, format string, args ...any)
}

// between requires lo <= v <= hi (v finite).
func (c boundsChecker) between(field string, v, lo, hi float64, unit string) {
	if !finite(v) || v < lo || v > hi {
		c.bad(field, "must be a finite number in [%g, %g]%s (got %v)", lo, hi, unit, v)
	}
}

// positive requires 0 < v <= hi (v finite).
func (c boundsChecker) positive(field string, v, hi float64, unit string) {
	if !finite(v) || v <= 0 || v > hi {
		c.bad(field, "must be a finite number in (0, %g]%s (got %v)", hi, unit, v)
	}
}

// atMost requires an integer setting to be at most hi.
func (c boundsChecker) atMost(field string, v, hi int) {
	if v > hi {
		c.bad(field, "must be at most %d, the simulator's bound (got %d)", hi, v)
	}
}

// validateBounds checks every float for NaN and infinity and every size
// and time against the fixed bounds above.
func (s *Scenario) validateBounds(bad func(field, format string, args ...any)) {
	c := boundsChecker{bad}
	c.between("predictor.step_overhead_us", s.Predictor.StepOverheadUs, 0, MaxMicroseconds, " us")
	c.between("predictor.collective_scale", s.Predictor.CollectiveScale, 0, MaxCollectiveScale, "")
	s.Engine.validateBounds("engine", c)
	total := 0
	for i := range s.Instances {
		g := &s.Instances[i]
		p := fmt.Sprintf("instances[%d]", i)
		if g.Count != nil && *g.Count > 0 {
			total += min(*g.Count, MaxInstances+1)
		}
		if g.TP != nil {
			c.atMost(p+".tp", *g.TP, MaxParallel)
		}
		if g.PP != nil {
			c.atMost(p+".pp", *g.PP, MaxParallel)
		}
		if g.MemoryGB != 0 {
			c.positive(p+".memory_gb", g.MemoryGB, MaxMemoryGB, " GB")
		}
		if g.Engine != nil {
			g.Engine.validateBounds(p+".engine", c)
		}
	}
	if total > MaxInstances {
		bad("instances", "the groups' counts add up to more than %d instances, the simulator's bound; simulate a smaller cluster", MaxInstances)
	}
	h := &s.Handoff
	c.positive("handoff.lease_s", h.LeaseS, MaxDurationS, " s")
	c.positive("handoff.retry_after_s", h.RetryAfterS, MaxDurationS, " s")
	c.between("handoff.max_prefill_queue_s", h.MaxPrefillQueueS, 0, MaxDurationS, " s")
	c.between("handoff.max_decode_kv_fraction", h.MaxDecodeKVFraction, 0, math.MaxFloat64, "")
	if v := h.PushBufferFraction; !finite(v) || v < 0 || v >= 1 {
		bad("handoff.push_buffer_fraction", "must be in [0, 1) (got %v)", v)
	}
	c.atMost("handoff.reserved_decode_tokens", h.ReservedDecodeTokens, MaxTokens)
	c.atMost("handoff.local_prefill_below", h.LocalPrefillBelow, MaxTokens)
	l := &s.Links
	for _, bw := range []struct {
		field string
		v     float64
	}{{"links.bandwidth_gbps", l.BandwidthGBps}, {"links.tp_bandwidth_gbps", l.TPBandwidthGBps}} {
		if bw.v != 0 {
			c.between(bw.field, bw.v, MinBandwidthGBps, MaxBandwidthGBps, " GB/s (0: the catalog's)")
		}
	}
	for _, lat := range []struct {
		field string
		v     float64
	}{{"links.latency_us", l.LatencyUs}, {"links.tp_latency_us", l.TPLatencyUs}} {
		if !finite(lat.v) || lat.v > MaxMicroseconds {
			bad(lat.field, "must be a finite number <= %g us (negative: the catalog's; got %v)", float64(MaxMicroseconds), lat.v)
		}
	}
	c.between("slo.ttft_ms", s.SLO.TTFTMs, 0, MaxSLOMs, " ms")
	c.between("slo.tpot_ms", s.SLO.TPOTMs, 0, MaxSLOMs, " ms")
	c.between("slo.e2e_ms", s.SLO.E2EMs, 0, MaxSLOMs, " ms")
	for i, t := range s.SLO.Percentiles {
		c.positive(fmt.Sprintf("slo.percentiles[%d].max_ms", i), t.MaxMs, MaxSLOMs, " ms")
	}
	c.between("limits.max_sim_time_s", s.Limits.MaxSimTimeS, 0, MaxDurationS, " s (0: no bound)")
	if s.Limits.MaxEvents < 0 {
		bad("limits.max_events", "must be >= 0 (got %d; 0: the automatic budget)", s.Limits.MaxEvents)
	}
	c.positive("workload.time_scale", s.Workload.TimeScale, MaxTimeScale, "")
}

// validateBounds checks an engine's sizes against the fixed bounds.
func (e *Engine) validateBounds(path string, c boundsChecker) {
	c.atMost(path+".max_num_seqs", e.MaxNumSeqs, MaxNumSeqs)
	c.atMost(path+".max_num_batched_tokens", e.MaxNumBatchedTokens, MaxTokens)
	c.atMost(path+".block_size", e.BlockSize, MaxBlockSize)
	c.atMost(path+".long_prefill_token_threshold", e.LongPrefillTokenThreshold, MaxTokens)
	c.atMost(path+".num_gpu_blocks", e.NumGPUBlocks, MaxBlocksPerInstance)
	c.atMost(path+".max_model_len", e.MaxModelLen, MaxTokens)
	if u := e.GPUMemoryUtilization; !finite(u) {
		c.bad(path+".gpu_memory_utilization", "must be in (0, 1] (got %v)", u)
	}
}
