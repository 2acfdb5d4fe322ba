package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A speculative method without an acceptance setting runs on its
// default, says so with its source, and the simulated mean accepted
// length matches the default's 1 + Σ aᵢ: EAGLE-3 at k=3, α = 0.743:
// 1 + 0.743 + 0.552 + 0.410 = 2.705.
func TestSpeculativeDefaultAcceptanceCLI(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "s.yaml", `engine:
  max_num_seqs: 256
  speculative: {method: eagle3, num_speculative_tokens: 3}
workload:
  max_concurrency: 16
  synthetic:
    requests: 200
    arrival: {kind: burst}
    input: {kind: fixed, mean: 1000}
    output: {kind: fixed, mean: 250}
`)
	code, out, stderr := run(t, "run", "-c", p)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "acceptance per position [0.743, 0.552, 0.41], 2.71 tokens per verification: default (vLLM issue #26191") {
		t.Errorf("summary does not mark the default acceptance:\n%s", out)
	}
	m := regexp.MustCompile(`mean accepted length:\s+([0-9.]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no mean accepted length in:\n%s", out)
	}
	got, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	// About 18,000 verifications, standard deviation of the accepted count
	// about 1.1: a standard error near 0.008; 0.04 is five of them.
	if want := 1 + 0.743 + 0.743*0.743 + 0.743*0.743*0.743; got < want-0.04 || got > want+0.04 {
		t.Errorf("mean accepted length %.3f, want %.3f ± 0.04", got, want)
	}
}
