package cluster

import (
	"errors"
	"fmt"
	"strings"
)

// holding is what a handoff holds besides its state and its push-buffer
// blocks: where its KV is and which copies of it are under way, one bit
// each. It belongs to the handoff's state machine: check says which
// holdings each state allows, and transition drops what a state cannot
// keep.
type holding uint8

// Holdings.
const (
	// holdPinned: the KV is pinned on the prefill instance.
	holdPinned holding = 1 << iota
	// holdSpilled (push): the KV is in the decode host's memory.
	holdSpilled
	// holdOffloading (pull): the pinned KV is being copied to the
	// prefill host's memory.
	holdOffloading
	// holdOffloaded (pull): the KV is in the prefill host's memory (no
	// longer pinned).
	holdOffloaded
	// holdOffWait (pull): its offload waits in its node's deferred queue
	// for host memory.
	holdOffWait
	// holdStreaming (reserve): the KV stream is on the link.
	holdStreaming
	// holdStreamDone (reserve): the KV stream has arrived.
	holdStreamDone
)

var holdingNames = [...]string{"pinned", "spilled", "offloading", "offloaded", "offload-wait", "streaming", "stream-done"}

// has reports whether x holds every bit of y.
func (x holding) has(y holding) bool { return x&y == y }

// set adds y to x.
func (x *holding) set(y holding) { *x |= y }

// drop removes y from x.
func (x *holding) drop(y holding) { *x &^= y }

// String names the holdings, joined by "+" ("none" for none).
func (x holding) String() string {
	if x == 0 {
		return "none"
	}
	var names []string
	for i, n := range holdingNames {
		if x.has(1 << i) {
			names = append(names, n)
		}
	}
	return strings.Join(names, "+")
}

// check reports holdings x that state st does not allow, with bufBlocks
// push-buffer blocks held on the decode instance.
func (x holding) check(st hstate, bufBlocks int) error {
	pinned := x.has(holdPinned)
	away := x.has(holdSpilled) || x.has(holdOffloaded) // KV in host memory
	buffered := bufBlocks > 0 || away
	switch {
	case bufBlocks > 0 && x.has(holdSpilled) || x.has(holdSpilled|holdOffloaded):
		return fmt.Errorf("KV in two places: %s with %d buffer blocks", x, bufBlocks)
	case x.has(holdOffWait) && (st != hQueued || !pinned || x.has(holdOffloading) || x.has(holdOffloaded)):
		return fmt.Errorf("offload waiting for host memory while %s in state %s", x, st)
	case x.has(holdOffloading) && !pinned:
		return errors.New("KV being offloaded to host but not pinned")
	}
	var ok bool
	switch st {
	case hPrefilling, hAwaitReserve, hReservedPrefill:
		ok = !pinned && !buffered
	case hDecoding:
		ok = !pinned && !buffered && !x.has(holdStreaming)
	case hPushing:
		ok = pinned && buffered
	case hQueued:
		ok = pinned != buffered
	case hTransfer:
		ok = pinned != away && bufBlocks == 0
	default:
		return fmt.Errorf("state %s not allowed in flight", st)
	}
	if !ok {
		return fmt.Errorf("inconsistent resources in state %s: %s, %d buffer blocks", st, x, bufBlocks)
	}
	if x.has(holdStreaming) && st != hReservedPrefill && st != hTransfer {
		return errors.New("KV stream on the link in a state without a reservation")
	}
	return nil
}
