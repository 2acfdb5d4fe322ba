// Package frontend times what happens between a benchmark client and the
// engine cores of a served vLLM 0.19 endpoint (`vllm serve`, the OpenAI
// API server): the request's ingest on an API server process (HTTP parse
// and validation, building and sending the engine-core request on the
// event loop; tokenisation per prompt token beside it), the hop to the
// engine-core process and back, and
// the per-step output path (receiving the engine's outputs, incremental
// detokenisation per request, one server-sent-events chunk per request
// and stream_interval tokens). Each API server process is one CPU that
// does all of its work in order (vLLM's asyncio event loop), so at high
// concurrency ingest and output work queue behind each other and the
// front end can become the bottleneck; api_server_count processes share
// the requests.
//
// Every term, its vLLM 0.19 code path and its source are in
// docs/client.md. Time is simulated: the model keeps, per API server, the
// time its CPU is busy until (a FIFO server, Lindley's recursion), and is
// driven by the cluster's events; it reads no clock and draws its random
// numbers from one seeded stream.
//
// Drift: a closed loop of fixed-length clients would stay in lockstep
// forever in a model without noise. Real clients drift apart because
// every message between client and server takes a slightly different
// time; Config.JitterUs and JitterSigma add a seeded lognormal delay to the request's
// way in and to its first and last chunk's way out (0 switches it off).
package frontend
