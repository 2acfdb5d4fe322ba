package main

import (
	"strings"
	"testing"
)

// TestPrintConfigIsResolved: --print-config prints the effective engine
// settings of each group (vLLM's defaults for the accelerator where the
// file is silent) and where they come from, and the printed scenario runs
// to the same summary as the file.
func TestPrintConfigIsResolved(t *testing.T) {
	dir := t.TempDir()
	sc := write(t, dir, "one.yaml", "workload: {limit: 25}\n")
	code, stdout, stderr := run(t, "run", "-c", sc, "--print-config")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"# g0: max_num_seqs 1024 from vLLM default for RTXPRO6000 (95.0 GiB >= 70 GiB); max_num_batched_tokens 8192 from vLLM default",
		"    max_num_seqs: 1024\n    max_num_batched_tokens: 8192\n", "    max_model_len: 131072\n", "    cudagraph_mode: full_and_piecewise\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--print-config lacks %q:\n%s", want, stdout)
		}
	}
	resolved := write(t, dir, "resolved.yaml", stdout)
	_, a, _ := run(t, "run", "-q", "-c", sc)
	_, b, _ := run(t, "run", "-q", "-c", resolved)
	body := func(s string) string { _, after, _ := strings.Cut(s, "Requests total:"); return after }
	if body(a) == "" || body(a) != body(b) {
		t.Errorf("the resolved scenario runs differently:\n%s\n---\n%s", a, b)
	}
}
