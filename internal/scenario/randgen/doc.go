// Package randgen draws random, valid serving scenarios (disaggregated
// and colocated) for property tests: a scenario file (YAML, exactly as a
// user would write it for `servesim run`) and the JSONL trace it serves.
//
// The draws cover the P/D space wide rather than deep: heterogeneous decode
// pools (per-group num_gpu_blocks, max_num_seqs and tp), mixed groups next
// to prefill and decode groups, every handoff policy (pull, reserve, reject,
// push with spill and drop, eager), every decode placement, tiny KV caches,
// short leases with and without heartbeat, on_expiry reprefill and fail,
// reserved_decode_tokens headroom, skip-ahead, chunked prefill on and off,
// conditional disaggregation (local_prefill_below), agentic sessions with
// tool times, shared prompt prefixes given as token ids, the profile and the
// roofline predictors with tensor and pipeline parallelism, link
// bandwidths and latencies, KV tiers with pinned-KV offload, quantised
// weights and KV cache, speculative decoding (every method, or n-gram on
// decode only), MoE models with zipf routing and dp/ep groups of any role
// (all-to-all backends, EPLB, dual-batch overlap, groups across nodes),
// bursts of arrivals at one instant, colocated clusters (mixed groups
// only), vLLM's priority scheduling with trace priorities or a priority
// mix, client aborts, the closed loop and run limits.
//
// Draw returns a Case; Check (package randgen's property harness, see
// check.go) builds it the way the CLI does (config.Load, assemble.Build,
// runner.Run) and checks the run's contract. A Case is written to disk with
// Case.Write and read back with Load, so a failing draw becomes a
// reproducer in testdata/regressions.
package randgen
