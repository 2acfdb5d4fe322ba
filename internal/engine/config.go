package engine

import (
	"fmt"
	"math"
)

// Config is the resolved configuration of one instance's engine.
type Config struct {
	MaxNumSeqs                int  // sequence slots per step (vLLM max_num_seqs)
	MaxNumBatchedTokens       int  // token budget per step
	BlockSize                 int  // tokens per KV block
	NumBlocks                 int  // KV capacity in blocks
	LongPrefillTokenThreshold int  // cap on one request's prompt chunk; 0 = none
	ChunkedPrefill            bool // split prompts across steps
	PrefixCaching             bool // reuse cached full blocks
	MaxModelLen               int  // longest prompt+output accepted; 0 = no limit
	// AsyncScheduling forms each batch while the previous step still runs
	// (vLLM's default since async scheduling was enabled by default): the
	// batch that starts when step k ends was formed when step k started,
	// so it sees arrivals up to then and the finished requests of step k-1
	// only; requests finishing in step k hold their slot and blocks for one
	// more step.
	AsyncScheduling bool
	// Role says which phases the instance serves (see Role).
	Role Role
	// ReservedDecodeTokens is, on a decode instance, the headroom in tokens
	// reserved beyond the prompt when a handed-off request is admitted
	// (vLLM reserves none and relies on preemption).
	ReservedDecodeTokens int
	// PipelineParallel is the number of pipeline stages (vLLM
	// pipeline_parallel_size); 0 or 1 means none. With N > 1 up to N
	// batches are in flight (vLLM's batch queue): a new batch may start
	// once the previous one has cleared the first stage, and a request in
	// flight is not scheduled again until its batch has left the last
	// stage. Each stage takes StepTime/N (the predictor's step split
	// evenly across stages, the once-per-step ops included), and a batch
	// moves between stages by an activation send (see PPSend). Async
	// scheduling is off with N > 1, as in vLLM.
	PipelineParallel int
	// SwapBlocks is the host swap space for preempted requests' KV, in
	// blocks (vLLM v0's legacy preemption_mode swap; see swap.go); 0:
	// preemption recomputes (vLLM v1). Swapping needs the KV tiers' links
	// (SetTiers); without them preemption recomputes.
	SwapBlocks      int
	CheckInvariants bool // verify block accounting after every step
	// NoDecodeLane visits every running request in every step instead of
	// letting steady decoders progress in the decode lane (lane.go): the
	// reference the lane is checked against. Outputs are identical either
	// way; only the speed differs.
	NoDecodeLane bool
	// NoAnonymousTails names every KV block a request holds instead of
	// counting its private blocks as an anonymous tail (tail.go): the
	// reference the tails are checked against. Outputs are identical
	// either way; only the speed differs.
	NoAnonymousTails bool
	// PriorityScheduling is vLLM's scheduling_policy priority: the
	// waiting queue is ordered by (priority, arrival) instead of arrival,
	// and a request short of KV blocks preempts the running request with
	// the largest (priority, arrival) instead of the last admitted one
	// (waitqueue.go, preempt.go).
	PriorityScheduling bool
	// Local is a hybrid model's window-bounded KV cache groups (hybrid.go);
	// with Local.Groups > 0 NumBlocks is the pool they share with the
	// full-attention group.
	Local LocalKV
	// The less used settings last: the first fields are read at every
	// step (Engine keeps them in its first cache lines).
	// PPSend is the stage-to-stage activation transfer.
	PPSend PPSend
	// Spec is speculative decoding (off when Spec.K is 0; see spec.go).
	Spec Speculative
}

// PPSend is the cost of sending one batch's activations from one pipeline
// stage to the next: LatencyNs + tokens x BytesPerToken / Bandwidth.
type PPSend struct {
	LatencyNs     int64
	BytesPerToken int64   // hidden size x bytes per element
	Bandwidth     float64 // bytes/s; 0 = no bandwidth cost
}

// Time is the send time of a batch of tokens.
func (p PPSend) Time(tokens int) int64 {
	d := p.LatencyNs
	if p.Bandwidth > 0 && !math.IsInf(p.Bandwidth, 1) {
		d += int64(math.Ceil(float64(int64(tokens)*p.BytesPerToken) / p.Bandwidth * 1e9))
	}
	return d
}

// Role is what an instance serves.
type Role uint8

// Roles.
const (
	Mixed   Role = iota // prompts and outputs (colocated serving)
	Prefill             // prompts only: finished prompts stay pinned for a handoff
	Decode              // outputs of prompts computed elsewhere, plus local recompute
)

// String returns the role's name as used in scenarios.
func (r Role) String() string {
	switch r {
	case Prefill:
		return "prefill"
	case Decode:
		return "decode"
	}
	return "mixed"
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.MaxNumSeqs <= 0:
		return fmt.Errorf("max_num_seqs must be > 0 (got %d)", c.MaxNumSeqs)
	case c.MaxNumBatchedTokens <= 0:
		return fmt.Errorf("max_num_batched_tokens must be > 0 (got %d)", c.MaxNumBatchedTokens)
	case c.BlockSize <= 0:
		return fmt.Errorf("block_size must be > 0 (got %d)", c.BlockSize)
	case c.NumBlocks <= 0:
		return fmt.Errorf("KV capacity must be > 0 blocks (got %d)", c.NumBlocks)
	case c.LongPrefillTokenThreshold < 0:
		return fmt.Errorf("long_prefill_token_threshold must be >= 0 (got %d)", c.LongPrefillTokenThreshold)
	case c.MaxModelLen < 0:
		return fmt.Errorf("max_model_len must be >= 0 (got %d)", c.MaxModelLen)
	case c.ReservedDecodeTokens < 0:
		return fmt.Errorf("reserved_decode_tokens must be >= 0 (got %d)", c.ReservedDecodeTokens)
	case c.PipelineParallel < 0:
		return fmt.Errorf("pipeline parallel size must be >= 0 (got %d)", c.PipelineParallel)
	case c.SwapBlocks < 0:
		return fmt.Errorf("swap space must be >= 0 blocks (got %d)", c.SwapBlocks)
	case c.PPSend.LatencyNs < 0 || c.PPSend.BytesPerToken < 0 || c.PPSend.Bandwidth < 0:
		return fmt.Errorf("pipeline send cost must be >= 0 (got %+v)", c.PPSend)
	}
	if err := c.Local.validate(); err != nil {
		return err
	}
	if c.Local.Groups > 0 && c.SwapBlocks > 0 {
		return fmt.Errorf("swap preemption does not support local KV cache groups (a hybrid model's windows)")
	}
	return c.Spec.validate()
}
