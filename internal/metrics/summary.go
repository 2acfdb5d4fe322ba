package metrics

import (
	"math"
	"math/bits"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry shared by every latency metric: microseconds, 1 us to
// 1e13 us (about 115 days), three significant digits.
const (
	histLowUs  = 1
	histHighUs = 1e13
	histDigits = 3
	// histSubBucketBits is log2 of the sub-bucket count HdrHistogram uses for
	// histDigits (2048 sub-buckets for 3 digits): values below 2^11 are exact,
	// above it a bucket spans 2^(bitlen(v)-11) values.
	histSubBucketBits = 11
)

// midEquivalent maps v, the highest value of its histogram bucket as
// returned by ValueAtQuantile, to the bucket's midpoint, which halves the
// worst-case error (HdrHistogram's medianEquivalentValue).
func midEquivalent(v int64) int64 {
	shift := bits.Len64(uint64(v)) - histSubBucketBits
	if shift <= 0 {
		return v
	}
	width := int64(1) << shift
	return v&^(width-1) + width/2
}

// dist accumulates one latency metric: an HdrHistogram in microseconds for
// percentiles plus exact count, sum, min and max in ns.
//
// The histogram is kept as counts arrays in HdrHistogram's own layout
// (see histIndex) and made a histogram only by stat: a value costs an
// index and an add rather than the library's call and checks (one ITL
// value per engine step). The arrays span the whole geometry (histLen),
// so no value needs a bounds or growth check; the pages a metric's
// values never reach are never touched.
//
// The counts are 32-bit (narrow), which halves the lines a metric's values
// spread over and the engines' state evicts between one value and the
// next. A run of equal values (addN: the ITL of a step) is counted at
// once. A single value (add: one per request and metric) is first only
// noted in pend, and pendCap of them are counted at once: their indices
// spread over hundreds of cache lines, so counting each value as it came
// cost a cache miss nearly every time, while a batch of them shares the
// lines it touches. A narrow count cannot wrap: once the values recorded
// since narrow was last emptied may pass spillEvery, narrow is added to
// wide, 64-bit counts made then, and emptied (spill). hist adds the two.
//
// The fields add and addN read come first, in one 64-byte line (Summary
// keeps its dists at the start, 128 bytes each).
type dist struct {
	n        int64
	sum      int64 // ns; overflows only past ~292 years of summed latency
	min, max int64 // ns; min starts at math.MaxInt64 (newDist)
	pend     *[pendCap]uint16
	narrow   *[histLen]uint32 // counts since the last spill
	npend    int32            // how many of pend are noted (pendCap until pend is made)
	nbounds  int32            // len(bounds)
	spillAt  int64            // n past which narrow could wrap (see spill)
	wide     *[histLen]int64  // counts spilled (nil until the first spill)
	// bounds are the percentile targets' bounds on this metric (ns) and
	// within[i] counts the values <= bounds[i], exactly: a target's
	// verdict must not depend on the histogram's rounding.
	bounds, within []int64
	_              [8]byte // to 128 bytes
}

// watch registers a bound (ns) whose exact count of values within it is
// kept, and returns its index. Call before the first add.
func (d *dist) watch(bound int64) int {
	d.bounds = append(d.bounds, bound)
	d.within = append(d.within, 0)
	d.nbounds = int32(len(d.bounds))
	return len(d.bounds) - 1
}

// count adds count values of ns to the bounds' counts (watch).
//
//go:noinline
func (d *dist) count(ns, count int64) {
	for i, b := range d.bounds {
		if ns <= b {
			d.within[i] += count
		}
	}
}

// newDist returns an empty dist.
func newDist() dist {
	return dist{min: math.MaxInt64, npend: pendCap, narrow: new([histLen]uint32), spillAt: spillEvery}
}

// histIndex is HdrHistogram's counts index of us >= 0 in the shared
// geometry (unit 1 us, 2^histSubBucketBits sub-buckets): bucket b holds
// the values whose bit length is at most histSubBucketBits+b, in steps of
// 2^b, and its upper half follows the previous bucket's in the array.
func histIndex(us int64) int {
	const half = 1 << (histSubBucketBits - 1)
	b := bits.Len64(uint64(us)|(1<<histSubBucketBits-1)) - histSubBucketBits
	return (b+1)*half + int(us>>b) - half
}

// histLen is the length of a dist's counts arrays: one past the index of
// the highest trackable value (toUs caps every value at it).
const histLen = 34957 // histIndex(histHighUs) + 1 (TestHistLen)

// pendCap is how many single values a dist notes before adding them to
// its counts: the more, the more of them share each line of the counts a
// batch touches (the line is fetched once per batch), for 2 bytes each.
const pendCap = 16384

// spillEvery is how many values a dist records before its 32-bit counts
// are spilled into its 64-bit ones: flush checks before every batch, so
// no count gets past spillEvery+pendCap < 2^32.
const spillEvery = math.MaxUint32 / 2

// flush adds the values noted in pend to the counts (and makes pend on
// the first value).
//
//go:noinline
func (d *dist) flush() {
	if d.pend == nil {
		d.pend, d.npend = new([pendCap]uint16), 0
		return
	}
	if d.n > d.spillAt {
		d.spill()
	}
	for _, i := range d.pend[:d.npend] {
		d.narrow[i]++
	}
	d.npend = 0
}

// spill adds narrow to wide and empties it, for another spillEvery
// values.
func (d *dist) spill() {
	if d.wide == nil {
		d.wide = new([histLen]int64)
	}
	for i, c := range d.narrow[:d.top()] {
		d.wide[i] += int64(c)
		d.narrow[i] = 0
	}
	d.spillAt = d.n + spillEvery
}

// top is one past the highest counts index a value reached.
func (d *dist) top() int {
	if d.n == 0 {
		return 0
	}
	return histIndex(toUs(d.max)) + 1
}

// clone returns a copy of d without its bounds.
func (d *dist) clone() dist {
	c := dist{n: d.n, sum: d.sum, min: d.min, max: d.max, npend: d.npend, spillAt: d.spillAt, narrow: new([histLen]uint32)}
	top := d.top()
	copy(c.narrow[:top], d.narrow[:top])
	if d.pend != nil {
		c.pend = new([pendCap]uint16)
		*c.pend = *d.pend
	}
	if d.wide != nil {
		c.wide = new([histLen]int64)
		copy(c.wide[:top], d.wide[:top])
	}
	return c
}

// add records one non-negative value in ns.
func (d *dist) add(ns int64) {
	if ns < 0 {
		return
	}
	d.min = min(d.min, ns)
	if ns > d.max {
		d.max = ns
	}
	d.n++
	d.sum += ns
	if d.nbounds > 0 {
		d.count(ns, 1)
	}
	j := uint(d.npend)
	if j >= pendCap { // full, or not made yet
		d.flush()
		j = 0
	}
	d.pend[j] = uint16(histIndex(toUs(ns)))
	d.npend = int32(j) + 1
}

// addN records count copies of one non-negative value in ns.
func (d *dist) addN(ns, count int64) {
	if ns < 0 || count <= 0 {
		return
	}
	d.min = min(d.min, ns)
	if ns > d.max {
		d.max = ns
	}
	d.n += count
	d.sum += ns * count
	if d.nbounds > 0 {
		d.count(ns, count)
	}
	i := histIndex(toUs(ns))
	if d.n > d.spillAt {
		d.spillN(i, count)
		return
	}
	d.narrow[i] += uint32(count) // count <= spillEvery: d.n would pass spillAt
}

// spillN is addN's count of count values at index i when narrow must
// spill first.
//
//go:noinline
func (d *dist) spillN(i int, count int64) {
	d.spill()
	d.wide[i] += count
}

// hist returns the histogram of the values recorded.
func (d *dist) hist() *hdrhistogram.Histogram {
	if d.pend != nil {
		d.flush()
	}
	counts := make([]int64, d.top())
	if d.wide != nil {
		copy(counts, d.wide[:])
	}
	for i := range counts {
		counts[i] += int64(d.narrow[i])
	}
	return hdrhistogram.Import(&hdrhistogram.Snapshot{
		LowestTrackableValue: histLowUs, HighestTrackableValue: histHighUs, SignificantFigures: histDigits, Counts: counts})
}

// toUs converts a non-negative ns value to the histogram's unit, rounded
// and capped at the highest trackable value.
func toUs(ns int64) int64 {
	return int64(min(uint64(ns+500)/1000, histHighUs))
}

// stat returns the distribution in milliseconds. Percentiles are the
// midpoints of the histogram buckets holding HdrHistogram's nearest-rank
// value (within 0.05 % relative plus the 1 us unit) clamped to the exact
// [min, max], or the exact min or max when the value falls in their bucket;
// mean, min and max are exact (mean rounded to the ns).
func (d *dist) stat() Stat {
	if d.n == 0 {
		return Stat{}
	}
	lo, hi := float64(d.min)/1e6, float64(d.max)/1e6
	minUs, maxUs := toUs(d.min), toUs(d.max)
	h := d.hist()
	q := func(p float64) float64 {
		v := h.ValueAtQuantile(p)
		switch {
		case h.ValuesAreEquivalent(v, maxUs):
			return hi // the bucket of the largest sample: use it exactly
		case h.ValuesAreEquivalent(v, minUs):
			return lo
		}
		return min(max(float64(midEquivalent(v))/1e3, lo), hi)
	}
	return Stat{
		Count: d.n,
		Mean:  math.Round(float64(d.sum)/float64(d.n)) / 1e6,
		Min:   lo,
		P50:   q(50),
		P90:   q(90),
		P95:   q(95),
		P99:   q(99),
		Max:   hi,
	}
}

// Summary accumulates run-level metrics from a stream of records without
// retaining them. Latency distributions (TTFT, TPOT, E2E, queue delay and
// the P/D metrics) cover finished requests only, as vLLM's benchmark does;
// the P/D metrics further only requests with Handoff() true. ITL covers
// every gap passed to AddITL. Input and cached token totals count finished
// requests; the output token total counts the tokens generated by every
// request (a request cut off by a run limit streamed its tokens too, and
// their gaps are in ITL); preemptions, re-prefills and retries are
// summed over all requests. Not safe for concurrent use.
type Summary struct {
	// Requests by the tier their latest loaded prefix came from, and
	// their summed load time (index 0 unused).
	tierReqs, tierLoadNs [3]int64
	warmupSeen           int64 // (see SetWarmup)
	// The dists, each 128 bytes, start 56 bytes in: a Summary is larger
	// than 512 bytes and holds pointers, so the allocator puts it 8 bytes
	// past the start of a slot of a size class that is a multiple of 128
	// bytes, and their first 64 bytes, all add and addN read, then each
	// fill one cache line (TestDistLayout).
	ttft, tpot, itl, e2e, queue dist
	handoff, capacity, transfer dist
	// Client-side latencies (SetClientSide): the engine-side TTFT and
	// TPOT kept beside them.
	engTTFT, engTPOT dist
	// What Add reads of the rest, together (three lines).
	warmup                    int64 // SetWarmup: ids below warmup are excluded
	client                    bool
	total, finished           int64
	inputTokens, outputTokens int64
	cachedTokens              int64
	preemptions, reprefills   int64
	retries                   int64
	slo                       SLO
	sloMet                    int64
	prio                      byPriority // its hot fields first
	rejected, truncated       int64
	failed                    int64
	failReasons               *reasonTally
	rejectReasons             *reasonTally
	// Speculative decoding (AddSpec).
	spec                                 SpecResult
	specEmitted, specDraftNs, specStepNs int64
	specOn                               bool
	targets                              []watchedTarget // SetTargets
}

// SetClientSide says that the records' times are client-side (a front
// end is simulated): TTFT, TPOT, ITL and E2E are then the client's, and
// the engine-side TTFT and TPOT are summarised too. Call before Add.
func (s *Summary) SetClientSide() {
	s.client = true
	s.engTTFT, s.engTPOT = newDist(), newDist()
}

// SetWarmup excludes the requests with ids below n (the benchmark
// client's warm-up requests) from every count and statistic; Result
// counts them in WarmupRequests. Call before Add.
func (s *Summary) SetWarmup(n int64) { s.warmup = n }

// NewSummary returns an empty summary.
func NewSummary() *Summary {
	return &Summary{
		ttft: newDist(), tpot: newDist(), itl: newDist(), e2e: newDist(),
		queue: newDist(), handoff: newDist(), capacity: newDist(),
		transfer:      newDist(),
		failReasons:   newReasonTally(),
		rejectReasons: newReasonTally(),
	}
}

// Add accounts for one request's final record. It does not keep r.
func (s *Summary) Add(r *Record) {
	if r.ID < s.warmup {
		s.warmupSeen++
		return
	}
	s.total++
	s.prio.add(r, s)
	s.outputTokens += int64(r.Generated)
	s.preemptions += int64(r.Preemptions)
	s.reprefills += int64(r.Reprefills)
	s.retries += int64(r.Retries)
	switch r.Outcome {
	case Finished:
		s.finished++
	case Rejected:
		s.rejected++
		s.rejectReasons.add(r.Reason)
		return
	case Truncated:
		s.truncated++
		return
	default:
		s.failed++
		if r.Outcome == Failed {
			s.failReasons.add(r.Reason)
		} else {
			s.failReasons.add("unknown outcome")
		}
		return
	}
	s.inputTokens += int64(r.InputTokens)
	s.cachedTokens += int64(r.CachedTokens)
	if t := int(r.PrefixTier); t > 0 && t < len(s.tierReqs) {
		s.tierReqs[t]++
		s.tierLoadNs[t] += r.TierLoadNs
	}
	s.ttft.add(r.TTFT())
	s.tpot.add(r.TPOT())
	if s.client {
		s.engTTFT.add(r.EngineTTFT())
		s.engTPOT.add(r.EngineTPOT())
	}
	s.e2e.add(r.E2E())
	s.queue.add(r.QueueDelay())
	if r.Handoff() {
		s.handoff.add(r.HandoffWait)
		s.capacity.add(r.CapacityWait)
		s.transfer.add(r.TransferTime())
	}
	if s.slo.set() && s.slo.met(r) {
		s.sloMet++
	}
}

// AddTruncated accounts for n requests that never arrived and have no
// record (the unread rest of a generated workload at a run limit).
func (s *Summary) AddTruncated(n int64) {
	s.total += n
	s.truncated += n
}

// AddITL records one inter-token latency (gap between consecutive output
// tokens of a request, ns) as measured by the engine.
func (s *Summary) AddITL(ns int64) { s.itl.add(ns) }

// AddITLs records count equal inter-token latencies of ns each, as count
// calls of AddITL would.
func (s *Summary) AddITLs(ns, count int64) { s.itl.addN(ns, count) }

// Result is the run summary as a plain value. Latencies are milliseconds,
// rates are per simulated second. It marshals to JSON without NaN.
type Result struct {
	// Scenario says what was simulated (model, instance layout, hardware,
	// KV capacity, predictor and calibration, workload, seed); the caller
	// sets it, and Simulated with the same as text lines.
	Scenario  any      `json:"scenario,omitempty"`
	Simulated []string `json:"-"`

	RequestsTotal int64 `json:"requests_total"`
	Finished      int64 `json:"finished"`
	Rejected      int64 `json:"rejected"`
	Failed        int64 `json:"failed"`
	// Truncated counts the requests that never arrived because a run
	// limit ended the run (see Limit).
	Truncated     int64   `json:"truncated"`
	SimTimeS      float64 `json:"sim_time_s"`
	ThroughputRPS float64 `json:"throughput_rps"`
	InputTokens   int64   `json:"input_tokens"`
	OutputTokens  int64   `json:"output_tokens"`
	CachedTokens  int64   `json:"cached_tokens"`
	InputTokS     float64 `json:"input_tok_s"`
	OutputTokS    float64 `json:"output_tok_s"`
	TTFT          Stat    `json:"ttft_ms"`
	TPOT          Stat    `json:"tpot_ms"`
	ITL           Stat    `json:"itl_ms"`
	E2E           Stat    `json:"e2e_ms"`
	QueueDelay    Stat    `json:"queue_delay_ms"`
	HandoffWait   Stat    `json:"handoff_wait_ms"`
	CapacityWait  Stat    `json:"decode_capacity_wait_ms"`
	Transfer      Stat    `json:"transfer_ms"`
	Preemptions   int64   `json:"preemptions"`
	Reprefills    int64   `json:"reprefills"`
	// Retries counts handoff retries: a prefilled request moved to
	// another decode instance after waiting handoff.retry_after_s in one
	// decode queue (requests re-sent after an instance loss are counted
	// in Faults).
	Retries int64 `json:"retries"`
	// FailureReasons and RejectionReasons count reasons by class (the
	// reason with its numbers replaced by N); the examples give the first
	// reason of each class that has numbers.
	FailureReasons    map[string]int64  `json:"failure_reasons"`
	RejectionReasons  map[string]int64  `json:"rejection_reasons"`
	FailureExamples   map[string]string `json:"failure_examples,omitempty"`
	RejectionExamples map[string]string `json:"rejection_examples,omitempty"`
	SLO               *SLOResult        `json:"slo,omitempty"`
	// PinnedKV is, per prefill instance of a disaggregated run, the KV
	// pinned for handoffs.
	PinnedKV []PinnedKV `json:"pinned_kv,omitempty"`
	// KVTiers is, per tier below the GPU (host, then disk), what the
	// tiers held and moved (runs with kv_tiers only).
	KVTiers []TierResult `json:"kv_tiers,omitempty"`
	// OffloadDeferred is the number of pinned-KV offloads that waited for
	// room under handoff.offload_pinned_max_gb.
	OffloadDeferred int64 `json:"offload_deferred,omitempty"`
	// OffloadPeakBytes is the most handoff KV one node's host memory held
	// at once (handoff.offload_pinned_after_s; 0 when nothing was
	// offloaded).
	OffloadPeakBytes int64 `json:"offload_peak_bytes,omitempty"`
	// Faults summarises injected faults and autoscaling (nil: none).
	Faults *FaultResult `json:"faults,omitempty"`
	// Swap summarises swap preemption (engine.preemption_mode swap; nil
	// when off).
	Swap *SwapResult `json:"swap,omitempty"`
	// Stopped explains why the run stopped early (the eager handoff
	// policy when a decode instance was out of memory).
	Stopped string `json:"stopped,omitempty"`
	// Limit says which run limit ended the run, if one did: requests in
	// flight then failed with reason "limit", the rest are Truncated.
	Limit string `json:"limit,omitempty"`
	// Speculative summarises speculative decoding (nil when off).
	Speculative *SpecResult `json:"speculative,omitempty"`
	// LatencySide says where TTFT, TPOT, ITL and E2E are measured:
	// "client" (a front end was simulated: from the client's send to the
	// chunks it received) or "engine" (from the request reaching the
	// engine to the tokens leaving it).
	LatencySide string `json:"latency_side"`
	// EngineTTFT and EngineTPOT are the engine-side statistics of a run
	// with client-side latencies (nil otherwise: TTFT and TPOT are then
	// engine-side themselves).
	EngineTTFT *Stat `json:"engine_ttft_ms,omitempty"`
	EngineTPOT *Stat `json:"engine_tpot_ms,omitempty"`
	// ThroughputBase says what the throughputs are divided by: the whole
	// run from its start (or the end of the warm-up) to the last
	// completion, drain included, as vLLM's benchmark does.
	ThroughputBase string `json:"throughput_time_base"`
	// Steady is the steady-state window of a closed-loop run, where all
	// its clients are busy (nil for an open-loop run or when the window
	// never opened).
	Steady *SteadyResult `json:"steady_state,omitempty"`
	// WarmupRequests counts the warm-up requests left out of every other
	// count and statistic (workload.warmup_requests); SimTimeS is then the
	// time from the end of the warm-up.
	WarmupRequests int64 `json:"warmup_requests,omitempty"`
	// KernelTables says, per op a per-op kernel database times
	// (predictor.kind perfdb), how many step evaluations read its table
	// and how many fell back to the roofline (empty for other predictors).
	KernelTables []TableUse `json:"kernel_tables,omitempty"`
	// Priorities is, per request priority, the requests' counts and the
	// finished ones' latencies, by increasing priority value (nil when
	// every request had priority 0).
	Priorities []PriorityResult `json:"priorities,omitempty"`
}

// SteadyResult is a closed-loop run's steady state: the window from the
// moment all Clients were first busy to the first moment one of them had
// nothing left to send (seconds from the start of the run, or of the
// measured run after a warm-up), and the rates over it.
type SteadyResult struct {
	Clients       int     `json:"clients"`
	StartS        float64 `json:"start_s"`
	EndS          float64 `json:"end_s"`
	Finished      int64   `json:"finished"`
	OutputTokens  int64   `json:"output_tokens"`
	ThroughputRPS float64 `json:"throughput_rps"`
	OutputTokS    float64 `json:"output_tok_s"`
}

// TableUse is one op's use of the measured kernel tables over a run.
type TableUse struct {
	Op string `json:"op"`
	// Evals counts the steps (and collectives) in which the op ran;
	// Fallbacks those timed by the roofline because the shape lies
	// outside the op's table.
	Evals     int64 `json:"evaluations"`
	Fallbacks int64 `json:"fallbacks"`
}

// SwapResult is what swap preemption (vLLM v0's legacy mode) did over a
// run, summed over instances.
type SwapResult struct {
	// Swap-out and swap-in copies started, and preemptions that
	// recomputed because the swap space was full.
	SwapOuts  int64 `json:"swap_outs"`
	SwapIns   int64 `json:"swap_ins"`
	Fallbacks int64 `json:"recompute_fallbacks"`
	// Bytes copied GPU -> host and host -> GPU.
	BytesOut int64 `json:"bytes_out"`
	BytesIn  int64 `json:"bytes_in"`
	// Mean duration of one finished copy, ms (copies share PCIe links).
	OutMeanMs float64 `json:"swap_out_mean_ms"`
	InMeanMs  float64 `json:"swap_in_mean_ms"`
	// Most swap-space blocks any instance held at once, and the swap
	// space of the largest instance, blocks.
	PeakBlocks     int `json:"peak_blocks"`
	CapacityBlocks int `json:"capacity_blocks"`
}

// TierResult is what one KV tier below the GPU did over a run, summed
// over nodes.
type TierResult struct {
	Tier string `json:"tier"` // host or disk
	// Requests whose latest loaded prefix came from this tier, and the
	// mean duration of one load from it (ms; loads share their links).
	Requests   int64   `json:"requests"`
	LoadMeanMs float64 `json:"load_mean_ms"`
	// Prefix hits served by loads from this tier.
	HitBlocks int64 `json:"hit_blocks"`
	HitTokens int64 `json:"hit_tokens"`
	Loads     int64 `json:"loads"`
	// Bytes copied out of and into the tier.
	BytesRead    int64 `json:"bytes_read"`
	BytesWritten int64 `json:"bytes_written"`
	// Chunks written, evicted to make room, refused (tier full of chunks
	// in use), held at the end, and the capacity.
	ChunksStored   int64 `json:"chunks_stored"`
	ChunksEvicted  int64 `json:"chunks_evicted"`
	ChunksDropped  int64 `json:"chunks_dropped"`
	ChunksHeld     int64 `json:"chunks_held"`
	ChunksCapacity int64 `json:"chunks_capacity"`
}

// TierRequests returns how many ended requests had their latest loaded
// prefix from tier t (1 host, 2 disk) and their summed load time in ns
// (over all their loads).
func (s *Summary) TierRequests(t int) (n, loadNs int64) {
	if t < 0 || t >= len(s.tierReqs) {
		return 0, 0
	}
	return s.tierReqs[t], s.tierLoadNs[t]
}

// PinnedKV is the KV a prefill instance held pinned for handoffs, in
// blocks: the peak, and the mean over the run.
type PinnedKV struct {
	Instance   int     `json:"instance"`
	PeakBlocks int     `json:"peak_blocks"`
	MeanBlocks float64 `json:"mean_blocks"`
}

// Finish returns the summary for a run that lasted simTimeNs simulated ns
// (rates are 0 when it is not positive). The Summary stays usable; the maps
// in the Result are copies.
func (s *Summary) Finish(simTimeNs int64) Result {
	secs := float64(max(simTimeNs, 0)) / 1e9
	rate := func(n int64) float64 {
		if secs <= 0 {
			return 0
		}
		return float64(n) / secs
	}
	res := Result{
		RequestsTotal:     s.total,
		Finished:          s.finished,
		Rejected:          s.rejected,
		Failed:            s.failed,
		Truncated:         s.truncated,
		SimTimeS:          secs,
		ThroughputRPS:     rate(s.finished),
		InputTokens:       s.inputTokens,
		OutputTokens:      s.outputTokens,
		CachedTokens:      s.cachedTokens,
		InputTokS:         rate(s.inputTokens),
		OutputTokS:        rate(s.outputTokens),
		TTFT:              s.ttft.stat(),
		TPOT:              s.tpot.stat(),
		ITL:               s.itl.stat(),
		E2E:               s.e2e.stat(),
		QueueDelay:        s.queue.stat(),
		HandoffWait:       s.handoff.stat(),
		CapacityWait:      s.capacity.stat(),
		Transfer:          s.transfer.stat(),
		Preemptions:       s.preemptions,
		Reprefills:        s.reprefills,
		Retries:           s.retries,
		FailureReasons:    s.failReasons.counts(),
		RejectionReasons:  s.rejectReasons.counts(),
		FailureExamples:   s.failReasons.examples(),
		RejectionExamples: s.rejectReasons.examples(),
		Speculative:       s.specResult(),
		LatencySide:       "engine",
		ThroughputBase:    "run",
		WarmupRequests:    s.warmupSeen,
		Priorities:        s.prio.results(),
	}
	if s.client {
		res.LatencySide = "client"
		et, ep := s.engTTFT.stat(), s.engTPOT.stat()
		res.EngineTTFT, res.EngineTPOT = &et, &ep
	}
	if s.slo.set() {
		met, goodput, attainment := s.sloMet, rate(s.sloMet), 0.0
		if s.total > 0 {
			attainment = float64(s.sloMet) / float64(s.total)
		}
		res.SLO = &SLOResult{
			TTFTMs:     float64(s.slo.TTFT) / 1e6,
			TPOTMs:     float64(s.slo.TPOT) / 1e6,
			E2EMs:      float64(s.slo.E2E) / 1e6,
			Met:        &met,
			Attainment: &attainment,
			GoodputRPS: &goodput,
		}
	}
	if len(s.targets) > 0 {
		if res.SLO == nil {
			res.SLO = &SLOResult{}
		}
		res.SLO.Targets = s.targetResults(&res)
	}
	return res
}
