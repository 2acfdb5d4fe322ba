// Package runner runs one built scenario end to end: it wires the
// simulation's observer to the streamed outputs (per-request CSV and JSONL,
// the per-instance time series), the run summary and an optional progress
// callback, and returns the summary.
package runner

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/kvtier"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/perf"
)

// Options selects the outputs of a run. Empty paths are not written.
type Options struct {
	RequestsCSV   string // per-request CSV
	RequestsJSONL string // per-request JSONL
	Series        string // per-instance 1 s time series CSV
	// OnRecord, if set, sees every terminal record (not retained).
	OnRecord func(*metrics.Record)
	// Progress, if set, is called every ProgressEvery terminal requests
	// with the count so far and the simulated time in ns.
	Progress      func(done int64, simNs int64)
	ProgressEvery int64
	// SLO sets per-request latency bounds for attainment and goodput
	// (zero: the scenario's slo section).
	SLO metrics.SLO
	// Targets are percentile targets checked at the end (added to the
	// scenario's).
	Targets []metrics.Target
	// Sampler, if set, sees every instance's state at each 1 s boundary
	// (e.g. a *report.Collector).
	Sampler Sampler
	// Interrupt, if set, is checked every few thousand events; when it
	// returns true the run stops with cluster.ErrInterrupted (e.g. on
	// SIGTERM). The simulation itself reads no clock.
	Interrupt func() bool
}

// Sampler samples instance state at fixed boundaries with the contract of
// metrics.SeriesWriter: Watch registers each instance before the run,
// Advance is called before every event, Close once at the end.
type Sampler interface {
	Watch(instance int, snap metrics.SnapshotFunc)
	Advance(now int64)
	Close(end int64)
}

// observer implements cluster.Observer.
type observer struct {
	// The fields every step reads first (StepDone, Advance).
	sum *metrics.Summary
	// inWarmup reports whether warm-up requests still run: their gaps
	// stay out of the ITL statistics.
	inWarmup func() bool
	// spec says whether some engine speculates: only then can a step
	// carry speculative counts (StepResult.Spec is zero otherwise, and
	// reading it would cost a line of the result no other field needs).
	spec    bool
	ivs     []*metrics.Interval
	now     int64
	series  *metrics.SeriesWriter
	opts    *Options
	err     error
	csv     *metrics.CSVWriter
	jsonl   *metrics.JSONLWriter
	done    int64
	closers []io.Closer
}

func (o *observer) Advance(now int64) {
	o.now = now
	if o.series != nil && o.err == nil {
		o.err = o.series.Advance(now)
	}
	if o.opts.Sampler != nil {
		o.opts.Sampler.Advance(now)
	}
}

func (o *observer) StepDone(inst int, r *engine.StepResult) {
	if o.inWarmup == nil || !o.inWarmup() {
		// Adjacent runs of one gap (the lane's and the explicit
		// decoders' of the same step) recorded as one: the same counts.
		var ns, count int64
		for _, g := range r.ITL {
			if count > 0 && g.NS != ns {
				o.sum.AddITLs(ns, count)
				count = 0
			}
			ns, count = g.NS, count+g.Count
		}
		if count > 0 {
			o.sum.AddITLs(ns, count)
		}
	}
	if sp := &r.Spec; o.spec && sp.StepNs > 0 {
		o.sum.AddSpec(sp.Drafts, sp.Proposed, sp.Accepted, sp.Emitted, sp.DraftNs, sp.StepNs)
	}
	if o.ivs != nil {
		o.ivs[inst].AddPromptTokens(r.PromptTokens)
		o.ivs[inst].AddGenTokens(r.GenTokens)
	}
}

func (o *observer) Terminal(rec *metrics.Record) {
	o.sum.Add(rec)
	if o.csv != nil && o.err == nil {
		o.err = o.csv.Write(rec)
	}
	if o.jsonl != nil && o.err == nil {
		o.err = o.jsonl.Write(rec)
	}
	if o.opts.OnRecord != nil {
		o.opts.OnRecord(rec)
	}
	o.done++
	if o.opts.Progress != nil && o.opts.ProgressEvery > 0 && o.done%o.opts.ProgressEvery == 0 {
		o.opts.Progress(o.done, o.now)
	}
}

// TruncatedUnread implements cluster.UnreadObserver: the requests of the
// workload a limited run never read are counted in the summary, without a
// per-request row.
func (o *observer) TruncatedUnread(n int64) {
	o.sum.AddTruncated(n)
	o.done += n
}

// create opens path write-only (created or truncated). Write-only matters
// for a named pipe or /dev/stdout: a read-write open would make this
// process a reader of its own pipe, so a reader that went away would leave
// the writes blocked instead of failing with EPIPE.
func create(path string, closers *[]io.Closer) (*bufio.Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	*closers = append(*closers, flushCloser{bw, f})
	return bw, nil
}

type flushCloser struct {
	bw *bufio.Writer
	f  *os.File
}

func (c flushCloser) Close() error {
	if err := c.bw.Flush(); err != nil {
		c.f.Close()
		return err
	}
	return c.f.Close()
}

// Run simulates b with the given outputs and returns the summary.
func Run(b *assemble.Built, opts Options) (metrics.Result, error) {
	o := &observer{sum: metrics.NewSummary(), opts: &opts}
	slo := b.Scenario().SLO
	if opts.SLO == (metrics.SLO{}) {
		opts.SLO = metrics.SLO{TTFT: int64(slo.TTFTMs * 1e6), TPOT: int64(slo.TPOTMs * 1e6), E2E: int64(slo.E2EMs * 1e6)}
	}
	for _, t := range slo.Percentiles {
		opts.Targets = append(opts.Targets, metrics.Target{Metric: targetMetric(t.Metric), Percentile: t.Percentile, MaxMs: t.MaxMs})
	}
	o.sum.SetSLO(opts.SLO)
	o.sum.SetTargets(opts.Targets)
	if b.Scenario().FrontEnd != nil {
		o.sum.SetClientSide()
	}
	warm := int64(b.Scenario().Workload.WarmupRequests)
	o.sum.SetWarmup(warm)
	defer func() {
		for _, c := range o.closers {
			c.Close()
		}
	}()
	var wopts []metrics.Option
	if b.Scenario().KVTiers != nil {
		wopts = append(wopts, metrics.WithTierColumns())
	}
	if b.Scenario().FrontEnd != nil {
		wopts = append(wopts, metrics.WithFrontEndColumns())
	}
	if sc := b.Scenario(); sc.UsesPriorities() {
		wopts = append(wopts, metrics.WithPriorityColumn())
	}
	if opts.RequestsCSV != "" {
		w, err := create(opts.RequestsCSV, &o.closers)
		if err != nil {
			return metrics.Result{}, err
		}
		o.csv = metrics.NewCSVWriter(w, wopts...)
	}
	if opts.RequestsJSONL != "" {
		w, err := create(opts.RequestsJSONL, &o.closers)
		if err != nil {
			return metrics.Result{}, err
		}
		o.jsonl = metrics.NewJSONLWriter(w, wopts...)
	}
	// A failed output (a full disk, a reader that closed its pipe) stops
	// the run at the next check: the rest would be simulated for nothing.
	interrupt := func() bool {
		return o.err != nil || (opts.Interrupt != nil && opts.Interrupt())
	}
	sim, tables, closer, err := b.NewRun(o, interrupt)
	if err != nil {
		return metrics.Result{}, err
	}
	defer closer.Close()
	if warm > 0 {
		o.inWarmup = sim.InWarmup
	}
	o.spec = speculating(sim.Engines())
	tiers := sim.Tiers()
	swaps := tiers != nil && swapping(sim.Engines()) // swap needs the tiers (validated)
	faults := b.HasFaults()
	snap := func(i int) metrics.SnapshotFunc {
		return func() metrics.Snapshot {
			st := sim.State(i)
			sn := metrics.Snapshot{Running: st.Running, Waiting: st.Waiting, HandoffQueue: st.HandoffQueue,
				KVUsedBlocks: st.KVUsed, KVPinnedBlocks: st.KVPinned, KVCachedBlocks: st.KVCached,
				KVTotalBlocks: st.KVCapacity, LinkUtil: st.LinkUtil}
			if tiers != nil {
				n := tiers.NodeOf(i)
				sn.HostChunks, sn.DiskChunks = tiers.Occupied(n, kvtier.Host), tiers.Occupied(n, kvtier.Disk)
				sn.TierLoading = sim.Engines()[i].Loading()
			}
			if faults {
				sn.Alive, sn.State = sim.Alive(i), sim.UnitState(i)
			}
			if swaps {
				// Swap preemption needs KV tiers: its copies run on their links,
				// sized in their blocks.
				e := sim.Engines()[i]
				sn.Swapped, sn.SwapUsedBytes = e.Swapping(), int64(e.SwapUsed())*tiers.BlockBytes()
			}
			return sn
		}
	}
	if opts.Series != "" {
		w, err := create(opts.Series, &o.closers)
		if err != nil {
			return metrics.Result{}, err
		}
		sopts := wopts
		if swaps {
			sopts = append(sopts[:len(sopts):len(sopts)], metrics.WithSwapColumns())
		}
		if faults {
			sopts = append(sopts[:len(sopts):len(sopts)], metrics.WithFaultColumns())
		}
		o.series = metrics.NewSeriesWriter(w, metrics.DefaultSeriesPeriod, sopts...)
		for i := range b.NumInstances() {
			o.ivs = append(o.ivs, o.series.Add(i, snap(i)))
		}
	}
	if opts.Sampler != nil {
		for i := range b.NumInstances() {
			opts.Sampler.Watch(i, snap(i))
		}
	}
	end, err := sim.Run()
	if opts.Sampler != nil {
		opts.Sampler.Close(end)
	}
	if o.err != nil {
		return metrics.Result{}, fmt.Errorf("output: %w", o.err)
	}
	var stop *cluster.StopReport
	if errors.As(err, &stop) {
		// The eager policy stopped the run: report what happened so far.
		res := o.sum.Finish(end)
		describe(b, &res)
		res.Stopped = stop.Error()
		return res, err
	}
	if err != nil {
		return metrics.Result{}, err
	}
	if o.series != nil {
		if err := o.series.Close(end); err != nil {
			return metrics.Result{}, fmt.Errorf("output: %w", err)
		}
	}
	if o.csv != nil {
		if err := o.csv.Flush(); err != nil {
			return metrics.Result{}, fmt.Errorf("output: %w", err)
		}
	}
	if o.jsonl != nil {
		if err := o.jsonl.Flush(); err != nil {
			return metrics.Result{}, fmt.Errorf("output: %w", err)
		}
	}
	for _, c := range o.closers {
		if err := c.Close(); err != nil {
			return metrics.Result{}, fmt.Errorf("output: %w", err)
		}
	}
	o.closers = nil
	origin := max(sim.WarmupEnd(), 0) // the measured run starts after the warm-up
	res := o.sum.Finish(end - origin)
	if warm > 0 {
		res.ThroughputBase = "run after the warm-up"
	}
	if w, ok := sim.SteadyWindow(); ok {
		secs := float64(w.End-w.Start) / 1e9
		res.Steady = &metrics.SteadyResult{Clients: b.Scenario().Workload.MaxConcurrency, StartS: float64(w.Start-origin) / 1e9, EndS: float64(w.End-origin) / 1e9,
			Finished: w.Finished, OutputTokens: w.OutputTokens, ThroughputRPS: float64(w.Finished) / secs, OutputTokS: float64(w.OutputTokens) / secs}
	}
	describe(b, &res)
	res.KernelTables = tableUses(tables)
	res.Limit = sim.LimitReached()
	if tiers != nil {
		res.KVTiers = tierResults(tiers, o.sum)
		res.Swap = swapResult(sim.Engines(), tiers.BlockBytes())
	}
	res.Faults = faultResult(sim.FaultStats(end), b.Scenario().Faults != nil)
	res.OffloadDeferred = sim.OffloadDeferred()
	if tiers != nil {
		for n := range tiers.Nodes() {
			res.OffloadPeakBytes = max(res.OffloadPeakBytes, tiers.HandoffPeak(n))
		}
	}
	if peak, mean := sim.PinnedStats(); peak != nil {
		for i := range peak {
			if b.Instance(i).Role == config.RolePrefill {
				res.PinnedKV = append(res.PinnedKV, metrics.PinnedKV{Instance: i, PeakBlocks: peak[i], MeanBlocks: mean[i]})
			}
		}
	}
	return res, nil
}

// tableUses lists the measured kernel tables' use over a run.
func tableUses(c *perf.TableCounts) []metrics.TableUse {
	var out []metrics.TableUse
	for _, op := range c.Ops() {
		out = append(out, metrics.TableUse{Op: op.String(), Evals: c.Evals[op], Fallbacks: c.Fallbacks[op]})
	}
	return out
}

// describe attaches what was simulated to a run's result.
func describe(b *assemble.Built, res *metrics.Result) {
	d := b.Describe()
	res.Scenario, res.Simulated = d, d.Lines()
}

// swapping reports whether some engine preempts by swapping (and the time
// series has the swap columns).
func swapping(engines []*engine.Engine) bool {
	for _, e := range engines {
		if e.Config().SwapBlocks > 0 {
			return true
		}
	}
	return false
}

// speculating reports whether some engine decodes speculatively (and its
// steps' results may carry speculative counts).
func speculating(engines []*engine.Engine) bool {
	for _, e := range engines {
		if c := e.Config(); c.Spec.On() {
			return true
		}
	}
	return false
}

// swapResult summarises swap preemption over the engines that swap (nil
// when none does).
func swapResult(engines []*engine.Engine, blockBytes int64) *metrics.SwapResult {
	var r metrics.SwapResult
	var outNs, inNs, outDone, inDone int64
	on := false
	for _, e := range engines {
		c := e.Config().SwapBlocks
		if c == 0 {
			continue
		}
		on = true
		st := e.SwapTotals()
		r.SwapOuts += st.Outs
		r.SwapIns += st.Ins
		r.Fallbacks += st.Fallbacks
		r.BytesOut += st.BlocksOut * blockBytes
		r.BytesIn += st.BlocksIn * blockBytes
		outNs += st.OutNs
		inNs += st.InNs
		outDone += st.OutsDone
		inDone += st.InsDone
		r.PeakBlocks = max(r.PeakBlocks, st.PeakUsedBlocks)
		r.CapacityBlocks = max(r.CapacityBlocks, c)
	}
	if !on {
		return nil
	}
	if outDone > 0 {
		r.OutMeanMs = float64(outNs) / float64(outDone) / 1e6
	}
	if inDone > 0 {
		r.InMeanMs = float64(inNs) / float64(inDone) / 1e6
	}
	return &r
}

// tierResults summarises the KV tiers of a run.
func tierResults(h *kvtier.Hierarchy, sum *metrics.Summary) []metrics.TierResult {
	var out []metrics.TierResult
	for t := kvtier.Host; t <= kvtier.Disk; t++ {
		st := h.Stats(t)
		if st.Capacity == 0 {
			continue
		}
		n, _ := sum.TierRequests(t)
		r := metrics.TierResult{Tier: kvtier.TierName(t), Requests: n, HitBlocks: st.HitBlocks, HitTokens: st.HitTokens,
			Loads: st.Loads, BytesRead: st.BytesRead, BytesWritten: st.BytesWritten, ChunksStored: st.Stored,
			ChunksEvicted: st.Evicted, ChunksDropped: st.Dropped, ChunksHeld: st.Occupied, ChunksCapacity: st.Capacity}
		if st.Loads > 0 {
			r.LoadMeanMs = float64(st.LoadNs) / float64(st.Loads) / 1e6
		}
		out = append(out, r)
	}
	return out
}

// faultResult converts the fault model's counts (nil: no faults and no
// autoscaler); injected says whether the scenario injects faults.
func faultResult(st *cluster.FaultStats, injected bool) *metrics.FaultResult {
	if st == nil {
		return nil
	}
	r := &metrics.FaultResult{Losses: st.Losses, Restarts: st.Restarts, Retried: st.Retried, Replaced: st.Replaced, KVLost: st.KVLost,
		LoadFailures: st.LoadFailures, LoadRecomputed: st.LoadRecomputed, ScaleUps: st.ScaleUps, ScaleDowns: st.ScaleDowns,
		GPUHours: st.GPUHours, Injected: injected, Events: []metrics.FaultEventResult{}}
	for _, e := range st.Events {
		r.Events = append(r.Events, metrics.FaultEventResult{AtS: float64(e.At) / 1e9, Instance: e.Unit, Pool: e.Pool, Kind: e.Kind})
	}
	return r
}

// targetMetric is the summary's latency metric of a configured target.
func targetMetric(m config.SLOMetric) metrics.Metric {
	switch m {
	case config.MetricTTFT:
		return metrics.TTFT
	case config.MetricTPOT:
		return metrics.TPOT
	case config.MetricITL:
		return metrics.ITL
	case config.MetricE2E:
		return metrics.E2E
	}
	return metrics.Metric(m) // refused by Validate; the target is then reported unmet
}
