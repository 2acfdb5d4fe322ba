package cluster

import (
	"strings"
	"testing"
)

// TestHoldingCheck: each handoff state allows exactly the holdings its
// protocol step leaves (docs/handoff.md), and check names what is wrong.
func TestHoldingCheck(t *testing.T) {
	for _, tc := range []struct {
		st   hstate
		x    holding
		buf  int
		want string // "" for allowed
	}{
		{hPrefilling, 0, 0, ""},
		{hPrefilling, holdPinned, 0, "inconsistent resources"},
		{hAwaitReserve, 0, 0, ""},
		{hReservedPrefill, holdStreaming, 0, ""},
		{hReservedPrefill, holdStreamDone, 0, ""},
		{hReservedPrefill, holdOffloaded, 0, "inconsistent resources"},
		{hPushing, holdPinned, 4, ""},
		{hPushing, holdPinned | holdSpilled, 0, ""},
		{hPushing, holdPinned, 0, "inconsistent resources"},
		{hQueued, holdPinned, 0, ""},
		{hQueued, holdPinned | holdOffloading, 0, ""},
		{hQueued, holdPinned | holdOffWait, 0, ""},
		{hQueued, holdOffloaded, 0, ""},
		{hQueued, holdSpilled, 0, ""},
		{hQueued, 0, 4, ""},
		{hQueued, 0, 0, "inconsistent resources"},
		{hQueued, holdPinned, 4, "inconsistent resources"},
		{hQueued, holdOffloading, 0, "offloaded to host but not pinned"},
		{hQueued, holdOffloaded | holdOffWait, 0, "offload waiting"},
		{hTransfer, holdPinned, 0, ""},
		{hTransfer, holdPinned | holdStreaming, 0, ""},
		{hTransfer, holdSpilled, 0, ""},
		{hTransfer, holdPinned, 4, "inconsistent resources"},
		{hTransfer, holdSpilled | holdOffloaded, 0, "two places"},
		{hDecoding, 0, 0, ""},
		{hDecoding, holdStreaming, 0, "inconsistent resources"},
		{hDecoding, holdStreamDone, 0, ""},
		{hDecoding, holdOffWait, 0, "offload waiting"},
		{hPrefilling, holdSpilled, 4, "two places"},
		{hNew, 0, 0, "not allowed in flight"},
	} {
		err := tc.x.check(tc.st, tc.buf)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s holding %s, %d buffer blocks: %v, want allowed", tc.st, tc.x, tc.buf, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s holding %s, %d buffer blocks: %v, want an error containing %q", tc.st, tc.x, tc.buf, err, tc.want)
		}
	}
}

// TestHoldingSetDrop: set and drop change only their bits; String names
// them in order.
func TestHoldingSetDrop(t *testing.T) {
	var x holding
	if x.String() != "none" {
		t.Fatalf("zero holding %q, want none", x)
	}
	x.set(holdPinned)
	x.set(holdOffloading)
	if !x.has(holdPinned) || !x.has(holdOffloading) || x.has(holdSpilled) || x.String() != "pinned+offloading" {
		t.Fatalf("after two sets: %s", x)
	}
	x.drop(holdPinned)
	if x.has(holdPinned) || !x.has(holdOffloading) {
		t.Fatalf("after a drop: %s", x)
	}
	if got := len(holdingNames); holdStreamDone != 1<<(got-1) {
		t.Fatalf("%d holding names for the last bit %d", got, holdStreamDone)
	}
}
