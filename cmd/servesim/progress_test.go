package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
)

// TestProgressOnlyOnATerminal: with stderr not a terminal (a pipe, a
// file, a test buffer) `run` prints no progress at all.
func TestProgressOnlyOnATerminal(t *testing.T) {
	dir := t.TempDir()
	sc := write(t, dir, "s.yaml", "workload: {limit: 20}\n")
	code, _, stderr := run(t, "run", "-c", sc)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "simulating") || strings.Contains(stderr, "requests done") {
		t.Errorf("progress on a non-terminal stderr:\n%s", stderr)
	}
}

// TestProgressHasATotal: on a terminal the progress of a trace, a chat
// workload and a synthetic one counts against a total, the number of
// requests the run ends with, and ends on that total (not a stale count)
// with an estimate of the time left.
func TestProgressHasATotal(t *testing.T) {
	saved := isTerminal
	isTerminal = func(io.Writer) bool { return true }
	var done, total int64
	progressEnded = func(d, t int64) { done, total = d, t }
	defer func() { isTerminal, progressEnded = saved, nil }()
	dir := t.TempDir()
	for _, c := range []struct{ name, yaml string }{
		{"trace", "workload: {limit: 130}\n"},
		{"chat", "workload:\n  chat:\n    conversations: 12\n    arrival: {kind: poisson, rate: 4}\n    turns: {kind: uniform, min: 1, max: 5}\n" +
			"    think_ms: {kind: fixed, mean: 500}\n    message: {kind: fixed, mean: 100}\n    output: {kind: fixed, mean: 20}\n"},
		{"synthetic", "workload:\n  synthetic: {requests: 70, arrival: {kind: poisson, rate: 20}, input: {kind: fixed, mean: 200}, output: {kind: fixed, mean: 30}}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := write(t, dir, c.name+".yaml", c.yaml)
			code, stdout, stderr := run(t, "run", "-c", sc)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			m := regexp.MustCompile(`Requests total:\s+(\d+)`).FindStringSubmatch(stdout)
			if m == nil {
				t.Fatalf("no request total in:\n%s", stdout)
			}
			if got := fmt.Sprintf("%d/%d", done, total); got != m[1]+"/"+m[1] {
				t.Errorf("progress ended at %s, want %s/%s", got, m[1], m[1])
			}
			if want := fmt.Sprintf("%s/%s requests", m[1], m[1]); !strings.Contains(stderr, want) {
				t.Errorf("progress lacks %q:\n%q", want, stderr)
			}
			if c.name == "chat" && m[1] == "12" {
				t.Errorf("chat total %s counts conversations, not turns", m[1])
			}
		})
	}
}
