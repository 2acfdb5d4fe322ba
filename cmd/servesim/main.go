// Command servesim simulates LLM serving clusters: it predicts TTFT, TPOT,
// end-to-end latency, throughput and memory behaviour of vLLM-style engines
// on a workload, and validates its predictions against measured vLLM runs.
//
// Exit codes: 0 success; 1 internal error (a bug: please report it);
// 2 bad input (the message names the file:line or field and the fix);
// 3 the run was stopped by the eager handoff policy (a decode instance was
// out of memory at a handoff; the report says which request and instance).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/servesim/servesim/internal/cluster"
)

// inputError marks errors caused by the user's input: exit code 2.
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

func badInput(err error) error {
	if err == nil {
		return nil
	}
	return inputError{err}
}

func main() {
	os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs the command line and returns the exit code. Errors are
// printed on stderr as one line.
func execute(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "servesim: "+oneLine(err.Error()))
	var ie inputError
	if errors.As(err, &ie) || isUsageError(err) {
		return 2
	}
	var stop *cluster.StopReport
	if errors.As(err, &stop) {
		return 3
	}
	return 1
}

// oneLine joins a multi-part error (errors.Join puts each on its own line)
// into one line.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}
