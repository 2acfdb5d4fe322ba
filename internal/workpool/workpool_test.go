package workpool

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// TestOrderAndPanics: results come back in job order whatever the number
// of workers; a panicking job becomes that job's *PanicError and the other
// jobs complete.
func TestOrderAndPanics(t *testing.T) {
	for _, workers := range []int{1, 2, 7, 0} {
		var got []int
		var errs []int
		err := Run(context.Background(), workers, Count(50),
			func(_ context.Context, i int) (int, error) {
				if i%10 == 3 {
					panic("boom")
				}
				return i * i, nil
			},
			func(i, v int, err error) error {
				got = append(got, i)
				if err != nil {
					var pe *PanicError
					if !errors.As(err, &pe) || pe.Job != i || !strings.Contains(err.Error(), "boom") || strings.Contains(err.Error(), "\n") {
						t.Errorf("job %d: error %v is not a one-line *PanicError", i, err)
					}
					errs = append(errs, i)
				} else if v != i*i {
					t.Errorf("job %d: value %d", i, v)
				}
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Collect(Count(50))
		if !slices.Equal(got, want) {
			t.Fatalf("workers %d: order %v", workers, got)
		}
		if !slices.Equal(errs, []int{3, 13, 23, 33, 43}) {
			t.Fatalf("workers %d: panics reported for %v", workers, errs)
		}
	}
}

// TestCancel: cancelling stops handing out jobs, running jobs see the
// context, and Run returns context.Canceled.
func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var started atomic.Int64
	err := Run(ctx, 2, Count(1000),
		func(ctx context.Context, i int) (int, error) {
			if started.Add(1) == 5 {
				cancel()
			}
			check := Interrupt(ctx)
			for !check() && i >= 4 { // a long job that polls like the simulation
			}
			return i, nil
		},
		func(int, int, error) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if n := started.Load(); n > 8 {
		t.Fatalf("%d jobs started after the cancel at the 5th", n)
	}
}

// TestEmitError: an error from emit stops the pool and is returned.
func TestEmitError(t *testing.T) {
	stop := errors.New("disk full")
	n := 0
	err := Run(context.Background(), 3, Count(100),
		func(_ context.Context, i int) (int, error) { return i, nil },
		func(i, _ int, _ error) error {
			n++
			if i == 10 {
				return stop
			}
			return nil
		})
	if !errors.Is(err, stop) || n != 11 {
		t.Fatalf("err %v after %d emits; want disk full after 11", err, n)
	}
}

// TestInterruptNil: without a cancellable context there is nothing to poll.
func TestInterruptNil(t *testing.T) {
	if Interrupt(context.Background()) != nil {
		t.Fatal("want a nil check for a context that is never done")
	}
}
