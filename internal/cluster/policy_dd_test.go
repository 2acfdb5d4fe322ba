package cluster

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/workload"
)

// fakeSim is a handoffSim that records the steps a policy takes and
// answers them from a script, so that a policy runs alone, without a
// simulation: placement picks decode, a decode instance has a sequence
// slot when slotFree, a forced reservation fits when forceFits, the push
// receive buffer has bufFree blocks, a prompt is blocks blocks, the
// prefill queue is queueNs and the decode demand demand of capacity.
// Transitions follow the real edge table.
type fakeSim struct {
	log              []string
	cfg              PDConfig
	decode           int
	slotFree         bool
	forceFits        bool
	bufFree, blocks  int
	queueNs          float64
	demand, capacity float64
}

func (f *fakeSim) logf(format string, args ...any) {
	f.log = append(f.log, fmt.Sprintf(format, args...))
}

func (f *fakeSim) config() *PDConfig { return &f.cfg }

func (f *fakeSim) transition(h *hand, to hstate, d int, now int64) error {
	if !legal[h.st][to] {
		return &TransitionError{Request: h.id, From: h.st.String(), To: to.String(), At: now}
	}
	f.logf("transition %s -> %s on decode %d", h.st, to, d)
	h.st, h.d = to, d
	return nil
}

func (f *fakeSim) startPrefill(h *hand, now int64) error {
	f.logf("startPrefill on prefill %d", h.p)
	h.st = hPrefilling
	return nil
}

func (f *fakeSim) placeDecode(h *hand, exclude int) int {
	f.logf("placeDecode -> %d", f.decode)
	return f.decode
}

func (f *fakeSim) enqueueDecode(h *hand, d int, now int64) error {
	f.logf("enqueueDecode on %d", d)
	return f.transition(h, hQueued, d, now)
}

func (f *fakeSim) awaitReserve(h *hand, d int, now int64) {
	f.logf("awaitReserve on %d", d)
	h.dSlot = 0
}

func (f *fakeSim) reserve(d int, now int64) error {
	f.logf("reserve on %d", d)
	return nil
}

func (f *fakeSim) seqSlotFree(d int) bool {
	f.logf("seqSlotFree %d -> %t", d, f.slotFree)
	return f.slotFree
}

func (f *fakeSim) forceReserve(h *hand, now int64) (engine.Reservation, int, int, bool, error) {
	f.logf("forceReserve on %d -> fits %t", h.d, f.forceFits)
	if !f.forceFits {
		return engine.Reservation{}, f.blocks, f.blocks - 1, false, nil
	}
	return engine.Reservation{Slot: h.dSlot, ID: h.id, TransferBlocks: f.blocks}, 0, 0, true, nil
}

func (f *fakeSim) reserved(h *hand, res engine.Reservation, now int64) error {
	f.logf("reserved %d blocks", res.TransferBlocks)
	return f.transition(h, hTransfer, h.d, now)
}

func (f *fakeSim) stopRun(h *hand, needed, free int, now int64) error {
	f.logf("stopRun: %d blocks needed, %d free", needed, free)
	return &StopReport{Request: h.id, Instance: h.d, Needed: needed, Free: free, At: now}
}

func (f *fakeSim) pinPrefill(h *hand, now int64) {
	f.logf("pinPrefill")
	h.holds.set(holdPinned)
}

func (f *fakeSim) startStream(h *hand, now int64) error {
	f.logf("startStream")
	h.holds.set(holdStreaming)
	return nil
}

func (f *fakeSim) transferDone(h *hand, now int64) error {
	f.logf("transferDone")
	h.holds.drop(holdPinned)
	return f.transition(h, hDecoding, h.d, now)
}

func (f *fakeSim) promptBlocks(h *hand, d int) int { return f.blocks }

func (f *fakeSim) transferBytes(h *hand, d, blocks int) int64 { return int64(blocks) * 1000 }

func (f *fakeSim) localBlocks(h *hand, d, blocks int) int { return 0 }

func (f *fakeSim) takeBuffer(d, blocks int) bool {
	ok := f.bufFree >= blocks
	if ok {
		f.bufFree -= blocks
	}
	f.logf("takeBuffer %d blocks on %d -> %t", blocks, d, ok)
	return ok
}

func (f *fakeSim) startFlows(h *hand, now int64, bytes int64, rate float64) error {
	f.logf("startFlows %d bytes to %d (holds %s, %d buffer blocks)", bytes, h.d, h.holds, h.bufBlocks)
	return nil
}

func (f *fakeSim) reprefill(h *hand, now int64, why string) error {
	f.logf("reprefill: %s", why)
	h.holds, h.st, h.d = 0, hPrefilling, -1 // unpinned, queued again on its prefill instance
	return nil
}

func (f *fakeSim) failHand(h *hand, now int64, reason string) error {
	f.logf("failHand: %s", reason)
	h.holds, h.st = 0, hDone
	return nil
}

func (f *fakeSim) prefillQueueNs(p int) float64 { return f.queueNs }

func (f *fakeSim) decodeDemand(h *hand) (float64, float64) { return f.demand, f.capacity }

// TestPolicies runs the files in testdata/policy: each handoff policy
// alone on a fakeSim, printing the steps it takes. Regenerate with
// -rewrite.
//
//	policy name=pull|reserve|reject|push|eager [decode=N] [slot-free] [force-fits] [buf=N] [blocks=N]
//	       [spill] [push-buffer=N] [queue-ms=F] [max-queue-ms=F] [demand=F] [capacity=F] [max-kv=F]
//	start id=N | prefilled id=N | admission id=N     call the policy for request N
//	grant id=N | stream id=N | stream-done id=N      what the simulation does between calls (reserve)
func TestPolicies(t *testing.T) {
	datadriven.Walk(t, "testdata/policy", func(t *testing.T, path string) {
		var f *fakeSim
		var pol Policy
		hands := map[int]*hand{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd == "policy" {
				var err error
				f, pol, err = newFakePolicy(t, d)
				if err != nil {
					return "error: " + err.Error()
				}
				clear(hands)
				return "ok"
			}
			var id int
			d.ScanArgs(t, "id", &id)
			h := hands[id]
			if h == nil {
				h = testHand(workload.Request{ID: int64(id), InputTokens: 1000}, handCore{d: -1, pSlot: -1, dSlot: -1})
				hands[id] = h
			}
			f.log = f.log[:0]
			var err error
			switch d.Cmd {
			case "start":
				err = pol.start(f, h, 0)
			case "prefilled":
				h.holds.set(holdPinned) // as Sim.prefilled does before the policy
				err = pol.prefilled(f, h, 0)
			case "admission":
				adm, ok := pol.(admitter)
				if !ok {
					return "no admission control"
				}
				if why := adm.admission(f, h, 0); why != "" {
					f.logf("rejected: %s", why)
				} else {
					f.logf("admitted")
				}
			case "grant":
				err = f.transition(h, hReservedPrefill, h.d, 0)
			case "stream":
				h.holds.set(holdStreaming)
			case "stream-done":
				h.holds.drop(holdStreaming)
				h.holds.set(holdStreamDone)
			default:
				t.Fatalf("unknown command %q", d.Cmd)
			}
			var stop *StopReport
			switch {
			case errors.As(err, &stop):
				f.logf("run stopped: %v", err)
			case err != nil:
				f.logf("error: %v", err)
			default:
				f.logf("=> %s, decode %d, holds %s", h.st, h.d, h.holds)
				if h.st != hNew && h.st != hDone {
					if err := h.holds.check(h.st, h.bufBlocks); err != nil {
						f.logf("holdings not allowed: %v", err)
					}
				}
			}
			return strings.Join(f.log, "\n")
		})
	})
}

// newFakePolicy reads a policy command: the policy and the fake's script.
func newFakePolicy(t *testing.T, d *datadriven.TestData) (*fakeSim, Policy, error) {
	f := &fakeSim{blocks: 10, capacity: 1000}
	var name string
	d.ScanArgs(t, "name", &name)
	var pn PolicyName
	found := false
	for i, n := range Policies {
		if n == name {
			pn, found = PolicyName(i), true
		}
	}
	if !found {
		return nil, nil, fmt.Errorf("unknown policy %q", name)
	}
	pol, err := newPolicy(pn)
	if err != nil {
		return nil, nil, err
	}
	f.cfg.Policy = pn
	ints := map[string]*int{"decode": &f.decode, "buf": &f.bufFree, "blocks": &f.blocks}
	for k, p := range ints {
		if d.HasArg(k) {
			d.ScanArgs(t, k, p)
		}
	}
	floats := map[string]*float64{"demand": &f.demand, "capacity": &f.capacity, "max-kv": &f.cfg.MaxDecodeKVFraction}
	for k, p := range floats {
		if d.HasArg(k) {
			d.ScanArgs(t, k, p)
		}
	}
	var ms float64
	if d.HasArg("queue-ms") {
		d.ScanArgs(t, "queue-ms", &ms)
		f.queueNs = ms * 1e6
	}
	if d.HasArg("max-queue-ms") {
		d.ScanArgs(t, "max-queue-ms", &ms)
		f.cfg.MaxPrefillQueue = int64(ms * 1e6)
	}
	f.slotFree, f.forceFits, f.cfg.PushSpill = d.HasArg("slot-free"), d.HasArg("force-fits"), d.HasArg("spill")
	var pb int
	if d.HasArg("push-buffer") {
		d.ScanArgs(t, "push-buffer", &pb)
	}
	f.cfg.PushBufferBlocks = make([]int, f.decode+1)
	f.cfg.PushBufferBlocks[f.decode] = pb
	return f, pol, nil
}
