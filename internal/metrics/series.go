package metrics

import (
	"bufio"
	"errors"
	"io"
	"strconv"
)

// SeriesColumns are the time-series CSV columns, in order. The first seven
// match vLLM's logged timeseries.csv (plus instance); the rest are for P/D
// runs and are zero when unused.
var SeriesColumns = []string{
	"t", "instance", "prompt_throughput", "gen_throughput", "running",
	"waiting", "kv_cache_pct", "handoff_queue", "kv_used_blocks",
	"kv_pinned_blocks", "kv_cached_blocks", "link_util",
}

// Snapshot is an instance's instantaneous state, sampled at each interval
// boundary.
type Snapshot struct {
	Running      int // sequences in the running batch
	Waiting      int // requests queued for admission
	HandoffQueue int // requests waiting for a P/D handoff at this instance
	// KV blocks: Used counts every allocated block (pinned ones included),
	// Pinned those held for a pending handoff, Cached free blocks that still
	// hold reusable prefixes, Total the pool size. kv_cache_pct is
	// Used/Total*100.
	KVUsedBlocks, KVPinnedBlocks, KVCachedBlocks, KVTotalBlocks int
	// LinkUtil is the fraction of the instance's KV-transfer NIC bandwidth
	// in use (the busier direction, averaged over its GPUs).
	LinkUtil float64
	// KV tiers (TierSeriesColumns): chunks held in the host and disk
	// tiers of the instance's node, and requests loading a prefix.
	HostChunks, DiskChunks, TierLoading int
	// Swap preemption (SwapSeriesColumns): requests whose KV is in the
	// instance's swap space (swapping out, swapped out or swapping in),
	// and the bytes of swap space they hold.
	Swapped       int
	SwapUsedBytes int64
	// Faults and autoscaling (FaultSeriesColumns): whether the instance
	// serves (1) or not (0), and its state: serving, draining, starting,
	// restarting, lost or parked.
	Alive bool
	State string
}

// FaultSeriesColumns are the time series columns added last in a run with
// faults or an autoscaler (WithFaultColumns).
var FaultSeriesColumns = []string{"alive", "state"}

// TierSeriesColumns are the time series columns added after SeriesColumns
// when KV tiers are on (WithTierColumns).
var TierSeriesColumns = []string{"host_kv_chunks", "disk_kv_chunks", "tier_loading"}

// SwapSeriesColumns are the time series columns added last when some
// instance preempts by swapping (WithSwapColumns): Snapshot.Swapped and
// Snapshot.SwapUsedBytes in GB (1e9 bytes).
var SwapSeriesColumns = []string{"swapped_requests", "swap_used_gb"}

// SnapshotFunc returns the current state of one instance. It must not
// change state and should not allocate.
type SnapshotFunc func() Snapshot

// Interval accumulates one instance's token counts for the current series
// interval. Engines call AddPromptTokens/AddGenTokens as work completes;
// the owning SeriesWriter reads and resets the counts at each boundary.
type Interval struct {
	instance    int
	snap        SnapshotFunc
	prompt, gen int64
}

// AddPromptTokens counts n prompt tokens computed (prefill) at the current
// simulated time.
func (iv *Interval) AddPromptTokens(n int) { iv.prompt += int64(n) }

// AddGenTokens counts n output tokens emitted at the current simulated time.
func (iv *Interval) AddGenTokens(n int) { iv.gen += int64(n) }

// SeriesWriter streams a per-instance time series as CSV: for every interval
// boundary t = k*period (k = 1, 2, ...) one row per instance, in the order
// the instances were added, including idle intervals. Interval k covers
// ((k-1)*period, k*period]; throughputs are the tokens counted in it divided
// by period, and the Snapshot is taken at its end.
//
// Contract: before applying any event at simulated time now, the caller
// calls Advance(now). Boundaries strictly before now are then emitted with
// the state that held just after the last event at or before them, and
// tokens counted at now (including now == boundary) belong to the interval
// ending at or after now. At the end of the run call Close(end).
type SeriesWriter struct {
	bw     *bufio.Writer
	buf    []byte
	period int64
	next   int64 // end of the current interval, ns
	ivs    []*Interval
	closed bool
	tiers  bool // write TierSeriesColumns
	swap   bool // write SwapSeriesColumns
	faults bool // write FaultSeriesColumns
}

// DefaultSeriesPeriod is the interval length used when none is given: one
// second, as in vLLM's logged metrics.
const DefaultSeriesPeriod int64 = 1e9

// NewSeriesWriter returns a writer of a time series with the given interval
// length in ns (DefaultSeriesPeriod when period <= 0). The header is written
// immediately (buffered).
func NewSeriesWriter(w io.Writer, period int64, opts ...Option) *SeriesWriter {
	if period <= 0 {
		period = DefaultSeriesPeriod
	}
	o := resolveOptions(opts)
	s := &SeriesWriter{bw: bufio.NewWriterSize(w, 64<<10), period: period, next: period, tiers: o.tiers, swap: o.swap, faults: o.faults}
	s.buf = make([]byte, 0, 256)
	for i, c := range SeriesColumns {
		if i > 0 {
			s.buf = append(s.buf, ',')
		}
		s.buf = append(s.buf, c...)
	}
	for _, extra := range [...]struct {
		on   bool
		cols []string
	}{{s.tiers, TierSeriesColumns}, {s.swap, SwapSeriesColumns}, {s.faults, FaultSeriesColumns}} {
		if !extra.on {
			continue
		}
		for _, c := range extra.cols {
			s.buf = append(s.buf, ',')
			s.buf = append(s.buf, c...)
		}
	}
	s.buf = append(s.buf, '\n')
	s.bw.Write(s.buf) // a write error is sticky and reported later
	return s
}

// Add registers an instance and returns its accumulator. snap may be nil
// (all state columns zero). Rows are written in the order of Add calls; an
// instance added mid-run appears from the next boundary on.
func (s *SeriesWriter) Add(instance int, snap SnapshotFunc) *Interval {
	iv := &Interval{instance: instance, snap: snap}
	s.ivs = append(s.ivs, iv)
	return iv
}

// Advance emits the rows of every boundary strictly before now. It is cheap
// when no boundary was crossed, so it can be called on every event.
func (s *SeriesWriter) Advance(now int64) error {
	if now <= s.next {
		return nil
	}
	return s.emitThrough(now - 1)
}

// emitThrough writes every boundary b <= t not yet written.
func (s *SeriesWriter) emitThrough(t int64) error {
	if s.closed {
		return errors.New("metrics: SeriesWriter used after Close")
	}
	for s.next <= t {
		for _, iv := range s.ivs {
			s.buf = s.row(s.buf[:0], iv)
			if _, err := s.bw.Write(s.buf); err != nil {
				return err
			}
			iv.prompt, iv.gen = 0, 0
		}
		s.next += s.period
	}
	return nil
}

// row appends the CSV row of iv for the boundary s.next.
func (s *SeriesWriter) row(b []byte, iv *Interval) []byte {
	var sn Snapshot
	if iv.snap != nil {
		sn = iv.snap()
	}
	b = appendSeconds(b, s.next)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(iv.instance), 10)
	b = append(b, ',')
	b = strconv.AppendFloat(b, float64(iv.prompt)*1e9/float64(s.period), 'f', 1, 64)
	b = append(b, ',')
	b = strconv.AppendFloat(b, float64(iv.gen)*1e9/float64(s.period), 'f', 1, 64)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(sn.Running), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(sn.Waiting), 10)
	b = append(b, ',')
	pct := 0.0
	if sn.KVTotalBlocks > 0 {
		pct = float64(sn.KVUsedBlocks) * 100 / float64(sn.KVTotalBlocks)
	}
	b = strconv.AppendFloat(b, pct, 'f', 2, 64)
	for _, v := range [...]int{sn.HandoffQueue, sn.KVUsedBlocks, sn.KVPinnedBlocks, sn.KVCachedBlocks} {
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(v), 10)
	}
	b = append(b, ',')
	b = strconv.AppendFloat(b, sn.LinkUtil, 'f', 3, 64)
	if s.tiers {
		for _, v := range [...]int{sn.HostChunks, sn.DiskChunks, sn.TierLoading} {
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(v), 10)
		}
	}
	if s.swap {
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(sn.Swapped), 10)
		b = append(b, ',')
		b = strconv.AppendFloat(b, float64(sn.SwapUsedBytes)/1e9, 'f', 3, 64)
	}
	if s.faults {
		b = append(b, ',')
		if sn.Alive {
			b = append(b, '1')
		} else {
			b = append(b, '0')
		}
		b = append(b, ',')
		b = append(b, sn.State...)
	}
	return append(b, '\n')
}

// Close emits every remaining boundary up to the first one at or after end
// (so a final partial interval is reported as a full one, its throughput
// divided by the full period), flushes, and makes further use an error.
// Nothing beyond the header is written when end <= 0.
func (s *SeriesWriter) Close(end int64) error {
	if s.closed {
		return nil
	}
	if end > 0 {
		last := (end + s.period - 1) / s.period * s.period
		if err := s.emitThrough(last); err != nil {
			return err
		}
	}
	s.closed = true
	return s.bw.Flush()
}

// Flush writes buffered rows to the underlying writer.
func (s *SeriesWriter) Flush() error { return s.bw.Flush() }
