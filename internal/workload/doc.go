// Package workload produces the requests a simulation serves: it reads
// JSONL traces and measured vLLM runs, and generates synthetic workloads.
//
// # Vocabulary
//
//   - Request: one inference request (ID, Arrival in ns since the start of
//     the run, prompt and output lengths, optional token ids).
//   - Entry: what a Source yields: one plain request, or an agentic session
//     whose sub-requests run one after another. Sub-request k > 0 arrives
//     Delay ns (the tool time) after sub-request k-1 finishes; only the
//     session's first arrival is known in advance.
//   - Source: a stream of entries in non-decreasing arrival order, ending
//     with io.EOF.
//
// # Sources
//
//   - NewTraceReader streams the JSONL trace format of LLMServingSim (plain
//     and session lines, auto-detected per line). It is strict and every
//     error reads "name:line: what is wrong; how to fix" (see LineError).
//   - ReadMeasured reads a measured vLLM run's requests.jsonl into
//     MeasuredRequest values (TTFT, TPOT, E2E in seconds, vLLM benchmark
//     definitions); MeasuredSource replays them with their measured
//     arrival times.
//   - NewSynthetic generates requests from a Synthetic config (Poisson,
//     gamma or constant arrivals; fixed, uniform, normal, lognormal or
//     empirical lengths) with one seeded des.Stream per purpose.
//   - Live is fed while a simulation runs (servesim serve): its Next
//     returns ErrNotYet until the driver adds a request.
//   - Scale stretches or compresses arrivals, Take truncates, Collect reads
//     everything (small inputs only).
//
// # Contracts
//
// Sources stream: the trace reader and the generator keep O(1) state, so
// arbitrarily long workloads use flat memory. Request ids are assigned
// from 0 in order, except MeasuredSource, which keeps the measured run's
// "bench-<i>" index as the id. Sources never panic on bad input; after an
// error a trace reader keeps returning it. Nothing here reads files by
// path or uses global random state: callers open files (or assets.FS) and
// pass seeds.
package workload
