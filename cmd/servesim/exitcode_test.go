package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/workload"
)

// TestExitCodes: the exit code follows the error's type, wrapped or not
// (docs/cli.md has the same table).
func TestExitCodes(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("sweep: point 3: %w", err) }
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"success", nil, 0},
		{"internal", errors.New("cluster: invariant violated"), 1},
		{"bad input", wrap(badInput(errors.New("engine.max_num_seqs: must be > 0"))), 2},
		{"usage", usageError{errors.New("unknown flag: --x")}, 2},
		{"trace line", wrap(&workload.LineError{Name: "t.jsonl", Line: 3, Msg: "bad"}), 2},
		{"workload setting", wrap(&workload.InputError{Err: errors.New("arrival overflows")}), 2},
		{"eager stop", wrap(&cluster.StopReport{Request: 1}), 3},
		{"disk full", fmt.Errorf("output: %w", &os.PathError{Op: "write", Path: "r.csv", Err: syscall.ENOSPC}), 2},
		{"read-only output", fmt.Errorf("output: %w", &os.PathError{Op: "open", Path: "r.csv", Err: syscall.EROFS}), 2},
		{"interrupted (context)", wrap(context.Canceled), 130},
		{"interrupted (simulation)", wrap(cluster.ErrInterrupted), 130},
		{"broken pipe", fmt.Errorf("output: %w", &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}), 141},
	}
	for _, tc := range tests {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("%s: exit code %d, want %d", tc.name, got, tc.want)
		}
		// An interrupt's line says so, whatever the command wrote.
		if tc.err != nil && tc.want == 130 {
			if line, code := errorLine(tc.err); code != 130 || !strings.Contains(line, "interrupted") {
				t.Errorf("%s: printed %q (exit %d)", tc.name, line, code)
			}
		}
	}
}

// TestUsageErrorsByType: command-line mistakes exit 2 through typed
// errors (no message matching).
func TestUsageErrorsByType(t *testing.T) {
	for _, args := range [][]string{
		{"frobnicate"},
		{"run", "extra-argument"},
		{"run", "--frobnicate"},
		{"run", "--max-events"},
		{"run", "--max-events", "many"},
		{"convert", "llmservingsim"},
		{"merge", "one.csv"},
		{"merge", "-o", "one.csv"},
	} {
		code, _, stderr := run(t, args...)
		if code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, stderr)
		}
	}
	if code, stdout, _ := run(t); code != 0 || !strings.Contains(stdout, "Exit codes:") {
		t.Errorf("no arguments: exit %d; want 0 and the help with the exit codes", code)
	}
}

// TestMain lets a test run the command in a child process (to send it a
// real signal): SERVESIM_MAIN=1 makes the test binary act as servesim.
func TestMain(m *testing.M) {
	if os.Getenv("SERVESIM_MAIN") == "1" {
		os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestSweepSIGTERM: SIGTERM while a point is simulating stops the sweep
// promptly with exit code 130, one line on stderr, and no file left behind
// (neither the results nor the temporary file).
func TestSweepSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	grid := write(t, dir, "grid.yaml", "workload.synthetic: {requests: 200000, arrival: {kind: poisson, rate: 50}, input: {kind: fixed, mean: 500}, output: {kind: fixed, mean: 200}}\nseed: [1, 2, 3]\n")
	out := filepath.Join(dir, "results.csv")
	cmd := exec.Command(os.Args[0], "sweep", "--grid", grid, "-o", out, "--workers", "1", "-q")
	cmd.Env = append(os.Environ(), "SERVESIM_MAIN=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The temporary output exists once the signal handler is installed.
	deadline := time.Now().Add(30 * time.Second)
	for {
		tmps, _ := filepath.Glob(filepath.Join(dir, ".results.csv.*.tmp"))
		if len(tmps) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the sweep never created its temporary output")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // let the first point's simulation start
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	took := time.Since(sent)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want code 130; stderr: %s", err, stderr.String())
	}
	if took > 5*time.Second {
		t.Errorf("the sweep took %v to stop after SIGTERM", took)
	}
	if msg := stderr.String(); strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "interrupted") {
		t.Errorf("stderr %q, want one line saying it was interrupted", msg)
	}
	left, _ := os.ReadDir(dir)
	for _, e := range left {
		if e.Name() != "grid.yaml" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}
