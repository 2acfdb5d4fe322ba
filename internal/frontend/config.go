package frontend

import "fmt"

// Config is the scenario's `frontend:` section. A scenario that has one
// models a served endpoint; absent, requests reach the engines at their
// arrival times and every latency is engine-side. Zero-valued pointer
// fields take vLLM 0.19's defaults (Resolved); the costs are per API
// server process and are documented, with their sources, in
// docs/client.md.
type Config struct {
	// APIServerCount is vLLM's --api-server-count: API server processes
	// sharing the requests (round-robin by request). Default 1.
	APIServerCount int `yaml:"api_server_count" json:"api_server_count"`
	// StreamInterval is vLLM's --stream-interval: a request's output is
	// sent to the client at its first token, every StreamInterval tokens
	// and at its end. Default 1 (every step's tokens).
	StreamInterval int `yaml:"stream_interval" json:"stream_interval"`
	// RequestUs is the API server CPU time to accept one request: HTTP
	// parse, request validation, prompt rendering, output collector.
	RequestUs *float64 `yaml:"request_us" json:"request_us,omitempty"`
	// TokenizeNsPerToken is the time to tokenise one prompt token (off
	// the API server's event loop, on its one tokenizer thread).
	TokenizeNsPerToken *float64 `yaml:"tokenize_ns_per_token" json:"tokenize_ns_per_token,omitempty"`
	// TokenizeBatchWaitUs is how long the API server's tokenizer batcher
	// waits, after taking a prompt, for more prompts to tokenise with it
	// (vLLM's AsyncMicrobatchTokenizer, batch_wait_timeout_s = 2 ms).
	TokenizeBatchWaitUs *float64 `yaml:"tokenize_batch_wait_us" json:"tokenize_batch_wait_us,omitempty"`
	// TokenizeBatchMax is the most prompts one tokenizer batch takes
	// (AsyncMicrobatchTokenizer's max_batch_size, 32). Default 32.
	TokenizeBatchMax int `yaml:"tokenize_batch_max" json:"tokenize_batch_max,omitempty"`
	// EnqueueUs is the API server CPU time to build the engine-core
	// request, encode it (msgpack) and send it (ZMQ).
	EnqueueUs *float64 `yaml:"enqueue_us" json:"enqueue_us,omitempty"`
	// HopUs is the latency of the hop between the API server and the
	// engine-core process, each way (ZMQ over IPC plus decoding on the
	// receiving side's I/O thread); it does not use the API server's CPU.
	HopUs *float64 `yaml:"hop_us" json:"hop_us,omitempty"`
	// StepUs is the API server CPU time per engine step whose outputs it
	// receives: reading and decoding the step's outputs and its stats.
	StepUs *float64 `yaml:"step_us" json:"step_us,omitempty"`
	// OutputUs is the API server CPU time per request per step with new
	// tokens: incremental detokenisation and the request's output object.
	OutputUs *float64 `yaml:"output_us" json:"output_us,omitempty"`
	// ChunkUs is the API server CPU time per streamed chunk: the
	// response's JSON and the server-sent-events write.
	ChunkUs *float64 `yaml:"chunk_us" json:"chunk_us,omitempty"`
	// NetworkUs is the one-way time between client and API server.
	NetworkUs *float64 `yaml:"network_us" json:"network_us,omitempty"`
	// JitterUs is the median of the seeded lognormal delay added to each
	// request's way in and to its first and last chunk's way out (the
	// drift that breaks the lockstep of fixed-length closed-loop clients);
	// 0 switches drift off.
	JitterUs *float64 `yaml:"jitter_us" json:"jitter_us,omitempty"`
	// JitterSigma is the lognormal's sigma (the spread of ln delay).
	JitterSigma *float64 `yaml:"jitter_sigma" json:"jitter_sigma,omitempty"`
}

// Defaults of vLLM 0.19's OpenAI API server; docs/client.md gives the
// code path and the source of each.
const (
	DefaultRequestUs          = 300
	DefaultTokenizeNsPerToken = 1100
	DefaultTokenizeBatchWait  = 2000
	DefaultTokenizeBatchMax   = 32
	DefaultEnqueueUs          = 50
	DefaultHopUs              = 50
	DefaultStepUs             = 100
	DefaultOutputUs           = 15
	DefaultChunkUs            = 25
	DefaultNetworkUs          = 50
	DefaultJitterUs           = 200
	DefaultJitterSigma        = 1.5
)

// MaxAPIServers bounds api_server_count; MaxStreamInterval bounds
// stream_interval; MaxCostUs bounds every time field.
const (
	MaxAPIServers     = 1024
	MaxStreamInterval = 1 << 20
	MaxTokenizeBatch  = 1 << 16
	MaxCostUs         = 1e7
)

// Resolved returns c with every default filled in.
func (c Config) Resolved() Config {
	if c.APIServerCount == 0 {
		c.APIServerCount = 1
	}
	if c.StreamInterval == 0 {
		c.StreamInterval = 1
	}
	if c.TokenizeBatchMax == 0 {
		c.TokenizeBatchMax = DefaultTokenizeBatchMax
	}
	def := func(p **float64, v float64) {
		if *p == nil {
			*p = &v
		}
	}
	def(&c.RequestUs, DefaultRequestUs)
	def(&c.TokenizeNsPerToken, DefaultTokenizeNsPerToken)
	def(&c.TokenizeBatchWaitUs, DefaultTokenizeBatchWait)
	def(&c.EnqueueUs, DefaultEnqueueUs)
	def(&c.HopUs, DefaultHopUs)
	def(&c.StepUs, DefaultStepUs)
	def(&c.OutputUs, DefaultOutputUs)
	def(&c.ChunkUs, DefaultChunkUs)
	def(&c.NetworkUs, DefaultNetworkUs)
	def(&c.JitterUs, DefaultJitterUs)
	def(&c.JitterSigma, DefaultJitterSigma)
	return c
}

// Validate reports each invalid field through bad (field path below
// "frontend", message).
func (c Config) Validate(bad func(field, format string, args ...any)) {
	if c.APIServerCount < 0 || c.APIServerCount > MaxAPIServers {
		bad("frontend.api_server_count", "must be in [1, %d] (got %d; 0 or absent means 1)", MaxAPIServers, c.APIServerCount)
	}
	if c.StreamInterval < 0 || c.StreamInterval > MaxStreamInterval {
		bad("frontend.stream_interval", "must be in [1, %d] tokens (got %d; 0 or absent means 1)", MaxStreamInterval, c.StreamInterval)
	}
	if c.TokenizeBatchMax < 0 || c.TokenizeBatchMax > MaxTokenizeBatch {
		bad("frontend.tokenize_batch_max", "must be in [1, %d] prompts (got %d; 0 or absent means %d)", MaxTokenizeBatch, c.TokenizeBatchMax, DefaultTokenizeBatchMax)
	}
	for _, f := range c.fields() {
		if f.v == nil {
			continue
		}
		if v := *f.v; !(v >= 0 && v <= f.max) { // also NaN
			bad("frontend."+f.name, "must be in [0, %g] %s (got %g)", f.max, f.unit, v)
		}
	}
}

type costField struct {
	name, unit string
	v          *float64
	max        float64
}

func (c *Config) fields() []costField {
	return []costField{
		{"request_us", "us", c.RequestUs, MaxCostUs},
		{"tokenize_ns_per_token", "ns", c.TokenizeNsPerToken, MaxCostUs},
		{"tokenize_batch_wait_us", "us", c.TokenizeBatchWaitUs, MaxCostUs},
		{"enqueue_us", "us", c.EnqueueUs, MaxCostUs},
		{"hop_us", "us", c.HopUs, MaxCostUs},
		{"step_us", "us", c.StepUs, MaxCostUs},
		{"output_us", "us", c.OutputUs, MaxCostUs},
		{"chunk_us", "us", c.ChunkUs, MaxCostUs},
		{"network_us", "us", c.NetworkUs, MaxCostUs},
		{"jitter_us", "us", c.JitterUs, MaxCostUs},
		{"jitter_sigma", "", c.JitterSigma, 4},
	}
}

// Describe is a one-line summary of the resolved configuration.
func (c Config) Describe() string {
	r := c.Resolved()
	drift := fmt.Sprintf("drift lognormal median %g us sigma %g", *r.JitterUs, *r.JitterSigma)
	if *r.JitterUs == 0 {
		drift = "no drift"
	}
	return fmt.Sprintf("front end: vLLM OpenAI server, %d API server(s), stream_interval %d, %s", r.APIServerCount, r.StreamInterval, drift)
}
