package randgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/runner"
)

// Failure classes reported by Check.
const (
	ClassStall       = "stall"            // run ended with requests that never ended
	ClassLivelock    = "livelock"         // event budget exhausted
	ClassHang        = "hang"             // wall-clock backstop hit inside one event
	ClassPanic       = "panic"            // the run panicked
	ClassError       = "error"            // the run returned another error
	ClassOutcomes    = "outcomes"         // outcomes do not add up to the workload
	ClassTimestamps  = "timestamps"       // a record's times are out of order
	ClassTime        = "time-backwards"   // the simulated clock went backwards
	ClassDeterminism = "nondeterministic" // two runs differ
	ClassEagerUnfit  = "eager-unfit-stop" // eager stopped on an instance the request never fits
	ClassLane        = "lane-differs"     // outputs differ with the decode lane, tails or steady runs off
)

// Options bound and extend one check.
type Options struct {
	// MaxEvents is the event budget of one run (0: DefaultMaxEvents).
	MaxEvents int64
	// Timeout is the wall-clock backstop for a run stuck inside a single
	// event, where the event budget cannot see it (0: DefaultTimeout).
	Timeout time.Duration
	// Determinism runs the scenario twice with every output on and
	// compares the outputs byte for byte.
	Determinism bool
	// NoLane is Determinism with the second run's engines visiting every
	// request in every step and naming every KV block, and every step end
	// going through the event queue (engine.Config.NoDecodeLane and
	// NoAnonymousTails, cluster.Config.NoSteadyRuns): the decode lane,
	// the anonymous tails and the steady runs must not change any output.
	NoLane bool
	// NoSteady is Determinism with the second run's steady runs alone
	// off (cluster.Config.NoSteadyRuns).
	NoSteady bool
}

// Defaults of Options.
const (
	DefaultMaxEvents = 1_000_000
	DefaultTimeout   = 2 * time.Minute
)

// Result is the verdict of one check.
type Result struct {
	// Skipped is non-empty when the scenario is not runnable input: the
	// validator or the build refused it (the reason, one line).
	Skipped string
	// Failure is nil when the run kept its contract.
	Failure *Failure
	// Events is the number of events of the (first) run.
	Events int64
}

// Failure is a broken contract.
type Failure struct {
	Class  string
	Detail string
}

func (f *Failure) Error() string { return f.Class + ": " + f.Detail }

func fail(class, format string, args ...any) *Failure {
	return &Failure{Class: class, Detail: fmt.Sprintf(format, args...)}
}

// Write stores c in dir as name.yaml and name.jsonl (the scenario refers to
// its trace by that name) and returns the scenario's path.
func (c Case) Write(dir, name string) (string, error) {
	trace := name + ".jsonl"
	scen := strings.Replace(c.Scenario, "trace: "+strconv.Quote(c.TraceFile), "trace: "+strconv.Quote(trace), 1)
	if err := os.WriteFile(filepath.Join(dir, trace), []byte(c.Trace), 0o644); err != nil {
		return "", fmt.Errorf("randgen: write trace: %w", err)
	}
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(scen), 0o644); err != nil {
		return "", fmt.Errorf("randgen: write scenario: %w", err)
	}
	return path, nil
}

// CountRequests counts the requests of a JSONL trace, a session's
// sub-requests included, independently of the workload reader.
func CountRequests(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("randgen: %w", err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l struct {
			SubRequests []json.RawMessage `json:"sub_requests"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return 0, fmt.Errorf("randgen: %s:%d: %w", path, line, err)
		}
		if l.SubRequests != nil {
			n += len(l.SubRequests)
		} else {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("randgen: %s: %w", path, err)
	}
	return n, nil
}

// CheckFile runs the scenario file at path the way `servesim run` does and
// checks the run's contract: it ends within the event budget; it returns
// no error (or, under the eager policy, the documented stop); the outcomes
// add up to requests (the workload's size, sub-requests included) with one
// record per request; every record's times are ordered; the clock never
// goes backwards; and, with opts.Determinism, a second run writes
// byte-identical outputs. Invariant checks are whatever the scenario sets
// (generated scenarios set check_invariants).
func CheckFile(path string, requests int, opts Options) Result {
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = DefaultMaxEvents
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	s, src, err := config.Load(path)
	if err != nil {
		return Result{Skipped: "invalid: " + oneLine(err)}
	}
	built, err := assemble.Build(s, src)
	if err != nil {
		return Result{Skipped: "build: " + oneLine(err)}
	}
	var out [2]runOutput
	runs := 1
	differs := ClassDeterminism
	if opts.NoLane || opts.NoSteady {
		opts.Determinism, differs = true, ClassLane
	}
	if opts.Determinism {
		runs = 2
	}
	for i := 0; i < runs; i++ {
		if i > 0 {
			// A fresh build: engines carry state from the first run.
			if built, err = assemble.Build(s, src); err != nil {
				return Result{Failure: fail(ClassDeterminism, "second build failed: %v", err)}
			}
			if opts.NoLane {
				built = built.WithoutDecodeLane().WithoutAnonymousTails()
			}
			if opts.NoLane || opts.NoSteady {
				built = built.WithoutSteadyRuns()
			}
		}
		dir := ""
		if opts.Determinism {
			if dir, err = os.MkdirTemp("", "randgen-run"); err != nil {
				return Result{Failure: fail(ClassError, "temp dir: %v", err)}
			}
			defer os.RemoveAll(dir)
		}
		out[i] = runBounded(built, s.Handoff.Policy, requests, dir, opts)
		if out[i].failure != nil {
			return Result{Failure: out[i].failure, Events: out[0].events}
		}
	}
	if opts.Determinism {
		if out[0].summary != out[1].summary {
			return Result{Failure: fail(differs, "summaries differ:\n%s\n----\n%s", out[0].summary, out[1].summary)}
		}
		for name, a := range out[0].files {
			if !bytes.Equal(a, out[1].files[name]) {
				return Result{Failure: fail(differs, "%s differs between two runs of the same scenario", name)}
			}
		}
	}
	return Result{Events: out[0].events}
}

// runOutput is what one bounded run produced.
type runOutput struct {
	failure *Failure
	events  int64
	summary string
	files   map[string][]byte
}

// errBudget is the panic value the event counter unwinds the run with.
type errBudget struct{ events int64 }

// counter is a runner.Sampler that counts events, checks that time never
// goes backwards and stops the run when the budget is spent.
type counter struct {
	events, max int64
	last        int64
	backwards   string
}

func (c *counter) Watch(int, metrics.SnapshotFunc) {}
func (c *counter) Close(int64)                     {}
func (c *counter) Advance(now int64) {
	if now < c.last && c.backwards == "" {
		c.backwards = fmt.Sprintf("event at %d ns after one at %d ns", now, c.last)
	}
	c.last = now
	c.events++
	if c.events > c.max {
		panic(errBudget{c.events})
	}
}

// runBounded runs built once under the event budget and the wall-clock
// backstop and checks its outcomes and records. With dir set, every output
// is written there and read back.
func runBounded(built *assemble.Built, policy config.HandoffPolicy, requests int, dir string, opts Options) runOutput {
	done := make(chan runOutput, 1)
	go func() { done <- runOnce(built, policy, requests, dir, opts) }()
	select {
	case o := <-done:
		return o
	case <-time.After(opts.Timeout):
		// The run is stuck inside one event (the event budget never
		// fires); its goroutine cannot be stopped and is abandoned.
		return runOutput{failure: fail(ClassHang, "no return within %v of wall-clock time", opts.Timeout)}
	}
}

func runOnce(built *assemble.Built, policy config.HandoffPolicy, requests int, dir string, opts Options) (o runOutput) {
	cnt := &counter{max: opts.MaxEvents, last: -1 << 62}
	defer func() { o.events = cnt.events }()
	seen := map[int64]bool{}
	var generated int64 // output tokens over the records
	var recErr *Failure
	ropts := runner.Options{Sampler: cnt, OnRecord: func(r *metrics.Record) {
		if seen[r.ID] && recErr == nil {
			recErr = fail(ClassOutcomes, "request %d ended twice", r.ID)
		}
		seen[r.ID] = true
		generated += int64(r.Generated)
		if recErr == nil {
			recErr = checkRecord(r)
		}
	}}
	if dir != "" {
		ropts.RequestsCSV = filepath.Join(dir, "requests.csv")
		ropts.RequestsJSONL = filepath.Join(dir, "requests.jsonl")
		ropts.Series = filepath.Join(dir, "timeseries.csv")
	}
	defer func() {
		if r := recover(); r != nil {
			if b, ok := r.(errBudget); ok {
				o = runOutput{failure: fail(ClassLivelock, "no end after %d events (simulated time %d ns, %d of %d requests ended)", b.events, cnt.last, len(seen), requests)}
				return
			}
			o = runOutput{failure: fail(ClassPanic, "%v\n%s", r, debug.Stack())}
		}
	}()
	res, err := runner.Run(built, ropts)
	var stop *cluster.StopReport
	stopped := errors.As(err, &stop)
	switch {
	case stopped && policy == config.PolicyEager:
		// The legacy policy's documented stop: a report, and no more
		// checks on a run that was cut short.
		if res.Stopped == "" {
			return runOutput{failure: fail(ClassError, "eager stop without a report in the summary: %v", err)}
		}
		// It may stop because the instance it chose is full now, never
		// because it chose one the request can never fit.
		if stop.Instance >= 0 && stop.Instance < built.NumInstances() {
			if c := built.Instance(stop.Instance).Engine.NumBlocks; stop.Needed > c {
				return runOutput{failure: fail(ClassEagerUnfit, "eager stopped on instance %d, which holds %d blocks in all, for a request needing %d: %v", stop.Instance, c, stop.Needed, err)}
			}
		}
		return runOutput{summary: res.String()}
	case err != nil && strings.Contains(err.Error(), "requests seen but"):
		return runOutput{failure: fail(ClassStall, "%s", oneLine(err))}
	case err != nil:
		return runOutput{failure: fail(ClassError, "%s", oneLine(err))}
	}
	if cnt.backwards != "" {
		return runOutput{failure: fail(ClassTime, "%s", cnt.backwards)}
	}
	if recErr != nil {
		return runOutput{failure: recErr}
	}
	if sum := res.Finished + res.Rejected + res.Failed + res.Truncated; sum != int64(requests) || res.RequestsTotal != int64(requests) || len(seen) != requests {
		return runOutput{failure: fail(ClassOutcomes, "workload has %d requests; summary total %d = finished %d + rejected %d + failed %d + truncated %d (sum %d); %d distinct records",
			requests, res.RequestsTotal, res.Finished, res.Rejected, res.Failed, res.Truncated, sum, len(seen))}
	}
	if res.OutputTokens != generated {
		return runOutput{failure: fail(ClassOutcomes, "summary output tokens %d, but the records generated %d", res.OutputTokens, generated)}
	}
	o = runOutput{summary: res.String()}
	if dir != "" {
		o.files = map[string][]byte{}
		for _, name := range []string{"requests.csv", "requests.jsonl", "timeseries.csv"} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return runOutput{failure: fail(ClassError, "read output: %v", err)}
			}
			o.files[name] = b
		}
	}
	return o
}

// checkRecord checks one terminal record: times that happened are ordered
// arrival <= queued <= scheduled <= first token <= last token, a transfer
// ends after it starts, and a finished request produced all its tokens.
func checkRecord(r *metrics.Record) *Failure {
	chain := []struct {
		name string
		at   int64
	}{{"arrival", r.Arrival}, {"queued", r.Queued}, {"scheduled", r.Scheduled}, {"first_token", r.FirstToken}, {"last_token", r.LastToken}}
	prev := -1
	for i, c := range chain {
		if c.at < 0 {
			continue
		}
		if prev >= 0 && c.at < chain[prev].at {
			return fail(ClassTimestamps, "request %d: %s %d ns before %s %d ns (reprefills %d, outcome %s)",
				r.ID, c.name, c.at, chain[prev].name, chain[prev].at, r.Reprefills, r.Outcome)
		}
		prev = i
	}
	if r.TransferStart >= 0 && r.TransferEnd >= 0 && r.TransferEnd < r.TransferStart {
		return fail(ClassTimestamps, "request %d: transfer ends at %d ns before it starts at %d ns", r.ID, r.TransferEnd, r.TransferStart)
	}
	if r.Outcome == metrics.Finished && (r.Generated != r.OutputTokens || r.FirstToken < 0 || r.LastToken < 0) {
		return fail(ClassOutcomes, "request %d finished with %d of %d tokens (first %d, last %d)", r.ID, r.Generated, r.OutputTokens, r.FirstToken, r.LastToken)
	}
	if r.Outcome != metrics.Finished && r.Outcome != metrics.Rejected && r.Outcome != metrics.Failed && r.Outcome != metrics.Truncated {
		return fail(ClassOutcomes, "request %d ended with outcome %d", r.ID, r.Outcome)
	}
	if r.Outcome == metrics.Truncated && (r.Reason != "limit: never arrived" || r.Generated != 0 || r.Scheduled >= 0) {
		return fail(ClassOutcomes, "request %d truncated with reason %q, %d tokens generated, scheduled %d", r.ID, r.Reason, r.Generated, r.Scheduled)
	}
	// A request cut off by a limit keeps what it reached: its tokens
	// have a first-token time and never exceed its output length.
	if r.Generated < 0 || r.Generated > r.OutputTokens || (r.Generated > 0 && r.FirstToken < 0) {
		return fail(ClassOutcomes, "request %d (%s, %q): %d of %d tokens generated, first token %d", r.ID, r.Outcome, r.Reason, r.Generated, r.OutputTokens, r.FirstToken)
	}
	return nil
}

func oneLine(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
}
