package cluster

import (
	"math"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/workload"
)

// fitBounds lets admission decide in O(1) that a request fits every
// instance it could go to, which is the common case: the smallest token
// bounds (engine.FitTokens, engine.HandoffPromptTokens) over each group
// of instances. A request within them has every instance of the group as
// a candidate; one beyond them takes the per-instance path, which also
// builds the reason when none fits. The bounds depend only on the
// engines' configurations, which do not change during a run, so they are
// computed once, at the first admission.
type fitBounds struct {
	ready bool
	// Colocated serving: every instance's index, and the smallest
	// FitTokens of them.
	all    []int
	allMax int
	// P/D: decode instances' smallest FitTokens and HandoffPromptTokens;
	// prefill-role instances' smallest FitTokens (they hold the prompt
	// plus one token); mixed instances' smallest FitTokens.
	decTotal, decPrompt int
	preTotal, mixTotal  int
}

// bounds returns the fit bounds, computing them on first use.
func (s *Sim) bounds() *fitBounds {
	f := &s.fit
	if f.ready {
		return f
	}
	f.ready = true
	f.allMax, f.decTotal, f.decPrompt, f.preTotal, f.mixTotal = math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt
	f.all = make([]int, len(s.engines))
	for i, e := range s.engines {
		f.all[i] = i
		lim := e.FitTokens()
		f.allMax = min(f.allMax, lim)
		switch e.Config().Role {
		case engine.Decode:
			f.decTotal = min(f.decTotal, lim)
			f.decPrompt = min(f.decPrompt, e.HandoffPromptTokens())
		case engine.Prefill:
			f.preTotal = min(f.preTotal, lim)
		default:
			f.mixTotal = min(f.mixTotal, lim)
		}
	}
	return f
}

// fitsAll reports whether req fits every instance (colocated serving).
func (f *fitBounds) fitsAll(req *workload.Request) bool {
	return req.InputTokens+req.OutputTokens <= f.allMax
}

// fitsAllDecode reports whether every decode instance can ever admit req's
// handoff (engine.HandoffFits on each).
func (f *fitBounds) fitsAllDecode(req *workload.Request) bool {
	return req.InputTokens+req.OutputTokens <= f.decTotal && req.InputTokens <= f.decPrompt
}

// fitsAllPrefill reports whether every prefill-capable instance can take
// req (prefillUnfit "" on each): a prefill instance holds the prompt and
// its first token, a mixed one serves the whole request.
func (f *fitBounds) fitsAllPrefill(req *workload.Request) bool {
	return req.InputTokens+1 <= f.preTotal && req.InputTokens+req.OutputTokens <= f.mixTotal
}
