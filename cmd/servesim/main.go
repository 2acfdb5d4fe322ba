// Command servesim simulates LLM serving clusters: it predicts TTFT, TPOT,
// end-to-end latency, throughput and memory behaviour of vLLM-style engines
// on a workload, and validates its predictions against measured vLLM runs.
//
// Exit codes (docs/cli.md): 0 success; 1 internal error (a bug: please
// report it); 2 usage error or bad input (the message names the file:line
// or field and the fix); 3 the run was stopped by the eager handoff policy
// (a decode instance was out of memory at a handoff; the report says which
// request and instance); 130 interrupted by SIGINT or SIGTERM; 141 an
// output's reader closed its pipe (e.g. "| head"), silently, as a program
// killed by SIGPIPE.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

func main() {
	os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs the command line and returns the exit code. Errors are
// printed on stderr as one line.
func execute(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		// A panic is a bug: one line with the first frames, exit code 1.
		if r := recover(); r != nil {
			frames := strings.Fields(string(debug.Stack()))
			frames = frames[:min(len(frames), 16)]
			fmt.Fprintf(stderr, "servesim: internal error (a bug, please report it): %v [%s]\n", r, strings.Join(frames, " "))
			code = exitInternal
		}
	}()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	line, code := errorLine(err)
	if code != exitBrokenPipe {
		// A closed pipe is the reader's choice ("| head -1"), not an error
		// to report: the command stops quietly, as the tools of a shell do.
		fmt.Fprintln(stderr, line)
	}
	return code
}

// errorLine is the one line printed for a command's error, and its exit
// code. An interrupt says "interrupted", as docs/cli.md promises, even
// where the command's own message only says "context canceled".
func errorLine(err error) (string, int) {
	msg, code := oneLine(err.Error()), exitCode(err)
	if code == exitInterrupted && !strings.Contains(msg, "interrupted") {
		msg = "interrupted: " + msg
	}
	return "servesim: " + msg, code
}

// oneLine joins a multi-part error (errors.Join puts each on its own line)
// into one line.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}
