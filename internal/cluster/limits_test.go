package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// endless is a workload of plain requests 1 ms apart that never ends; as
// a Counter it says how many remain (left), else it cannot count them.
type endless struct {
	id    int64
	count bool
	left  int64
}

func (s *endless) Next() (workload.Entry, error) {
	r := workload.Request{ID: s.id, Arrival: s.id * 1e6, InputTokens: 32, OutputTokens: 4}
	s.id++
	s.left--
	return workload.Entry{Requests: []workload.Request{r}}, nil
}

func (s *endless) Remaining() (int64, bool) { return s.left, s.count }

// countingObs is collect taking unread requests as a count.
type countingObs struct {
	collect
	unread int64
}

func (c *countingObs) TruncatedUnread(n int64) { c.unread += n }

// runBounded runs sim, failing the test when it does not return within
// a few seconds of wall time (the run would not end at all).
func runBounded(t *testing.T, sim *Sim) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := sim.Run()
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end within 20 s of wall time")
		return nil
	}
}

// TestLimitUnreadWorkload: at a limit, the rest of a workload too large
// to read is counted, not generated, when the source can count it (a
// generated workload) and the observer takes a count: 10 events in, 10^18
// requests end at once, every one counted once. A source that cannot
// count them is read entry by entry with the interrupt check polled, so
// an interrupt stops even an endless one.
func TestLimitUnreadWorkload(t *testing.T) {
	cfg := engine.Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 256, BlockSize: 16, NumBlocks: 64, ChunkedPrefill: true, CheckInvariants: true}
	const total = int64(1e18)

	obs := &countingObs{collect: collect{recs: map[int64]metrics.Record{}}}
	sim, err := New(Config{Engines: colocated(t, 1, cfg), Source: &endless{count: true, left: total}, Observer: obs, Limits: Limits{MaxEvents: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, sim); err != nil {
		t.Fatal(err)
	}
	terminal, seen := sim.Progress()
	if seen != total || terminal != total || int64(len(obs.recs))+obs.unread != total || obs.unread < total-20 {
		t.Errorf("seen %d, ended %d, %d records + %d counted; want %d in all, nearly all counted", seen, terminal, len(obs.recs), obs.unread, total)
	}

	calls := 0
	sim, err = New(Config{Engines: colocated(t, 1, cfg), Source: &endless{}, Observer: &collect{recs: map[int64]metrics.Record{}},
		Limits: Limits{MaxEvents: 10}, Interrupt: func() bool { calls++; return calls > 3 }})
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, sim); !errors.Is(err, ErrInterrupted) {
		t.Errorf("endless uncountable workload after the limit: %v, want %v", err, ErrInterrupted)
	}
}
