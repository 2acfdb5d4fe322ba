package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// capacityRoot is the root command with sweep, merge and search registered
// (once root.go registers them itself, nothing is added twice).
func capacityRoot() *cobra.Command {
	root := newRootCmd()
	have := map[string]bool{}
	for _, c := range root.Commands() {
		have[c.Name()] = true
	}
	for _, c := range []*cobra.Command{newSweepCmd(), newMergeCmd(), newSearchCmd()} {
		if !have[c.Name()] {
			root.AddCommand(c)
		}
	}
	return root
}

// runCapacity executes a command line like execute does and returns the
// exit code (0, 1 or 2), stdout and stderr.
func runCapacity(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	root := capacityRoot()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errb)
	err := root.Execute()
	if err == nil {
		return 0, out.String(), errb.String()
	}
	errb.WriteString("servesim: " + oneLine(err.Error()) + "\n")
	return exitCode(err), out.String(), errb.String()
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSweepCLI: the 16-point example grid (on 60 requests of pd-2p2d, to
// stay fast) gives identical files with --workers 1 and all workers, and
// when run as 4 shards merged with `servesim merge OUT DIR`.
func TestSweepCLI(t *testing.T) {
	dir := t.TempDir()
	args := []string{"sweep", "-q", "-c", "../../examples/pd-2p2d.yaml", "--grid", "../../examples/grid-pd.yaml", "--limit", "60"}
	one := filepath.Join(dir, "one.csv")
	if code, _, stderr := runCapacity(t, append(args, "--workers", "1", "-o", one)...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCapacity(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stdout != string(readFile(t, one)) {
		t.Fatalf("all workers (stdout) differ from --workers 1:\n%s\nvs\n%s", stdout, readFile(t, one))
	}
	if n := strings.Count(stdout, "\n"); n != 17 {
		t.Fatalf("%d lines, want a header and 16 rows", n)
	}
	if !strings.HasPrefix(stdout, "point,num_points,sweep_id,handoff.policy,instances[1].count,workload.time_scale,slo.ttft_ms,slo.tpot_ms,requests_total,finished,") ||
		!strings.Contains(stdout, "ttft_ms_p99") || !strings.Contains(stdout, "goodput_rps") {
		t.Fatalf("header: %s", stdout[:strings.Index(stdout, "\n")])
	}
	shards := filepath.Join(dir, "shards")
	if err := os.Mkdir(shards, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		out := filepath.Join(shards, "shard-"+string(rune('0'+i))+".csv")
		if code, _, stderr := runCapacity(t, append(args, "--shard", string(rune('0'+i))+"/4", "-o", out)...); code != 0 {
			t.Fatalf("shard %d: exit %d: %s", i, code, stderr)
		}
	}
	merged := filepath.Join(dir, "merged.csv")
	if code, _, stderr := runCapacity(t, "merge", merged, shards); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	if !bytes.Equal(readFile(t, merged), readFile(t, one)) {
		t.Fatalf("merged shards differ from the single-process output")
	}
	// -o/--output names OUT as sweep does; every argument is a shard.
	mergedO := filepath.Join(dir, "merged-o.csv")
	if code, _, stderr := runCapacity(t, "merge", "-o", mergedO, shards); code != 0 {
		t.Fatalf("merge -o: exit %d: %s", code, stderr)
	}
	if !bytes.Equal(readFile(t, mergedO), readFile(t, one)) {
		t.Fatalf("merge -o differs from the single-process output")
	}
	// A missing shard is an error and writes nothing.
	os.Remove(filepath.Join(shards, "shard-2.csv"))
	bad := filepath.Join(dir, "bad.csv")
	code, _, stderr = runCapacity(t, "merge", bad, filepath.Join(shards, "shard-*.csv"))
	if code != 2 || !strings.Contains(stderr, "4 of 16 points are missing (2, 6, 10, 14)") {
		t.Fatalf("missing shard: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Fatalf("merge wrote %s despite the error", bad)
	}
	// JSON output, listing.
	code, stdout, stderr = runCapacity(t, append(args, "--json", "--shard", "3/4")...)
	if code != 0 || !strings.HasPrefix(stdout, "[\n{\"point\":3,\"num_points\":16,") || strings.Count(stdout, "\n") != 6 {
		t.Fatalf("json: exit %d: %s%s", code, stdout, stderr)
	}
	code, stdout, _ = runCapacity(t, append(args, "--list", "--shard", "1/4")...)
	if code != 0 || !strings.Contains(stdout, "4 of 16 points (shard 1/4") || !regexp.MustCompile(`(?m)^13 +reserve +3 +0.75 +2000 +100$`).MatchString(stdout) {
		t.Fatalf("list: %s", stdout)
	}
}

func TestSweepCLIBadInput(t *testing.T) {
	dir := t.TempDir()
	n := 0
	grid := func(body string) string {
		n++
		return write(t, dir, "grid"+strconv.Itoa(n)+".yaml", body)
	}
	pd := "../../examples/pd-2p2d.yaml"
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no grid", []string{"sweep", "-c", pd}, []string{"--grid: required"}},
		{"unknown path", []string{"sweep", "-c", pd, "--grid", grid("seed: [1]\nengine.max_num_seqz: [4]\n")}, []string{"grid1.yaml:2:1", "max_num_seqz", "valid:"}},
		{"bad value", []string{"sweep", "-c", pd, "--grid", grid("handoff.policy: [pull, bogus]\n")}, []string{"grid2.yaml:1:24", "handoff.policy = bogus", "must be pull"}},
		{"index out of range", []string{"sweep", "-c", pd, "--grid", grid("instances[2].count: [1]\n")}, []string{"grid3.yaml:1:", "out of range"}},
		{"bad shard", []string{"sweep", "-c", pd, "--grid", grid("seed: [1]\n"), "--shard", "4/4"}, []string{"--shard", "[0, 3]"}},
		{"empty shard id", []string{"sweep", "-c", pd, "--grid", grid("seed: [1]\n"), "--shard", "/4"}, []string{"--shard", "SLURM_ARRAY_TASK_ID"}},
		{"merge nothing", []string{"merge", filepath.Join(dir, "o.csv"), filepath.Join(dir, "none-*.csv")}, []string{"matches no file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCapacity(t, tc.args...)
			if code != 2 || strings.Count(stderr, "\n") != 1 {
				t.Fatalf("exit %d, want 2 and one line: %s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("%q does not mention %q", stderr, w)
				}
			}
		})
	}
}

// TestSweepBaseFixedByGrid: a scenario that cannot be built as written
// (Llama-3.1-70B does not fit one H100) still sweeps when its grid sets
// what it lacks (tp 4 fits); the sweep says why it went on, and the point
// that still does not fit is a row with its error.
func TestSweepBaseFixedByGrid(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "s.yaml")
	grid := filepath.Join(dir, "g.yaml")
	out := filepath.Join(dir, "r.csv")
	if err := os.WriteFile(sc, []byte("model: meta-llama/Llama-3.1-70B\nhardware: H100\npredictor: {kind: roofline}\nworkload:\n  synthetic: {requests: 20, arrival: {kind: poisson, rate: 2}, input: {kind: fixed, mean: 200}, output: {kind: fixed, mean: 20}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(grid, []byte("instances[0].tp: [1, 4]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCapacity(t, "sweep", "-q", "-c", sc, "--grid", grid, "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "the scenario as written cannot be built") || !strings.Contains(stderr, "1 of 2 points could not be simulated") {
		t.Errorf("stderr %q: want the note on the scenario and the warning on the failed point", stderr)
	}
	rows := strings.Split(strings.TrimSpace(string(readFile(t, out))), "\n")
	if len(rows) != 3 || !strings.Contains(rows[1], "exceed the usable memory") || !strings.HasSuffix(rows[2], ",") {
		t.Errorf("rows %q: want tp 1 failed (does not fit) and tp 4 run (empty error)", rows)
	}
}
