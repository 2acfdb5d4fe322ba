package report

import (
	"fmt"
	"math"
	"slices"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/servesim/servesim/internal/metrics"
)

// MaxPoints bounds the points kept per instance time series: when a series
// would exceed it, adjacent points are merged pairwise.
const MaxPoints = 2000

// maxCDFPoints bounds the points of one drawn CDF (about; see cdf).
const maxCDFPoints = 1000

// Histogram geometry: microseconds from 1 us to 1e13 us, three significant
// digits, as metrics.Summary uses, so CDFs and the summary table agree.
const (
	histLowUs  = 1
	histHighUs = 1e13
	histDigits = 3
)

// Latency metrics with a CDF.
const (
	metricTTFT = iota
	metricTPOT
	metricE2E
	numMetrics
)

var metricNames = [numMetrics]string{"TTFT", "TPOT", "E2E"}

// Time-series fields of a Snapshot, in chart order.
const (
	fieldRunning = iota
	fieldWaiting
	fieldHandoff
	fieldKVUsed
	fieldKVPinned
	fieldKVCached
	fieldLinkUtil
	fieldAlive // 1 while the instance serves (runs with faults or an autoscaler)
	numFields
)

// latency is one metric's distribution: an HdrHistogram in microseconds
// plus the exact count, min and max in ns.
type latency struct {
	h        *hdrhistogram.Histogram
	n        int64
	min, max int64
	err      error // first value the histogram refused (see Collector.Err)
}

func (l *latency) add(ns int64) {
	if ns < 0 {
		return
	}
	if l.h == nil {
		l.h = hdrhistogram.New(histLowUs, histHighUs, histDigits)
	}
	if l.n == 0 || ns < l.min {
		l.min = ns
	}
	l.max = max(l.max, ns)
	l.n++
	// Clamped to the histogram's range, so this does not fail; if it ever
	// did, Collector.Err reports it rather than a silently short CDF.
	if err := l.h.RecordValue(min((ns+500)/1000, histHighUs)); err != nil && l.err == nil {
		l.err = fmt.Errorf("report: record %d ns: %w", ns, err)
	}
}

// Err returns the first latency a histogram could not record (nil in any
// correct run).
func (c *Collector) Err() error {
	for i := range c.lat {
		if err := c.lat[i].err; err != nil {
			return err
		}
	}
	return nil
}

// point is one point of a CDF: a latency in ms and the fraction of samples
// at or below it.
type point struct{ x, y float64 }

// cdf returns the distribution as at most about 2*maxCDFPoints points in
// increasing order of latency (ms), starting at the exact minimum with the
// fraction of samples in its bucket and ending at the exact maximum with 1.
// Each point is the upper end of a histogram bucket (0.1 % wide) clamped
// to [min, max]; buckets are skipped while both the fraction and the
// latency moved less than 1/maxCDFPoints of their range since the last
// kept point.
func (l *latency) cdf() []point {
	if l.n == 0 {
		return nil
	}
	lo, hi := float64(l.min)/1e6, float64(l.max)/1e6
	dx := (hi - lo) / maxCDFPoints
	const dy = 1.0 / maxCDFPoints
	var pts []point
	var cum int64
	for _, b := range l.h.Distribution() {
		if b.Count == 0 {
			continue
		}
		cum += b.Count
		p := point{x: min(max(float64(b.To)/1e3, lo), hi), y: float64(cum) / float64(l.n)}
		if cum == l.n {
			p.x = hi
		}
		if k := len(pts); k > 0 && cum < l.n && p.y-pts[k-1].y < dy && p.x-pts[k-1].x < dx {
			continue
		}
		pts = append(pts, p)
	}
	if len(pts) > 0 {
		pts[0].x = lo
	}
	return pts
}

// bucket aggregates consecutive samples of one instance.
type bucket struct {
	t0, t1 int64 // times of the first and last sample, ns
	n      int64 // samples merged
	sum    [numFields]float64
	max    [numFields]float64
}

func (b *bucket) merge(o *bucket) {
	b.t1 = o.t1
	b.n += o.n
	for f := range b.sum {
		b.sum[f] += o.sum[f]
		b.max[f] = max(b.max[f], o.max[f])
	}
}

// mean returns the mean of field f over the bucket's samples.
func (b *bucket) mean(f int) float64 { return b.sum[f] / float64(b.n) }

// series is one instance's downsampled time series. Every bucket but the
// last holds exactly width samples; width doubles at each merge.
type series struct {
	instance int
	width    int64
	buckets  []bucket
	kvTotal  int // pool size at the last sample
	peak     [numFields]float64
}

func (s *series) add(t int64, v *[numFields]float64, kvTotal int) {
	if k := len(s.buckets); k > 0 && t <= s.buckets[k-1].t1 {
		return // out of order: dropped (see Sample)
	}
	s.kvTotal = kvTotal
	for f := range v {
		s.peak[f] = max(s.peak[f], v[f])
	}
	if k := len(s.buckets); k > 0 && s.buckets[k-1].n < s.width {
		b := &s.buckets[k-1]
		one := bucket{t0: t, t1: t, n: 1, sum: *v, max: *v}
		b.merge(&one)
		return
	}
	s.buckets = append(s.buckets, bucket{t0: t, t1: t, n: 1, sum: *v, max: *v})
	if len(s.buckets) > maxPoints {
		s.halve()
	}
}

// halve merges buckets pairwise (0+1, 2+3, ...) and doubles the width.
func (s *series) halve() {
	n := 0
	for i := 0; i < len(s.buckets); i += 2 {
		b := s.buckets[i]
		if i+1 < len(s.buckets) {
			b.merge(&s.buckets[i+1])
		}
		s.buckets[n] = b
		n++
	}
	clear(s.buckets[n:])
	s.buckets = s.buckets[:n]
	s.width *= 2
}

// maxPoints is MaxPoints; a variable so that tests can shrink it.
var maxPoints = MaxPoints

// Collector accumulates what a report draws from one run, streamed: the
// latency distributions of finished requests (Record) and each instance's
// state over time (Sample, or Watch with Advance and Close). Its memory is
// bounded whatever the number of requests or the length of the run: three
// fixed-size histograms, and at most MaxPoints points per instance.
//
// The zero value is not usable; call NewCollector. A Collector is not safe
// for concurrent use; use one per run.
type Collector struct {
	lat    [numMetrics]latency
	series []*series // by instance index; nil when never sampled

	period  int64
	next    int64 // next sampling boundary, ns
	watched []watch
	closed  bool
}

type watch struct {
	instance int
	snap     metrics.SnapshotFunc
}

// NewCollector returns an empty collector that samples watched instances
// every metrics.DefaultSeriesPeriod (1 s), like the time-series CSV.
func NewCollector() *Collector {
	return &Collector{period: metrics.DefaultSeriesPeriod, next: metrics.DefaultSeriesPeriod}
}

// Record accounts for one request's terminal record: the TTFT, TPOT and
// E2E of finished requests go into the CDFs, as in metrics.Summary. It does
// not keep r. Outcome counts come from the run's metrics.Result.
func (c *Collector) Record(r *metrics.Record) {
	if r.Outcome != metrics.Finished {
		return
	}
	c.lat[metricTTFT].add(r.TTFT())
	c.lat[metricTPOT].add(r.TPOT())
	c.lat[metricE2E].add(r.E2E())
}

// Sample adds instance's state at simulated time t (ns). Samples of one
// instance must come in increasing t; a sample at or before the previous
// one of the same instance is ignored. instance must be >= 0.
func (c *Collector) Sample(t int64, instance int, s metrics.Snapshot) {
	if instance < 0 {
		return
	}
	if instance >= len(c.series) {
		c.series = slices.Grow(c.series, instance+1-len(c.series))[:instance+1]
	}
	sr := c.series[instance]
	if sr == nil {
		sr = &series{instance: instance, width: 1}
		c.series[instance] = sr
	}
	v := [numFields]float64{
		fieldRunning:  float64(s.Running),
		fieldWaiting:  float64(s.Waiting),
		fieldHandoff:  float64(s.HandoffQueue),
		fieldKVUsed:   float64(s.KVUsedBlocks),
		fieldKVPinned: float64(s.KVPinnedBlocks),
		fieldKVCached: float64(s.KVCachedBlocks),
		fieldLinkUtil: s.LinkUtil,
	}
	if s.Alive {
		v[fieldAlive] = 1
	}
	if math.IsNaN(v[fieldLinkUtil]) {
		v[fieldLinkUtil] = 0
	}
	sr.add(t, &v, s.KVTotalBlocks)
}

// Watch registers an instance to be sampled through snap at every 1 s
// boundary by Advance and Close. Register every instance before the first
// Advance; snap must not change simulation state.
func (c *Collector) Watch(instance int, snap metrics.SnapshotFunc) {
	c.watched = append(c.watched, watch{instance, snap})
}

// Advance samples every watched instance at each boundary k*1s strictly
// before now not yet sampled. Its contract is metrics.SeriesWriter's: call
// it before applying any event at simulated time now, so a boundary is
// sampled with the state just after the last event at or before it. It is
// cheap when no boundary was crossed, so it can be called on every event.
func (c *Collector) Advance(now int64) {
	if now <= c.next || c.closed {
		return
	}
	c.sampleThrough(now - 1)
}

// Close samples every remaining boundary up to the first at or after end
// (ns), as metrics.SeriesWriter.Close does, and stops sampling. Nothing is
// sampled when end <= 0. Record may still be called after Close.
func (c *Collector) Close(end int64) {
	if c.closed {
		return
	}
	if end > 0 {
		c.sampleThrough((end + c.period - 1) / c.period * c.period)
	}
	c.closed = true
}

func (c *Collector) sampleThrough(t int64) {
	for c.next <= t {
		for _, w := range c.watched {
			var s metrics.Snapshot
			if w.snap != nil {
				s = w.snap()
			}
			c.Sample(c.next, w.instance, s)
		}
		c.next += c.period
	}
}

// instances returns the sampled series in instance order.
func (c *Collector) instances() []*series {
	var out []*series
	for _, s := range c.series {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}
