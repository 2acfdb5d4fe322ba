package runner

import (
	"errors"
	"testing"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/config"
)

// TestInterruptReachesTheEventLoop: the interrupt check is polled every
// 1,024 events; when it reports true the run stops with
// cluster.ErrInterrupted at that check.
func TestInterruptReachesTheEventLoop(t *testing.T) {
	s, err := config.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	b, err := assemble.Build(s, config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	_, err = Run(b, Options{Interrupt: func() bool { calls++; return calls == 2 }})
	if !errors.Is(err, cluster.ErrInterrupted) || calls != 2 {
		t.Fatalf("err %v after %d checks; want cluster.ErrInterrupted after 2", err, calls)
	}
	// Without an interrupt the same run completes (2,709 events: `servesim run --max-events 2708` hits the limit). A
	// Built is used once: build it again.
	if b, err = assemble.Build(s, config.Source{}); err != nil {
		t.Fatal(err)
	}
	calls = 0
	res, err := Run(b, Options{Interrupt: func() bool { calls++; return false }})
	if err != nil || res.Finished != 300 || calls != 2 {
		t.Fatalf("err %v, finished %d, %d checks; want nil, 300, 2 (2,709 events / 1,024)", err, res.Finished, calls)
	}
}

// buildYAML parses the scenario document y (named name in errors) and
// builds it.
func buildYAML(t *testing.T, name, y string) *assemble.Built {
	t.Helper()
	s, err := config.Parse([]byte(y), name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := assemble.Build(s, config.Source{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}
