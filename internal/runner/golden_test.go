package runner

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.digests from the current outputs")

// goldenScenarios are small runs that together reach every hot path the
// speed work touches: prefix hits by content, per-request (salted) blocks
// re-hit after preemption, the P/D handoff, the roofline predictor and
// pipeline parallelism. Invariant checks are on.
var goldenScenarios = []struct{ name, yaml string }{
	{"default", ""},
	{"pd-prefix", `
instances:
  - {name: prefill, role: prefill, count: 2}
  - {name: decode, role: decode, count: 2}
router: prefix-affinity
handoff: {policy: pull, placement: least-loaded}
workload: {limit: 150, time_scale: 0.5}
`},
	{"roofline", `
predictor: {kind: roofline}
hardware: H100
instances: [{count: 2}]
router: least-kv
workload: {limit: 150}
`},
	{"pp2", `
instances: [{pp: 2}]
workload: {limit: 120}
`},
	{"salted-preempt", `
engine: {num_gpu_blocks: 400, max_num_seqs: 64}
workload:
  synthetic:
    requests: 200
    arrival: {kind: poisson, rate: 20}
    input: {kind: lognormal, mean: 600, sigma: 1.0, max: 4000}
    output: {kind: lognormal, mean: 200, sigma: 1.0, max: 2000}
`},
}

// TestGoldenDigests runs each golden scenario and compares the sha256 of
// every output (per-request CSV and JSONL, time series, summary JSON) with
// testdata/golden.digests. A deliberate model change rewrites the file:
//
//	go test ./internal/runner -run TestGoldenDigests -update
//
// (or SERVESIM_UPDATE_GOLDEN=1). Optimisations must leave it unchanged.
func TestGoldenDigests(t *testing.T) {
	path := filepath.Join("testdata", "golden.digests")
	got := map[string]string{}
	var order []string
	for _, sc := range goldenScenarios {
		for name, sum := range runDigests(t, sc.name, sc.yaml) {
			got[name] = sum
			order = append(order, name)
		}
	}
	if *update || os.Getenv("SERVESIM_UPDATE_GOLDEN") != "" {
		var b strings.Builder
		b.WriteString("# sha256 of each golden scenario's outputs; see TestGoldenDigests.\n")
		sort.Strings(order)
		for _, k := range order {
			fmt.Fprintf(&b, "%s %s\n", got[k], k)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", path)
		return
	}
	want, err := readDigests(path)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: listed in %s but not produced", k, path)
		case g != w:
			t.Errorf("%s: digest %s, want %s (output changed; if deliberate, rerun with -update)", k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: produced but missing from %s (rerun with -update)", k, path)
		}
	}
}

// runDigests runs one scenario with all outputs and returns the digest of
// each, keyed "scenario/file".
func runDigests(t *testing.T, name, yaml string) map[string]string {
	t.Helper()
	res, files := runOutputs(t, buildYAML(t, name+".yaml", yaml+"\ncheck_invariants: true\n"))
	if res.RequestsTotal == 0 || res.Finished+res.Rejected+res.Failed != res.RequestsTotal {
		t.Fatalf("%s: %d requests, %d finished, %d rejected, %d failed", name, res.RequestsTotal, res.Finished, res.Rejected, res.Failed)
	}
	out := map[string]string{}
	for f, data := range files {
		out[name+"/"+f] = digest(data)
	}
	return out
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// readDigests parses "<sha256> <name>" lines; # starts a comment.
func readDigests(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		sum, name, ok := strings.Cut(l, " ")
		if !ok || len(sum) != 64 {
			return nil, fmt.Errorf("%s:%d: want \"<sha256> <scenario/file>\", got %q", path, line, l)
		}
		out[name] = sum
	}
	return out, sc.Err()
}
