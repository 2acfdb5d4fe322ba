package engine

import (
	"fmt"
	"math/rand/v2"

	"github.com/servesim/servesim/internal/des"
	"github.com/servesim/servesim/internal/perf"
)

// Speculative decoding, as vLLM v1 runs it (see docs/speculative.md).
//
// Every decoding sequence of a step carries K proposed tokens besides its
// last sampled one: the target computes 1+K query tokens for it (the
// step's token count, the token budget and the KV slots all count them)
// and samples 1 + (number of proposals accepted) tokens, the accepted
// prefix plus one token of its own. Its blocks must hold the 1+K tokens
// and K lookahead slots more (vLLM's num_lookahead_tokens, where the
// drafter writes the next proposals). The KV of the rejected proposals'
// positions is dropped: computed goes back to the accepted length, and
// those slots are written again by the next step, so the blocks that held
// them stay with the request until it ends. Prompt chunks are unchanged;
// the step that completes a prompt samples one token.
//
// Acceptance is drawn per sequence and step from the engine's own random
// stream: with the unconditional per-position rates a1 >= ... >= aK
// (P(at least i accepted) = ai), one uniform u gives the count of i with
// u < ai; an i.i.d. conditional rate α is the vector ai = α^i; a
// per-request α (from the trace) is the same with the request's α.
//
// The proposal cost is priced per step: a draft model or an EAGLE/MTP head
// runs once over the step's tokens and K-1 more times over one token per
// decoding sequence, through Speculative.Draft; n-gram proposals cost
// HostNsPerToken per proposed token on the host. The decode lane is off
// with speculation (every decoder changes by a random amount each step).

// Speculative configures speculative decoding; K = 0 is off.
type Speculative struct {
	// K is the number of tokens proposed per decoding sequence and step.
	K int
	// Accept holds the unconditional acceptance rate of each proposal
	// position, a1..aK, non-increasing (unused with PerRequest; see
	// Rates). An array keeps Config comparable.
	Accept [MaxSpecTokens]float64
	// PerRequest takes each request's conditional rate α from its
	// workload entry (Request.SpecAcceptance).
	PerRequest bool
	// Seed seeds the acceptance draws (with the instance index).
	Seed uint64
	// Draft prices the proposer's GPU passes (nil: none, as n-gram).
	Draft perf.Predictor
	// HostNsPerToken is the host time per proposed token (n-gram lookup).
	HostNsPerToken int64
}

// MaxSpecTokens bounds Speculative.K.
const MaxSpecTokens = 16

// Rates returns the acceptance array of the per-position rates a.
func Rates(a []float64) (r [MaxSpecTokens]float64) {
	copy(r[:], a)
	return r
}

// On reports whether speculation is configured.
func (s *Speculative) On() bool { return s.K > 0 }

func (s *Speculative) validate() error {
	if s.K < 0 || s.K > MaxSpecTokens {
		return fmt.Errorf("speculative: num_speculative_tokens must be in [0, %d] (got %d)", MaxSpecTokens, s.K)
	}
	if s.K == 0 {
		return nil
	}
	for i, a := range s.Accept[:s.K] {
		if !(a >= 0 && a <= 1) || (i > 0 && a > s.Accept[i-1]) {
			return fmt.Errorf("speculative: acceptance rates must be non-increasing in [0, 1] (got %v)", s.Accept[:s.K])
		}
	}
	if s.HostNsPerToken < 0 {
		return fmt.Errorf("speculative: host time per proposed token must be >= 0 (got %d)", s.HostNsPerToken)
	}
	return nil
}

// IIDAcceptance is the per-position vector of an i.i.d. conditional
// acceptance rate alpha over k proposals: ai = alpha^i.
func IIDAcceptance(alpha float64, k int) []float64 {
	v := make([]float64, k)
	p := 1.0
	for i := range v {
		p *= alpha
		v[i] = p
	}
	return v
}

// SpecStats counts speculative decoding's work; StepResult.Spec holds one
// step's, SpecTotals the engine's so far.
type SpecStats struct {
	Drafts   int64 // sequence-steps that verified proposals
	Proposed int64 // proposed tokens verified
	Accepted int64 // proposals accepted (before the output-length cap)
	Emitted  int64 // tokens emitted by those sequence-steps
	DraftNs  int64 // proposer time (draft GPU passes, n-gram host time)
	StepNs   int64 // whole step time, proposer included
}

func (s *SpecStats) add(o *SpecStats) {
	s.Drafts += o.Drafts
	s.Proposed += o.Proposed
	s.Accepted += o.Accepted
	s.Emitted += o.Emitted
	s.DraftNs += o.DraftNs
	s.StepNs += o.StepNs
}

// SpecTotals returns the speculative decoding counts of the steps
// finished so far (all zero when speculation is off).
func (e *Engine) SpecTotals() SpecStats { return e.specTotal }

// specOn reports whether this engine speculates.
func (e *Engine) specOn() bool { return e.spec }

// specRNG returns the engine's acceptance stream, created on first use.
func (e *Engine) specRNG() *rand.Rand {
	if e.specRand == nil {
		e.specRand = des.Stream(e.cfg.Spec.Seed, fmt.Sprintf("speculative/%d", e.id))
	}
	return e.specRand
}

// accepted draws how many of m proposals of s the target accepts.
func (e *Engine) accepted(s *seq, m int32) int32 {
	if m <= 0 {
		return 0
	}
	u := e.specRNG().Float64()
	var n int32
	if e.cfg.Spec.PerRequest {
		p := 1.0
		for n < m {
			p *= s.alpha
			if u >= p {
				break
			}
			n++
		}
		return n
	}
	for n < m && u < e.cfg.Spec.Accept[n] {
		n++
	}
	return n
}

// draftNs prices the proposer's work for the formed batch: one pass over
// the step's tokens and K-1 passes of one token per decoding sequence
// (contexts growing by one each pass), or the n-gram host time. The K-1
// single-token passes differ only by one token of context each, so they
// are priced as K-1 times the pass at their middle context (K/2 tokens
// past the step's): the same to well under 0.1 % for contexts of
// hundreds of tokens, at one predictor call instead of K-1.
func (e *Engine) draftNs() int64 {
	sp := &e.cfg.Spec
	b := &e.batch
	d := sp.HostNsPerToken * int64(b.SpecTokens)
	if sp.Draft == nil || b.Tokens() == 0 {
		return d
	}
	d += sp.Draft.StepTime(b)
	n := b.NumDecode
	if n == 0 {
		return d
	}
	if sp.K > 1 {
		i := sp.K / 2
		db := &e.draftBatch
		*db = perf.Batch{NumDecode: n, DecodeKVSum: b.DecodeKVSum + int64(i*n), DecodeKVMax: b.DecodeKVMax + i, DecodeKVMin: b.DecodeKVMin + i}
		d += int64(sp.K-1) * sp.Draft.StepTime(db)
	}
	return d
}

// verifyTokens is the number of tokens decoding request s computes in the
// batch being formed: its last sampled token and K proposals, fewer when
// the token budget or max_model_len is short (as vLLM's scheduler trims
// the spec tokens).
func (e *Engine) verifyTokens(s *seq, budget int32) int32 {
	n := min(int32(1+e.cfg.Spec.K), budget)
	if l := int32(e.cfg.MaxModelLen); l > 0 {
		n = min(n, max(l-s.computed, 1))
	}
	return n
}

// scheduleVerify puts decoding request slot into the batch with n tokens:
// its last sampled token and n-1 proposals; blocks for all n (the
// lookahead slots) must already be allocated.
func (e *Engine) scheduleVerify(slot, n int32) {
	s := &e.slots[slot]
	e.sched = append(e.sched, scheduled{slot: slot, tokens: n, spec: n - 1})
	b := &e.batch
	ctx := int(s.computed)
	if b.NumDecode == 0 || ctx < b.DecodeKVMin {
		b.DecodeKVMin = ctx
	}
	b.NumDecode++
	b.DecodeKVSum += int64(ctx)
	b.DecodeKVMax = max(b.DecodeKVMax, ctx)
	b.SpecTokens += int(n - 1)
	s.computed += n
}

// finishVerify applies a verification of m proposals to s at the end of
// its step: it draws the accepted count, rolls computed back to the
// accepted length (the rejected positions' slots are rewritten by the next
// step) and returns the tokens emitted, at most the output left.
func (e *Engine) finishVerify(s *seq, m int32, st *SpecStats) int32 {
	a := e.accepted(s, m)
	emit := min(1+a, s.output-s.generated)
	s.computed -= m + 1 - emit
	st.Drafts++
	st.Proposed += int64(m)
	st.Accepted += int64(a)
	st.Emitted += int64(emit)
	return emit
}
