package randgen

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
	_ "github.com/servesim/servesim/internal/testseed"
	"pgregory.net/rapid"
)

var (
	flagOnly   = flag.String("randgen.only", "", "fail only on this failure class (stall, livelock, ...), so rapid shrinks a case of that class")
	flagSave   = flag.String("randgen.save", "", "write every failing case into this directory as failing.yaml and failing.jsonl (the last one written is the shrunk case)")
	flagSurvey = flag.Bool("randgen.survey", false, "never fail: tally the failure classes over all cases and print them")
	flagMatch  = flag.String("randgen.match", "", "fail only when the failure's key (class (policy) signature: detail) matches this regular expression")
)

// stuckRe reads one instance of a stall report.
var stuckRe = regexp.MustCompile(`instance \d+ (\w+): running (\d+) waiting (\d+) handoff-queue (\d+) reserved (\d+) pinned (\d+) free (\d+)/(\d+)`)

// signature condenses a stall report into the roles and counters left
// non-zero, e.g. "prefill:waiting decode:handoff-queue".
func signature(f *Failure) string {
	if f.Class != ClassStall {
		return ""
	}
	names := []string{"running", "waiting", "handoff-queue", "reserved", "pinned"}
	set := map[string]bool{}
	for _, m := range stuckRe.FindAllStringSubmatch(f.Detail, -1) {
		for k, n := range names {
			if m[2+k] != "0" {
				set[m[1]+":"+n] = true
			}
		}
		if m[7] != m[8] {
			set[m[1]+":used"] = true
		}
	}
	var parts []string
	for k := range set {
		parts = append(parts, k)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// key names a failure for tallies and -randgen.match.
func key(f *Failure, policy string) string {
	k := f.Class + " (" + policy + ")"
	if sig := signature(f); sig != "" {
		k += " [" + sig + "]"
	}
	return k
}

// tally counts cases by verdict over one rapid.Check.
type tally struct {
	mu      sync.Mutex
	cases   int
	skipped map[string]int
	classes map[string]int
	first   map[string]string
	causes  map[string]int
	unexpl  []string
	// maxEvents is the most events of a run that kept its contract.
	maxEvents int64
}

// cause counts a failing case by its set of known causes.
func (t *tally) cause(set string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.causes[set]++
}

// unexplained counts a failing case with no known cause and saves it.
func (t *tally) unexplained(f *Failure, c Case, dir string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.causes["(none)"]++
	t.unexpl = append(t.unexpl, f.Class+": "+f.Detail)
	if dir != "" {
		if _, err := c.Write(dir, fmt.Sprintf("unexplained-%d", len(t.unexpl))); err != nil {
			t.unexpl = append(t.unexpl, err.Error())
		}
	}
}

var (
	skipPos = regexp.MustCompile(`\S+\.yaml:\d+:\d+: `)
	digits  = regexp.MustCompile(`\d+`)
)

// add counts one case and reports whether it is the first of its failure
// key.
func (t *tally) add(res Result, policy string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	skip, f := res.Skipped, res.Failure
	t.cases++
	if skip == "" && f == nil {
		t.maxEvents = max(t.maxEvents, res.Events)
	}
	if skip != "" {
		// The reason without its file position and numbers, so alike
		// reasons group.
		key := skipPos.ReplaceAllString(skip, "")
		key = digits.ReplaceAllString(key, "N")
		if len(key) > 160 {
			key = key[:160]
		}
		t.skipped[key]++
	}
	if f != nil {
		key := key(f, policy)
		t.classes[key]++
		if _, ok := t.first[key]; !ok {
			d := f.Detail
			if len(d) > 300 {
				d = d[:300] + "..."
			}
			t.first[key] = d
			return true
		}
	}
	return false
}

func (t *tally) report(tb testing.TB) {
	skipped := 0
	for _, n := range t.skipped {
		skipped += n
	}
	tb.Logf("%d cases, %d skipped as invalid input (%.1f%%)", t.cases, skipped, 100*float64(skipped)/float64(max(t.cases, 1)))
	for _, k := range sortedKeys(t.skipped) {
		tb.Logf("  skipped %5d  %s", t.skipped[k], k)
	}
	failed := 0
	for _, n := range t.classes {
		failed += n
	}
	if len(t.causes) > 0 {
		tb.Logf("failing cases by known causes (see knownCauses):")
		for _, k := range sortedKeys(t.causes) {
			tb.Logf("  %5d  %s", t.causes[k], k)
		}
		for _, u := range t.unexpl {
			if len(u) > 300 {
				u = u[:300] + "..."
			}
			tb.Logf("  unexplained: %s", u)
		}
	}
	tb.Logf("most events in a passing run: %d", t.maxEvents)
	tb.Logf("%d failing cases", failed)
	for _, k := range sortedKeys(t.classes) {
		tb.Logf("  %5d  %-32s e.g. %s", t.classes[k], k, t.first[k])
	}
}

func sortedKeys(m map[string]int) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestRandomPD draws random valid P/D scenarios (see Draw), runs each as
// `servesim run` would, with invariant checks on, and checks the run's
// contract (see CheckFile). One case in eight also runs twice and compares
// every output byte for byte. Scenarios the validator or the build refuses
// are skipped and counted; they must stay a small fraction.
//
// The normal suite draws rapid's default 100 cases (20 under -short);
// SERVESIM_RANDGEN_CASES=N (or -rapid.checks=N) draws N, the long run
// documented in docs/testing.md:
//
//	SERVESIM_RANDGEN_CASES=1000 go test ./internal/scenario/randgen -run 'TestRandomPD$' -timeout 1h
func TestRandomPD(t *testing.T) {
	setChecks(t)
	tl := &tally{skipped: map[string]int{}, classes: map[string]int{}, first: map[string]string{}, causes: map[string]int{}}
	rapid.Check(t, func(rt *rapid.T) {
		c := Draw(rt)
		determinism := rapid.IntRange(0, 7).Draw(rt, "determinism") == 0
		dir, err := os.MkdirTemp("", "randpd")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)
		path, err := c.Write(dir, "case")
		if err != nil {
			rt.Fatal(err)
		}
		res := CheckFile(path, c.Requests, Options{Determinism: determinism})
		if res.Failure != nil && *flagSurvey {
			// Triage: a failure with none of the known causes is a new
			// class; keep each such case.
			if causes := knownCauses(path); len(causes) == 0 {
				tl.unexplained(res.Failure, c, *flagSave)
			} else {
				tl.cause(strings.Join(causes, "+"))
			}
		}
		first := tl.add(res, c.Policy)
		if res.Skipped != "" {
			rt.Skip(res.Skipped)
		}
		f := res.Failure
		if f != nil && *flagSurvey && first && *flagSave != "" {
			// One example of every failure key, named after the key.
			name := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(key(f, c.Policy), "-"), "-")
			if _, err := c.Write(*flagSave, name); err != nil {
				rt.Fatal(err)
			}
		}
		if f == nil || *flagSurvey || (*flagOnly != "" && f.Class != *flagOnly) {
			return
		}
		if *flagMatch != "" && !regexp.MustCompile(*flagMatch).MatchString(key(f, c.Policy)+": "+f.Detail) {
			return
		}
		if *flagSave != "" {
			if _, err := c.Write(*flagSave, "failing"); err != nil {
				rt.Fatal(err)
			}
		}
		rt.Fatalf("%s\nscenario:\n%s\ntrace:\n%s", f, c.Scenario, c.Trace)
	})
	tl.report(t)
	skipped := 0
	for _, n := range tl.skipped {
		skipped += n
	}
	if tl.cases >= 20 && skipped*4 > tl.cases {
		t.Errorf("%d of %d drawn scenarios were refused as input: the generator drifted from the validator", skipped, tl.cases)
	}
}

// TestRegressions runs every reproducer in testdata/regressions (a
// scenario NAME.yaml and its trace NAME.jsonl, found by random draws and
// shrunk) and checks the same contract as TestRandomPD, with the
// determinism check on. Each file is its own subtest, so the ones still
// failing are named in the output.
func TestRegressions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "regressions", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no reproducers in testdata/regressions")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			n, err := CountRequests(strings.TrimSuffix(f, ".yaml") + ".jsonl")
			if err != nil {
				t.Fatal(err)
			}
			res := CheckFile(f, n, Options{Determinism: true})
			if res.Skipped != "" {
				// A reproducer that became invalid input must say so as
				// a one-line error naming the field; that is a pass for
				// scenarios whose defect was bad input accepted.
				if strings.Contains(res.Skipped, "\n") {
					t.Fatalf("multi-line input error: %q", res.Skipped)
				}
				t.Logf("refused as input: %s", res.Skipped)
				return
			}
			if res.Failure != nil {
				t.Fatal(res.Failure)
			}
		})
	}
}

// TestCheckCatchesBrokenContract: the checker itself fails on a run that
// breaks the contract. A workload count that does not match the trace is
// reported as an outcomes failure, and a tiny event budget as a livelock.
func TestCheckCatchesBrokenContract(t *testing.T) {
	dir := t.TempDir()
	c := Case{
		Scenario: `model: "meta-llama/Llama-3.1-8B"
engine: {num_gpu_blocks: 200, max_num_seqs: 4}
instances: [{role: prefill}, {role: decode}]
workload: {trace: "trace.jsonl"}
check_invariants: true
`,
		Trace: `{"input_toks": 100, "output_toks": 20, "arrival_time_ns": 0}
{"session_id": "s", "arrival_time_ns": 1000, "sub_requests": [{"input_toks": 50, "output_toks": 5, "tool_duration_ns": 1000000}, {"input_toks": 60, "output_toks": 5}]}
`,
		TraceFile: "trace.jsonl",
	}
	path, err := c.Write(dir, "ok")
	if err != nil {
		t.Fatal(err)
	}
	n, err := CountRequests(filepath.Join(dir, "ok.jsonl"))
	if err != nil || n != 3 {
		t.Fatalf("CountRequests = %d, %v; want 3", n, err)
	}
	for _, tc := range []struct {
		name     string
		requests int
		opts     Options
		want     string
	}{
		{"contract kept", 3, Options{Determinism: true}, ""},
		{"one request missing", 4, Options{}, ClassOutcomes},
		{"event budget", 3, Options{MaxEvents: 5}, ClassLivelock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := CheckFile(path, tc.requests, tc.opts)
			if res.Skipped != "" {
				t.Fatalf("skipped: %s", res.Skipped)
			}
			got := ""
			if res.Failure != nil {
				got = res.Failure.Class
			}
			if got != tc.want {
				t.Fatalf("class %q, want %q (%v)", got, tc.want, res.Failure)
			}
		})
	}
}

// TestDrawIsValidYAML: a draw always decodes as a scenario: the loader
// either accepts it or refuses a value naming the field, never with a YAML
// position error (syntax, unknown field, wrong type); and the trace holds
// the number of requests the draw reports.
func TestDrawIsValidYAML(t *testing.T) {
	pos := regexp.MustCompile(`\.yaml:\d+:\d+:`)
	dir := t.TempDir()
	rapid.Check(t, func(rt *rapid.T) {
		c := Draw(rt)
		path, err := c.Write(dir, "d")
		if err != nil {
			rt.Fatal(err)
		}
		if _, _, err := config.Load(path); err != nil && pos.MatchString(err.Error()) {
			rt.Fatalf("draw is not a well-formed scenario: %v\n%s", err, c.Scenario)
		}
		n, err := CountRequests(strings.TrimSuffix(path, ".yaml") + ".jsonl")
		if err != nil || n != c.Requests {
			rt.Fatalf("CountRequests = %d, %v; the draw says %d", n, err, c.Requests)
		}
	})
}

// TestCheckRecord: the per-record checks, on hand-made records.
func TestCheckRecord(t *testing.T) {
	base := func() metrics.Record {
		r := metrics.NewRecord(7, 100)
		r.Queued, r.Scheduled, r.FirstToken, r.LastToken = 100, 150, 300, 900
		r.InputTokens, r.OutputTokens, r.Generated = 10, 5, 5
		r.Outcome = metrics.Finished
		return r
	}
	for _, tc := range []struct {
		name   string
		modify func(*metrics.Record)
		want   string
	}{
		{"ordered", func(*metrics.Record) {}, ""},
		{"never scheduled, failed", func(r *metrics.Record) {
			r.Scheduled, r.FirstToken, r.LastToken, r.Generated, r.Outcome = -1, -1, -1, 0, metrics.Failed
		}, ""},
		{"queued after scheduled", func(r *metrics.Record) { r.Queued = 200 }, ClassTimestamps},
		{"gap skipped: first token before queued", func(r *metrics.Record) { r.Scheduled, r.Queued = -1, 400 }, ClassTimestamps},
		{"last before first", func(r *metrics.Record) { r.LastToken = 299 }, ClassTimestamps},
		{"transfer ends before it starts", func(r *metrics.Record) { r.TransferStart, r.TransferEnd = 200, 199 }, ClassTimestamps},
		{"finished short of its output", func(r *metrics.Record) { r.Generated = 4 }, ClassOutcomes},
		{"no outcome", func(r *metrics.Record) { r.Outcome = 0 }, ClassOutcomes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			tc.modify(&r)
			got := ""
			if f := checkRecord(&r); f != nil {
				got = f.Class
			}
			if got != tc.want {
				t.Fatalf("class %q, want %q", got, tc.want)
			}
		})
	}
}

var (
	flagFile   = flag.String("randgen.file", "", "TestCheckFile: the scenario YAML to check (its trace next to it, NAME.jsonl)")
	flagTriage = flag.String("randgen.triage", "", "TestTriage: directory of saved failing cases")
	flagEvents = flag.Int64("randgen.events", 0, "event budget of one run (0: DefaultMaxEvents)")
)

// TestTriage prints the known causes of every saved case in the directory
// named by -randgen.triage (written by -randgen.survey -randgen.save).
func TestTriage(t *testing.T) {
	if *flagTriage == "" {
		t.Skip("no -randgen.triage")
	}
	out, err := triage(*flagTriage)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
}

// TestCheckFile checks the one scenario named by -randgen.file and prints
// the verdict (used to minimise reproducers by hand).
func TestCheckFile(t *testing.T) {
	if *flagFile == "" {
		t.Skip("no -randgen.file")
	}
	n, err := CountRequests(strings.TrimSuffix(*flagFile, ".yaml") + ".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	res := CheckFile(*flagFile, n, Options{MaxEvents: *flagEvents})
	switch {
	case res.Skipped != "":
		t.Logf("skipped: %s", res.Skipped)
	case res.Failure != nil:
		t.Errorf("after %d events: %v", res.Events, res.Failure)
	default:
		t.Logf("ok after %d events", res.Events)
	}
}

// setChecks sets rapid's case count for one test from
// SERVESIM_RANDGEN_CASES unless -rapid.checks was given; the count is
// restored when the test ends.
func setChecks(t *testing.T) {
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "rapid.checks" })
	n := ""
	switch v := os.Getenv("SERVESIM_RANDGEN_CASES"); {
	case explicit:
		return
	case v != "":
		if k, err := strconv.Atoi(v); err != nil || k <= 0 {
			t.Fatalf("SERVESIM_RANDGEN_CASES=%q: want a positive number of cases", v)
		}
		n = v
	default:
		return
	}
	f := flag.Lookup("rapid.checks")
	if f == nil {
		t.Fatal("rapid registers no -rapid.checks flag")
	}
	old := f.Value.String()
	if err := f.Value.Set(n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Value.Set(old); err != nil {
			t.Error(err)
		}
	})
}

// TestDecodeLaneChangesNothing draws random P/D and colocated scenarios
// (see Draw) and runs each twice, the second time either with every engine
// visiting every request in every step, naming every KV block and sending
// every step end through the event queue (engine.Config's NoDecodeLane and
// NoAnonymousTails, cluster.Config.NoSteadyRuns), or with the steady runs
// alone off: the summary, the per-request CSV and JSONL and the time
// series must be byte-identical.
// Runs that fail their contract for another reason are not this test's
// concern (TestRandomPD reports them). Every front end is drawn, several
// API servers with a stream interval above 1 included. The suite draws
// rapid's default 100 cases; the long run:
//
//	SERVESIM_RANDGEN_CASES=1000 go test ./internal/scenario/randgen -run TestDecodeLaneChangesNothing -timeout 1h
func TestDecodeLaneChangesNothing(t *testing.T) {
	setChecks(t)
	dir := t.TempDir() // each case overwrites the last one's files
	rapid.Check(t, func(rt *rapid.T) {
		c := Draw(rt)
		path, err := c.Write(dir, "case")
		if err != nil {
			rt.Fatal(err)
		}
		steadyOnly := rapid.Bool().Draw(rt, "steadyOnly")
		res := CheckFile(path, c.Requests, Options{NoLane: !steadyOnly, NoSteady: steadyOnly})
		if res.Skipped != "" {
			rt.Skip(res.Skipped)
		}
		if f := res.Failure; f != nil && f.Class == ClassLane {
			rt.Fatalf("%s: %s", f.Class, f.Detail)
		}
	})
}
