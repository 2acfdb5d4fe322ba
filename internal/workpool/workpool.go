// Package workpool runs independent jobs (sweep points, compared policies,
// searched splits) on a fixed number of goroutines, the only parallelism in
// servesim: each job is one single-threaded, deterministic simulation.
//
// Results are handed back in job order from the caller's goroutine, so the
// output does not depend on the number of workers. A job that panics is
// recovered and reported as that job's error (a *PanicError); the other
// jobs complete. Cancelling the context stops handing out jobs; running
// jobs see the context (see Interrupt) and the pool returns ctx.Err().
package workpool

import (
	"context"
	"fmt"
	"iter"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// PanicError is a job's recovered panic.
type PanicError struct {
	Job   int
	Value any
	Stack string
}

func (e *PanicError) Error() string {
	// One line: the first frames of the stack locate the bug.
	frames := strings.Fields(e.Stack)
	if len(frames) > 12 {
		frames = frames[:12]
	}
	return fmt.Sprintf("internal error (a bug, please report it): job %d panicked: %v [%s]", e.Job, e.Value, strings.Join(frames, " "))
}

// Run calls job(ctx, i) for every i of jobs on workers goroutines (<= 0:
// GOMAXPROCS) and emit(i, result, err) for each, in the order of jobs,
// from the calling goroutine. An error returned by emit stops the pool and
// is returned. When ctx is cancelled no new job starts, the results of
// jobs that completed before are still emitted in order up to the first
// missing one, and Run returns ctx.Err().
func Run[T any](ctx context.Context, workers int, jobs iter.Seq[int],
	job func(ctx context.Context, i int) (T, error), emit func(i int, v T, err error) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		seq int // position in jobs
		i   int
		v   T
		err error
	}
	type task struct{ seq, i int }
	tasks := make(chan task)
	results := make(chan result, workers)
	go func() {
		defer close(tasks)
		seq := 0
		for i := range jobs {
			select {
			case tasks <- task{seq, i}:
				seq++
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range tasks {
				v, err := call(ctx, t.i, job)
				if ctx.Err() != nil {
					return // cancelled: the job may have stopped part-way
				}
				select {
				case results <- result{t.seq, t.i, v, err}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()

	pending := map[int]result{}
	next := 0
	var emitErr error
	for r := range results {
		if emitErr != nil {
			continue // drain
		}
		pending[r.seq] = r
		for {
			p, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if err := emit(p.i, p.v, p.err); err != nil {
				emitErr = err
				cancel()
				break
			}
		}
	}
	if emitErr != nil {
		return emitErr
	}
	return ctx.Err()
}

// call runs one job, turning a panic into a *PanicError.
func call[T any](ctx context.Context, i int, job func(context.Context, int) (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Job: i, Value: r, Stack: string(debug.Stack())}
		}
	}()
	return job(ctx, i)
}

// Interrupt returns a check for runner.Options.Interrupt that reports
// whether ctx is done: the simulation polls it every few thousand events.
func Interrupt(ctx context.Context) func() bool {
	done := ctx.Done()
	if done == nil {
		return nil
	}
	return func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
}

// Count returns the sequence 0, 1, ..., n-1.
func Count(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
}
