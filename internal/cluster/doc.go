// Package cluster runs a set of serving instances against a workload: it
// owns the event queue, pulls arrivals from the workload source one at a
// time, routes each request to an instance, drives every instance's engine
// step by step, chains the sub-requests of agentic sessions, and hands every
// request's terminal record to an Observer exactly once.
//
// A simulation is made whole by New from a Config (config.go) that holds
// everything it is made of (engines, source, router, limits, DP groups, KV
// tiers, the P/D setup); Config.Validate checks it, and nothing is set on
// a Sim afterwards.
//
// In disaggregated (P/D) mode it also coordinates the prefill -> decode
// handoff (docs/handoff.md). Each handed-off request is a hand in one
// hstate, with what it holds (its KV pinned, spilled, offloaded, streaming:
// one holding value, holding.go, whose check says what each state allows);
// every state change goes through Sim.transition, which refuses
// edges not in the edge table (handoff.go) and keeps the per-instance
// counters that make a placement or admission decision O(decode
// instances). The protocols (pull, reserve, reject, push, eager) are Policy
// implementations, one per file, reaching the simulation only through
// handoffSim (tested alone on a fake, testdata/policy); decode placement (placement.go) only
// considers instances a request can ever be admitted on. Recovery paths
// (lease expiry, retry, bounded re-prefills) are in pd_recovery.go, and
// checkPD (pd_check.go), run when invariant checks are on (after every
// event, or amortised over events when many requests are in flight),
// verifies each handoff's resources against its state and the engines'
// queues and reservations against the handoffs.
//
// Data-parallel groups (dpgroup.go, Config.DPGroups) are instances whose
// ranks are engines stepping in lockstep, as vLLM runs an MoE model with
// data and expert parallelism: a group step starts on every rank at once
// (idle ranks run a one-token dummy batch), ranks pad to a common token
// count under a CUDA graph, the MoE time comes from the gathered tokens,
// and the step lasts as long as the slowest rank (docs/moe.md). vLLM's DP
// load balancer picks a group's rank for each request. A group may be a
// prefill or decode pool (its ranks hand over and receive KV as single
// instances do), may add its ranks' proposer passes (MTP), and may run a
// step as two overlapped micro-batches (DPGroup.Overlap; docs/wide-ep.md).
//
// The simulation is single-threaded and deterministic: the same scenario and
// seed give the same sequence of events. Memory stays flat in the number of
// requests: only the next arrival and the requests in the system are held,
// and a plain entry, once admitted, goes back to a source that reuses
// entries (workload.Releaser), so a long run allocates nothing per request.
// No error is discarded: scheduling errors end the run (or, for a session
// tool time that overflows the clock, fail the sub-request with the reason).
//
// Run drives a run to its end. A real-time driver (servesim serve) drives
// it in slices instead: Pull schedules the next entry of a source that may
// have none yet (workload.ErrNotYet), RunUntil processes the events due up
// to a time, NextEvent says when the next one is due, and Finish checks
// the final state; the events, and so the results, do not depend on the
// slices. AbortAt (abort.go) ends a request whose client went away, as a
// trace's abort_time_ns does: between its instance's steps, releasing its
// KV; it ends failed with AbortedReason.
//
// Faults and autoscaling (fault.go, autoscale.go; Config.Faults) take
// instances down and bring them back: a loss empties the instance's
// engines at once (engine.Reset) and every request it held is sent
// again, failed, re-placed with its pinned KV or re-prefilled, by where
// it stood (docs/faults.md); straggler windows scale a rank's step time,
// KV loads fail per kv_load_failure_policy, link windows change NIC
// bandwidth, and the autoscaler parks, cold-starts and drains instances
// of a pool. Batches of a lost engine are recognised by their id
// (engine.NextBatchID) and dropped as stale events; fault events never
// keep an otherwise finished run alive.
//
// Limits (Config.Limits) bound a run by simulated time and by events; by
// default an automatic event budget proportional to the tokens seen stops a
// run that loops without progress. At a limit, requests in flight end
// failed (reason "limit") and those that never arrived end truncated, so
// every request still has one outcome. Config.Interrupt is a caller's
// cancellation check polled every 1,024 events; the core reads no clock.
package cluster
