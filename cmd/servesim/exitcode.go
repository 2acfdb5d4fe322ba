package main

import (
	"context"
	"errors"
	"syscall"

	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/workload"
)

// Exit codes (docs/cli.md has the table; keep the package comment of
// main.go and the root command's help in step).
const (
	exitOK          = 0
	exitInternal    = 1   // a bug: please report it
	exitBadInput    = 2   // usage or input error: the message says what to fix
	exitStopped     = 3   // the eager handoff policy stopped the run
	exitInterrupted = 130 // SIGINT or SIGTERM stopped the command
	exitBrokenPipe  = 141 // an output's reader went away (128 + SIGPIPE, as a shell reports it)
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

// usageError marks a command-line mistake (unknown command or flag, wrong
// arguments): exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitCode maps an error to the exit code by its type, never its text.
func exitCode(err error) int {
	var (
		stop  *cluster.StopReport
		input inputError
		usage usageError
		line  *workload.LineError
		wl    *workload.InputError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &stop):
		return exitStopped
	case errors.Is(err, syscall.EPIPE):
		return exitBrokenPipe
	case errors.Is(err, context.Canceled), errors.Is(err, cluster.ErrInterrupted):
		return exitInterrupted
	case errors.As(err, &usage), errors.As(err, &input), errors.As(err, &line), errors.As(err, &wl):
		return exitBadInput
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT), errors.Is(err, syscall.EROFS):
		// An output that cannot be written (disk full, quota, read-only
		// file system) is the environment's, not a bug.
		return exitBadInput
	}
	return exitInternal
}
