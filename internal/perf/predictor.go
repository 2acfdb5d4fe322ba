package perf

// Batch summarises one engine step as a latency predictor sees it. The engine
// fills it while it forms the batch; predictors must not keep a reference.
type Batch struct {
	// PrefillTokens (pc) is the sum of query tokens of the requests that are
	// still computing their prompt in this step (prefill chunks).
	PrefillTokens int
	// PrefillKV (kp) is the sum, over those prefill requests, of the tokens
	// already in their KV cache before this step's chunk (computed or
	// prefix-cache hits).
	PrefillKV int
	// PrefillSeqs is the number of requests contributing prefill chunks.
	PrefillSeqs int
	// NumDecode (n) is the number of requests decoding one token this step
	// (with speculative decoding: their last sampled token).
	NumDecode int
	// SpecTokens is, with speculative decoding, the number of proposed
	// tokens the decode requests verify besides their last sampled one
	// (k per request; fewer when the step's budget cuts them): they are
	// computed like any token, extend each decode's attention query to
	// 1+k rows and get logits of their own. 0 without speculation.
	SpecTokens int
	// DecodeKVSum is the sum of the decode requests' context lengths (tokens
	// already in KV, excluding the token computed this step).
	DecodeKVSum int64
	// DecodeKVMax is the largest such context length in the batch.
	DecodeKVMax int
	// DecodeKVMin is the smallest such context length in the batch. With
	// DecodeKVMax it gives the skew rate (mean-min)/(max-min) that selects
	// the skew-correction bucket.
	DecodeKVMin int
	// PadTokens is the number of padding tokens a CUDA graph adds to the
	// step (see WithEngineTime): token-wise ops (dense layers, all-reduces)
	// run on Tokens()+PadTokens rows in both the profile and the roofline
	// predictor; attention, lm_head and the sampler on the real requests
	// only, and the predictors' own MoE lookup on the real tokens (a
	// data-parallel group's MoENs counts the padding itself).
	PadTokens int
	// DPPadTo is, for a rank of a data-parallel group stepping in lockstep
	// outside eager mode, the token count every rank of the group pads its
	// step to (the largest across the ranks; an idle rank's dummy batch
	// has no tokens of its own and pads to it). The CUDA-graph dispatch
	// pads from max(Tokens(), DPPadTo). 0 outside a group.
	DPPadTo int
	// DPSynced marks a step whose CUDA-graph mode the data-parallel group
	// agreed on: DPMode, the least of the ranks' own modes (vLLM takes the
	// minimum, so one rank that must run eagerly makes every rank run
	// eagerly, unpadded).
	DPSynced bool
	DPMode   Dispatch
	// MoENs, when positive, is the step's whole MoE time (every MoE layer,
	// ns) as the data-parallel group computed it at the gathered token
	// count with the busiest expert-parallel rank's load; it replaces the
	// predictor's own lookup at this batch's tokens.
	MoENs int64
}

// Tokens is the total number of tokens computed in the step.
func (b *Batch) Tokens() int { return b.PrefillTokens + b.NumDecode + b.SpecTokens }

// Seqs is the number of requests in the step (each produces one row of logits).
func (b *Batch) Seqs() int { return b.PrefillSeqs + b.NumDecode }

// Rows is the number of rows of logits the step computes: one per
// request, plus one per verified proposal.
func (b *Batch) Rows() int { return b.Seqs() + b.SpecTokens }

// Predictor times one engine step. StepTime returns nanoseconds and must not
// allocate: it is called once per simulated step.
type Predictor interface {
	StepTime(b *Batch) int64
}

// WithOverhead adds a fixed per-step cost (ns) to another predictor: the
// host-side work of one engine step (scheduling, input preparation,
// sampling bookkeeping) that per-kernel GPU profiles do not contain.
func WithOverhead(p Predictor, ns int64) Predictor {
	if ns == 0 {
		return p
	}
	return overhead{p, ns}
}

type overhead struct {
	Predictor
	ns int64
}

func (o overhead) StepTime(b *Batch) int64 { return o.Predictor.StepTime(b) + o.ns }

// ForRun implements RunScoped.
func (o overhead) ForRun(c *TableCounts) Predictor {
	return overhead{ForRun(o.Predictor, c), o.ns}
}
