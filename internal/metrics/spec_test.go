package metrics

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSpecSummary: the speculative section is absent without AddSpec and
// its ratios follow the counts: 3 drafts of 4 proposals, 6 accepted, 8
// tokens emitted (one capped), 2 of 10 ms in the proposer.
func TestSpecSummary(t *testing.T) {
	s := NewSummary()
	js, err := json.Marshal(s.Finish(1e9))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), "speculative") || strings.Contains(s.Finish(1e9).String(), "Speculative") {
		t.Fatal("speculative section present without speculation")
	}
	s.AddSpec(2, 8, 5, 7, 1e6, 4e6)
	s.AddSpec(1, 4, 1, 1, 1e6, 6e6)
	r := s.Finish(1e9).Speculative
	want := SpecResult{Drafts: 3, Proposed: 12, Accepted: 6, AcceptanceRate: 0.5, MeanAcceptedLength: 3, TokensPerStep: 8.0 / 3, DraftShare: 0.2}
	if r == nil || *r != want {
		t.Fatalf("got %+v, want %+v", r, want)
	}
	if out := s.Finish(1e9).String(); !strings.Contains(out, "Speculative acceptance rate (%):                    50.00") {
		t.Errorf("summary table lacks the acceptance rate:\n%s", out)
	}
}
