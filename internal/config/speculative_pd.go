package config

import "fmt"

// proposerKV names the KV that a group's proposer adds to every token:
// "" for none (no speculation, or n-gram lookup on the host), the method
// for a one-layer EAGLE/MTP head, the draft model's name for draft_model.
func proposerKV(sp *Speculative) string {
	switch {
	case sp == nil || sp.Method == SpecNgram:
		return ""
	case sp.Method == SpecDraftModel:
		return string(SpecDraftModel) + " " + sp.DraftModel
	}
	return string(sp.Method)
}

// describeProposerKV is proposerKV for people.
func describeProposerKV(id string) string {
	if id == "" {
		return "no proposer KV (speculation off or ngram)"
	}
	return id
}

// validatePDSpec refuses a disaggregated cluster whose prefill-side groups
// (prefill or mixed) and decode groups disagree on the proposer's KV. A
// decode instance with a draft model or an EAGLE/MTP head needs that
// proposer's KV of the prompt; in vLLM the prefill instance computes it
// (its drafter runs over the prompt in the same step) and the KV
// connector moves it with the target's, and the NIXL handshake refuses
// prefill and decode workers whose model-based speculative settings
// differ. n-gram proposals keep no KV, so they may differ freely, as may
// num_speculative_tokens and the acceptance settings.
func (s *Scenario) validatePDSpec(bad func(field, format string, args ...any)) {
	pi, di := -1, -1
	for i := range s.Instances {
		g := &s.Instances[i]
		if g.Role == RoleDecode {
			if di < 0 {
				di = i
			}
		} else if pi < 0 {
			pi = i
		}
	}
	if pi < 0 || di < 0 {
		return
	}
	ref := proposerKV(s.Instances[pi].Merged(s.Engine).Speculative)
	for i := range s.Instances {
		g := &s.Instances[i]
		id := proposerKV(g.Merged(s.Engine).Speculative)
		if i == pi || id == ref {
			continue
		}
		field := fmt.Sprintf("instances[%d].engine.speculative", i)
		if g.Engine == nil || g.Engine.Speculative == nil {
			field = fmt.Sprintf("instances[%d].engine", i)
		}
		bad(field, "group %s (%s) has %s but group %s (%s) has %s; in P/D the prefill side computes the proposer's KV of the prompt and hands it over with the target's, so all groups need the same model-based proposer (method and draft_model; ngram and num_speculative_tokens may differ): set engine.speculative once for all groups, or give instances[%d] the same block",
			g.Name, g.Role, describeProposerKV(id), s.Instances[pi].Name, s.Instances[pi].Role, describeProposerKV(ref), pi)
	}
}
