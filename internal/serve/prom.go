package serve

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/metrics"
)

// Histogram buckets as vLLM's v1 Prometheus logger defines them
// (vllm/v1/metrics/loggers.py), so that dashboards' quantiles match.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets  = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	reqBuckets  = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// buckets125 is vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, ... up
// to max.
func buckets125(max int) []float64 {
	var out []float64
	for exp := 1.0; ; exp *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := m * exp
			if v > float64(max) {
				return out
			}
			out = append(out, v)
		}
	}
}

// Metrics are the Prometheus metrics of a served simulation, under
// vLLM's names, types and labels (model_name, engine = instance index).
// vLLM's Python client appends _total to counter names; the names here
// carry it, so the exposition is the same.
// Times are simulated seconds (wall seconds at --speed 1). The driver
// updates them; the HTTP handler of /metrics only gathers.
type Metrics struct {
	Registry *prometheus.Registry
	model    string
	engines  []string // label value of each instance

	running, waiting, kvUsage       *prometheus.GaugeVec
	prefixQueries, prefixHits       *prometheus.CounterVec
	preemptions, promptTok, genTok  *prometheus.CounterVec
	success                         *prometheus.CounterVec
	ttft, itl, tpot, e2e, queue     *prometheus.HistogramVec
	prefill, decode, inference      *prometheus.HistogramVec
	promptHist, genHist, maxTokHist *prometheus.HistogramVec
	lag                             prometheus.Histogram
	cacheInfo                       *prometheus.GaugeVec
}

// CacheConfig sets instance i's vllm:cache_config_info series (value 1, the
// configuration in its labels), as vLLM exposes its cache configuration.
func (m *Metrics) CacheConfig(i, blockSize, blocks int, prefixCaching bool) {
	m.cacheInfo.WithLabelValues(m.engines[i], strconv.Itoa(blockSize), strconv.Itoa(blocks), strconv.FormatBool(prefixCaching)).Set(1)
}

// NewMetrics registers the metrics of instances instances serving model,
// whose longest request is maxModelLen tokens.
func NewMetrics(model string, instances, maxModelLen int) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{Registry: reg, model: model}
	for i := range instances {
		m.engines = append(m.engines, strconv.Itoa(i))
	}
	labels := []string{"model_name", "engine"}
	gauge := func(name, help string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
		reg.MustRegister(g)
		return g
	}
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(labels[:2:2], extra...))
		reg.MustRegister(c)
		return c
	}
	hist := func(name, help string, b []float64) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: b}, labels)
		reg.MustRegister(h)
		return h
	}
	m.running = gauge("vllm:num_requests_running", "Requests in the running batch set.")
	m.waiting = gauge("vllm:num_requests_waiting", "Requests queued for their first scheduling (and P/D decode admission).")
	m.kvUsage = gauge("vllm:kv_cache_usage_perc", "Fraction of KV-cache blocks in use (1: all).")
	m.prefixQueries = counter("vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.")
	m.prefixHits = counter("vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.")
	m.preemptions = counter("vllm:num_preemptions_total", "Preemptions.")
	m.promptTok = counter("vllm:prompt_tokens_total", "Prompt tokens computed.")
	m.genTok = counter("vllm:generation_tokens_total", "Output tokens emitted.")
	m.success = counter("vllm:request_success_total", "Ended requests by finish reason.", "finished_reason")
	m.ttft = hist("vllm:time_to_first_token_seconds", "Time to first token, seconds.", ttftBuckets)
	m.itl = hist("vllm:inter_token_latency_seconds", "Gap between consecutive output tokens, seconds.", itlBuckets)
	m.tpot = hist("vllm:request_time_per_output_token_seconds", "Mean time per output token after the first, per request, seconds.", itlBuckets)
	m.e2e = hist("vllm:e2e_request_latency_seconds", "Arrival to last token, seconds.", reqBuckets)
	m.queue = hist("vllm:request_queue_time_seconds", "Queued to first scheduled, seconds.", reqBuckets)
	m.prefill = hist("vllm:request_prefill_time_seconds", "First scheduled to first token, seconds.", reqBuckets)
	m.decode = hist("vllm:request_decode_time_seconds", "First token to last token, seconds.", reqBuckets)
	m.inference = hist("vllm:request_inference_time_seconds", "First scheduled to last token, seconds.", reqBuckets)
	tokB := buckets125(max(maxModelLen, 1))
	m.promptHist = hist("vllm:request_prompt_tokens", "Prompt tokens of each request.", tokB)
	m.genHist = hist("vllm:request_generation_tokens", "Output tokens of each request.", tokB)
	m.maxTokHist = hist("vllm:request_params_max_tokens", "The max_tokens of each request.", tokB)
	m.lag = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "servesim:driver_lag_seconds",
		Help:    "Wall-clock delay between an event's due time and its processing by the real-time driver.",
		Buckets: []float64{0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1}})
	reg.MustRegister(m.lag)
	m.cacheInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:cache_config_info", Help: "The KV cache configuration (in the labels; the value is 1)."},
		[]string{"engine", "block_size", "num_gpu_blocks", "enable_prefix_caching"})
	reg.MustRegister(m.cacheInfo)
	// Every series exists from the start, as in vLLM.
	for _, e := range m.engines {
		for _, v := range []*prometheus.CounterVec{m.prefixQueries, m.prefixHits, m.preemptions, m.promptTok, m.genTok} {
			v.WithLabelValues(m.model, e)
		}
		for _, r := range []string{"stop", "length", "abort"} {
			m.success.WithLabelValues(m.model, e, r)
		}
		for _, g := range []*prometheus.GaugeVec{m.running, m.waiting, m.kvUsage} {
			g.WithLabelValues(m.model, e)
		}
	}
	return m
}

// sample sets the gauges from the instances' state.
func (m *Metrics) sample(sim *cluster.Sim) {
	for i, e := range m.engines {
		st := sim.State(i)
		m.running.WithLabelValues(m.model, e).Set(float64(st.Running))
		m.waiting.WithLabelValues(m.model, e).Set(float64(st.Waiting + st.HandoffQueue))
		u := 0.0
		if st.KVCapacity > 0 {
			u = float64(st.KVUsed) / float64(st.KVCapacity)
		}
		m.kvUsage.WithLabelValues(m.model, e).Set(u)
	}
}

// step counts a finished engine step.
func (m *Metrics) step(inst int, r *engine.StepResult) {
	e := m.engines[inst]
	if r.GenTokens > 0 {
		m.genTok.WithLabelValues(m.model, e).Add(float64(r.GenTokens))
	}
	if r.PromptTokens > 0 {
		m.promptTok.WithLabelValues(m.model, e).Add(float64(r.PromptTokens))
	}
	if r.Preempted > 0 {
		m.preemptions.WithLabelValues(m.model, e).Add(float64(r.Preempted))
	}
	if len(r.ITL) > 0 {
		h := m.itl.WithLabelValues(m.model, e)
		for _, g := range r.ITL {
			for range g.Count {
				h.Observe(float64(g.NS) / 1e9)
			}
		}
	}
}

// firstToken observes a TTFT on instance inst when the token is emitted.
func (m *Metrics) firstToken(inst int, ns int64) {
	m.ttft.WithLabelValues(m.model, m.engines[inst]).Observe(float64(ns) / 1e9)
}

// terminal accounts for a request's end on the instance that produced its
// output (or computed its prompt, or instance 0 if none).
func (m *Metrics) terminal(rec *metrics.Record) {
	inst := rec.DecodeInstance
	if inst < 0 {
		inst = max(rec.PrefillInstance, 0)
	}
	e := m.engines[inst]
	reason := "length" // the simulated model never samples EOS: it stops at max_tokens
	if rec.Outcome != metrics.Finished {
		reason = "abort"
	}
	m.success.WithLabelValues(m.model, e, reason).Inc()
	m.prefixQueries.WithLabelValues(m.model, e).Add(float64(rec.InputTokens))
	m.prefixHits.WithLabelValues(m.model, e).Add(float64(rec.CachedTokens))
	m.promptHist.WithLabelValues(m.model, e).Observe(float64(rec.InputTokens))
	m.genHist.WithLabelValues(m.model, e).Observe(float64(rec.Generated))
	m.maxTokHist.WithLabelValues(m.model, e).Observe(float64(rec.OutputTokens))
	sec := func(ns int64) float64 { return float64(ns) / 1e9 }
	if rec.FirstToken >= 0 {
		if rec.Generated == 1 && rec.Outcome == metrics.Finished {
			// A one-token request ends in the step of its first token,
			// before any step shows it running: its TTFT is observed here.
			m.ttft.WithLabelValues(m.model, e).Observe(sec(rec.TTFT()))
		}
		if rec.Scheduled >= 0 {
			m.prefill.WithLabelValues(m.model, e).Observe(sec(rec.FirstToken - rec.Scheduled))
			m.decode.WithLabelValues(m.model, e).Observe(sec(rec.LastToken - rec.FirstToken))
			m.inference.WithLabelValues(m.model, e).Observe(sec(rec.LastToken - rec.Scheduled))
		}
	}
	if rec.Scheduled >= 0 && rec.Queued >= 0 {
		m.queue.WithLabelValues(m.model, e).Observe(sec(rec.Scheduled - rec.Queued))
	}
	if tpot := rec.TPOT(); tpot >= 0 {
		m.tpot.WithLabelValues(m.model, e).Observe(sec(tpot))
	}
	if rec.Outcome == metrics.Finished {
		m.e2e.WithLabelValues(m.model, e).Observe(sec(rec.E2E()))
	}
}

// instanceGatherer gathers only the series of one instance (and those
// without an engine label): the /metrics of a port that stands for one
// instance, as a vLLM server of that instance would show.
type instanceGatherer struct {
	g      prometheus.Gatherer
	engine string
}

// Gather implements prometheus.Gatherer.
func (f instanceGatherer) Gather() ([]*dto.MetricFamily, error) {
	fams, err := f.g.Gather()
	if err != nil {
		return nil, err
	}
	out := fams[:0]
	for _, fam := range fams {
		kept := fam.Metric[:0]
		for _, mt := range fam.Metric {
			keep := true
			for _, l := range mt.Label {
				if l.GetName() == "engine" && l.GetValue() != f.engine {
					keep = false
				}
			}
			if keep {
				kept = append(kept, mt)
			}
		}
		fam.Metric = kept
		if len(kept) > 0 { // an empty family is an exposition error
			out = append(out, fam)
		}
	}
	return out, nil
}
