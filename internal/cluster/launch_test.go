package cluster

import (
	"errors"
	"fmt"
	"testing"
)

// TestLaunchErrorAsSchedule: launched pushes without schedule, and its
// error for a refused event reads and unwraps as schedule's wrapped in
// the instance's.
func TestLaunchErrorAsSchedule(t *testing.T) {
	base := errors.New("des: event kind 1 scheduled at 5 ns, before the current time 9 ns")
	for _, what := range []string{"step", "pipeline stage"} {
		got := launchError(3, what, base)
		want := fmt.Errorf("instance %d %s: %w", 3, what, fmt.Errorf("cluster: %w", base))
		if got.Error() != want.Error() || !errors.Is(got, base) {
			t.Fatalf("launchError %q, want %q wrapping the queue's error", got, want)
		}
	}
}
