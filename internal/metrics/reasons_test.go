package metrics

import (
	"strconv"
	"strings"
	"testing"
)

func TestReasonClass(t *testing.T) {
	for in, want := range map[string]string{
		"unfit: prompt+output 1003 tokens needs 63 KV blocks but instance 0 holds 10": "unfit: prompt+output N tokens needs N KV blocks but instance N holds N",
		"admission: predicted prefill queueing 5123 ms exceeds 5000 ms":               "admission: predicted prefill queueing N ms exceeds N ms",
		"lease expired at t=3.25 s":               "lease expired at t=N s",
		"session: sub-request 12 did not finish.": "session: sub-request N did not finish.",
		"no numbers here":                         "no numbers here",
		"v1.2.3":                                  "vN",
	} {
		if got := reasonClass(in); got != want {
			t.Errorf("reasonClass(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFailureReasonsGrouped: 300 failures that differ only in their
// numbers print as one class with its count and one example.
func TestFailureReasonsGrouped(t *testing.T) {
	s := NewSummary()
	for i := range 300 {
		rec := NewRecord(int64(i), 0)
		rec.Outcome = Failed
		rec.Reason = "unfit: prompt+output " + strconv.Itoa(1000+i) + " tokens needs " + strconv.Itoa(63+i/16) + " KV blocks but instance 0 holds 10"
		s.Add(&rec)
	}
	rec := NewRecord(300, 0)
	rec.Outcome = Failed
	s.Add(&rec)
	r := s.Finish(1e9)
	if len(r.FailureReasons) != 2 || r.FailureReasons["unfit: prompt+output N tokens needs N KV blocks but instance N holds N"] != 300 || r.FailureReasons["unspecified"] != 1 {
		t.Fatalf("classes: %v", r.FailureReasons)
	}
	text := r.String()
	if strings.Count(text, "e.g. unfit") != 1 || !strings.Contains(text, "e.g. unfit: prompt+output 1000 tokens needs 63 KV blocks") {
		t.Fatalf("summary:\n%s", text)
	}
}
