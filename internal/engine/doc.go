// Package engine models one serving instance the way vLLM's v1 engine runs
// it: a scheduler that forms one batch per step under max_num_seqs and
// max_num_batched_tokens, chunked prefill, paged KV blocks with prefix
// caching, and preemption by recompute (or by swapping the KV to host
// memory, vLLM v0's legacy mode: swap.go).
//
// The engine is a synchronous state machine driven from outside, with time
// passed in, through one stepping API: Begin(now) forms a batch and returns
// a Step saying when it ends (and when the next batch may start), and
// FinishBatch(step.ID, end) applies its effects and returns what happened
// (tokens emitted, requests finished or prefilled) as values. Begin is
// Form (form the batch) then Launch (start it for a duration): a caller
// that times several engines' batches jointly, as a data-parallel group in
// lockstep does, calls the two itself. It reads no
// clock, starts no goroutine and never discovers events by scanning all
// requests.
//
// Scheduling (per step, as in vLLM v1):
//  1. Running requests first, in admission order: each gets its remaining
//     tokens (one when decoding; a prompt chunk capped by
//     long_prefill_token_threshold when > 0) within the step's token budget.
//     When its KV blocks cannot be allocated, the most recently admitted
//     running request is preempted (blocks freed, re-queued at the front of
//     the waiting queue, recomputed later) until the allocation fits.
//  2. If nothing was preempted, waiting requests in order while there is
//     budget and a sequence slot: prefix-cache hits are taken first (full
//     blocks only, at most prompt-1 tokens), the rest is scheduled as a
//     chunk; the first request whose blocks cannot be allocated stops
//     admission (head-of-line, FCFS).
//
// That is the fcfs policy. Under the priority policy
// (Config.PriorityScheduling, vLLM's scheduling_policy priority) the
// waiting queue is ordered by (priority, arrival, id), a smaller priority
// first, a preempted request re-entering by that order (waitqueue.go);
// the preemption victim is the running request with the largest
// (priority, arrival), which may have been scheduled earlier in the step
// (its tokens go back to the budget) or be the request itself (preempt.go).
//
// A request whose last prompt token is computed in a step emits its first
// output token at that step's end; every later step that includes it emits
// one more.
//
// Prefix caching: a request's full blocks are hashed in a chain. Blocks
// whose token ids are all known hash by content from a fixed seed and are
// shared through the pool's index; from the first block whose ids are
// unknown on, only the same request (after a preemption) can hit them
// again: those blocks are committed as private content, tagged by the
// request's identity and the block's index (kv.Private), kept out of the
// shared index; when preempted, the request notes which block holds each
// of them to find them again.
//
// Steady decoders (one token, room in their last block, no block filling,
// not finishing) progress implicitly in the decode lane (lane.go): a step
// costs O(1) per such request in a compact array instead of a visit to its
// slot in forming and again in finishing the batch; a member's counters are
// brought up to date when it needs a block, fills one or finishes, and the
// lane is flushed whenever the budget or the free blocks could make the
// admission order matter. Results are those of visiting every request.
//
// A hybrid model's sliding-window or chunked-local layers (Config.Local,
// hybrid.go) keep KV cache groups of their own in the same pool, as vLLM's
// hybrid KV cache manager does: each holds a block per position from the
// first still inside the window to the end of the request's table, and
// frees those that slide out whenever the request is scheduled. The
// decode lane is off for them (windows move at every token).
//
// Speculative decoding (Config.Spec, spec.go): decoding requests verify K
// proposals per step (1+K tokens, K lookahead KV slots), accept a seeded
// random prefix of them and emit it plus one token; the proposer's time
// is added to the step. The decode lane is off with it.
//
// With pipeline parallelism (Config.PipelineParallel = N > 1) up to N
// batches are in flight, as in vLLM's batch queue: Step.Free is when the
// first stage can take the next batch, and batches are applied by id.
// Requests in a batch in flight are skipped when forming the next one and
// are never preemption victims.//
// Files: engine.go holds the Engine, its constructor and accessors;
// slot.go the per-request slot (seq) and its states; admit.go admission
// (Add, AddRecord, Unfit) and record access; step.go the stepping API
// (Begin, Form, Launch) with its Step and result types and pipeline
// timing; form.go batch formation (running requests, then waiting ones);
// waitqueue.go the waiting queue (fcfs or priority order); preempt.go
// preemption and the choice of its victim; finish.go applying a finished batch; lane.go the
// decode lane; prefix.go prefix-cache matching and commits; tiers.go
// offloaded KV loads; swap.go swap preemption; handoff.go the P/D handoff; spec.go speculative
// decoding; hybrid.go the local KV cache groups of hybrid models; abort.go client aborts (Abort) and the running requests' output
// counts for streaming (EachRunning); invariants.go the checks.
package engine
