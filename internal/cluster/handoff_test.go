package cluster

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/workload"
)

// TestHandoffDiagramMatchesDocs: the state diagram in docs/handoff.md
// lists exactly the code's edges.
func TestHandoffDiagramMatchesDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/handoff.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "```mermaid")
	if start < 0 {
		t.Fatal("docs/handoff.md has no mermaid diagram")
	}
	end := strings.Index(text[start+3:], "```")
	block := text[start : start+3+end]
	re := regexp.MustCompile(`(?m)^\s*(\S+)\s*-->\s*(\S+)\s*$`)
	var got []string
	for _, m := range re.FindAllStringSubmatch(block, -1) {
		if m[1] == "[*]" || m[2] == "[*]" {
			continue
		}
		got = append(got, strings.ReplaceAll(m[1], "_", "-")+" -> "+strings.ReplaceAll(m[2], "_", "-"))
	}
	var want []string
	for _, e := range edges {
		want = append(want, e.from.String()+" -> "+e.to.String())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("docs/handoff.md edges differ from the code's edge table\ndocs: %v\ncode: %v", got, want)
	}
}

func TestHandoffStateNames(t *testing.T) {
	seen := map[string]bool{}
	for st := hstate(0); st < numHStates; st++ {
		n := st.String()
		if n == "" || strings.HasPrefix(n, "hstate(") || seen[n] {
			t.Errorf("state %d has name %q", st, n)
		}
		seen[n] = true
	}
	if got := hstate(200).String(); got != "hstate(200)" {
		t.Errorf("unknown state prints %q", got)
	}
}

// TestTransitionRefusesIllegalEdges: every pair of states not in the
// table is refused with an error naming the request and both states; the
// legal ones are accepted and timestamped.
func TestTransitionRefusesIllegalEdges(t *testing.T) {
	ps := pdSetup{prefill: 1, decode: 1, pBlocks: 100, dBlocks: 100, seqs: 4, budget: 256, bw: 1e9, kvPerToken: 1, pred: linear{base: 1}}
	sim, _ := ps.build(t, nil)
	for from := hstate(0); from < numHStates; from++ {
		for to := hstate(0); to < numHStates; to++ {
			h := testHand(workload.Request{ID: 7, InputTokens: 32}, handCore{st: from, since: 10, d: -1})
			err := sim.transition(h, to, 1, 20)
			if legal[from][to] {
				if err != nil || h.st != to || h.since != 20 {
					t.Errorf("%s -> %s: legal edge refused or not timestamped: %v (state %s since %d)", from, to, err, h.st, h.since)
				}
				sim.pd.queuedBlocks[1], sim.pd.demand = 0, 0
				continue
			}
			var te *TransitionError
			if !errors.As(err, &te) {
				t.Fatalf("%s -> %s: illegal edge accepted (err %v)", from, to, err)
			}
			if msg := err.Error(); !strings.Contains(msg, "request 7") || !strings.Contains(msg, from.String()+" -> "+to.String()) {
				t.Errorf("error does not name the request and both states: %s", msg)
			}
		}
	}
	h := testHand(workload.Request{ID: 8}, handCore{st: hQueued, since: 50, d: 1})
	if err := sim.transition(h, hTransfer, 1, 40); err == nil {
		t.Error("a transition back in time was accepted")
	}
}

// TestCheckerCatchesLeakedReservation: a decode reservation no handoff
// owns (the defect-2 leak) fails the consistency check.
func TestCheckerCatchesLeakedReservation(t *testing.T) {
	ps := pdSetup{prefill: 1, decode: 1, pBlocks: 100, dBlocks: 100, seqs: 4, budget: 256, bw: 1e9, kvPerToken: 1,
		pred: perf.Predictor(linear{base: 1})}
	sim, _ := ps.build(t, nil)
	if err := sim.checkPD(); err != nil {
		t.Fatalf("fresh simulation fails the check: %v", err)
	}
	d := sim.Engines()[1]
	req := workload.Request{ID: 42, InputTokens: 64, OutputTokens: 4}
	d.Enqueue(&req, metrics.NewRecord(42, 0), 0)
	if err := sim.checkPD(); err == nil || !strings.Contains(err.Error(), "admission queue") {
		t.Fatalf("an orphan admission-queue entry was not reported: %v", err)
	}
	if res, err := d.Reserve(0, false, nil); len(res) != 1 || err != nil {
		t.Fatalf("injected reservation not made: %v (%v)", res, err)
	}
	err := sim.checkPD()
	if err == nil || !strings.Contains(err.Error(), "leaked reservation") {
		t.Fatalf("a leaked reservation was not reported: %v", err)
	}
}

// TestCheckerCatchesInconsistentResources: a handoff whose tracked
// resources contradict its state fails the check, naming the state.
func TestCheckerCatchesInconsistentResources(t *testing.T) {
	ps := pdSetup{prefill: 1, decode: 1, pBlocks: 100, dBlocks: 100, seqs: 4, budget: 256, bw: 1e9, kvPerToken: 1, pred: linear{base: 1}}
	sim, _ := ps.build(t, nil)
	sim.pd.hands.put(5, testHand(workload.Request{ID: 5}, handCore{st: hDecoding, d: 1, holds: holdPinned, pSlot: -1, dSlot: -1}))
	err := sim.checkPD()
	if err == nil || !strings.Contains(err.Error(), "request 5 in handoff state decoding") {
		t.Fatalf("pinned KV in state decoding not reported: %v", err)
	}
}

// TestStallReportNamesStates: the stall report names handoff and engine
// states, never numbers.
func TestStallReportNamesStates(t *testing.T) {
	ps := pdSetup{prefill: 1, decode: 1, pBlocks: 100, dBlocks: 100, seqs: 4, budget: 256, bw: 1e9, kvPerToken: 1, pred: linear{base: 1}}
	sim, _ := ps.build(t, nil)
	d := sim.Engines()[1]
	req := workload.Request{ID: 5, InputTokens: 64, OutputTokens: 4}
	slot := d.Enqueue(&req, metrics.NewRecord(5, 0), 0)
	sim.pd.hands.put(5, testHand(req, handCore{st: hQueued, p: 0, d: 1, pSlot: -1, dSlot: slot}))
	got := sim.describe()
	for _, want := range []string{"queued 1 (first: request 5", "decode 1 (handoff-queued)", "instance 1 decode"} {
		if !strings.Contains(got, want) {
			t.Errorf("stall report lacks %q:\n%s", want, got)
		}
	}
}

// testHand is a hand with core c and request req and a body of its own,
// as newHand makes them.
func testHand(req workload.Request, c handCore) *hand {
	c.id = req.ID
	return &hand{handCore: c, handBody: &handBody{req: req}}
}
