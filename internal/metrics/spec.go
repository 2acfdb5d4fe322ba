package metrics

// SpecResult summarises speculative decoding over a run, in vLLM's terms
// (its spec_decode metrics): drafts are sequence-steps that verified
// proposals.
type SpecResult struct {
	Drafts   int64 `json:"drafts"`
	Proposed int64 `json:"draft_tokens"`
	Accepted int64 `json:"accepted_tokens"`
	// AcceptanceRate is accepted / proposed tokens.
	AcceptanceRate float64 `json:"acceptance_rate"`
	// MeanAcceptedLength is 1 + accepted / drafts: the tokens a
	// verification yields before the output-length cap.
	MeanAcceptedLength float64 `json:"mean_accepted_length"`
	// TokensPerStep is the output tokens emitted per verification, after
	// the cap at each request's output length.
	TokensPerStep float64 `json:"tokens_per_step"`
	// DraftShare is the proposer's share of the step time (draft passes
	// or host proposals over whole step time) over the steps of
	// speculating instances.
	DraftShare float64 `json:"draft_share"`
}

// AddSpec accounts for one step's speculative decoding: drafts
// sequence-steps verifying proposed tokens, of which accepted were
// accepted and emitted tokens came out, in a step of stepNs of which the
// proposer took draftNs.
func (s *Summary) AddSpec(drafts, proposed, accepted, emitted, draftNs, stepNs int64) {
	s.spec.Drafts += drafts
	s.spec.Proposed += proposed
	s.spec.Accepted += accepted
	s.specEmitted += emitted
	s.specDraftNs += draftNs
	s.specStepNs += stepNs
	s.specOn = true
}

// specResult is the run's speculative decoding, nil when no instance
// speculated.
func (s *Summary) specResult() *SpecResult {
	if !s.specOn {
		return nil
	}
	r := s.spec
	if r.Proposed > 0 {
		r.AcceptanceRate = float64(r.Accepted) / float64(r.Proposed)
	}
	if r.Drafts > 0 {
		r.MeanAcceptedLength = 1 + float64(r.Accepted)/float64(r.Drafts)
		r.TokensPerStep = float64(s.specEmitted) / float64(r.Drafts)
	}
	if s.specStepNs > 0 {
		r.DraftShare = float64(s.specDraftNs) / float64(s.specStepNs)
	}
	return &r
}
