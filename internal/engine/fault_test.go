package engine

import (
	"testing"

	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// TestLoadFailedRecomputes: a reserved request whose KV failed to load
// gives back its reservation (the 100-token prompt held 7 blocks of 16)
// and waits, at the front, to compute its prompt on this instance; the
// next step computes all 100 prompt tokens and emits its first token.
func TestLoadFailedRecomputes(t *testing.T) {
	cfg := testConfig()
	cfg.Role = Decode
	cfg.MaxNumBatchedTokens = 256 // the whole prompt in one step
	e, err := New(0, cfg, fixedStep{base: 1000, perTok: 10})
	if err != nil {
		t.Fatal(err)
	}
	r := workload.Request{ID: 1, InputTokens: 100, OutputTokens: 3}
	slot := e.Enqueue(&r, metrics.NewRecord(1, 0), 0)
	res, err := e.Reserve(0, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || e.Reserved() != 1 || e.Pool().Used() != 7 {
		t.Fatalf("reserved %d (%d held), %d blocks used; want 1 request, 7 blocks", len(res), e.Reserved(), e.Pool().Used())
	}
	if err := e.LoadFailed(slot, 500); err != nil {
		t.Fatal(err)
	}
	if e.Reserved() != 0 || e.Pool().Used() != 0 || e.Waiting() != 1 || e.WaitingTokens() != 100 {
		t.Fatalf("after the failed load: %d reserved, %d blocks used, %d waiting (%d tokens)", e.Reserved(), e.Pool().Used(), e.Waiting(), e.WaitingTokens())
	}
	st, ok, err := e.Begin(500)
	if err != nil || !ok {
		t.Fatalf("no step formed (%v)", err)
	}
	out, err := e.FinishBatch(st.ID, st.End)
	if err != nil {
		t.Fatal(err)
	}
	if out.PromptTokens != 100 || len(out.First) != 1 || out.First[0] != 1 {
		t.Fatalf("step computed %d prompt tokens, first tokens %v; want the whole prompt and request 1's first token", out.PromptTokens, out.First)
	}
	if got := e.Record(slot).TransferEnd; got != 500 {
		t.Fatalf("transfer end %d, want the failure time 500", got)
	}
}

// TestResetEmpties: Reset drops every request, block and batch in flight,
// keeps the batch counter (a later batch has a larger id) and leaves an
// engine that serves again.
func TestResetEmpties(t *testing.T) {
	e, err := New(0, testConfig(), fixedStep{base: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r := workload.Request{ID: int64(i), InputTokens: 50, OutputTokens: 10}
		e.Add(&r, 0)
	}
	st, ok, err := e.Begin(0)
	if err != nil || !ok {
		t.Fatalf("no step formed (%v)", err)
	}
	held := 0
	e.EachHeld(func(req *workload.Request, rec *metrics.Record) {
		if req.InputTokens != 50 || req.OutputTokens != 10 || rec.ID != req.ID {
			t.Errorf("held request %+v with record %d", *req, rec.ID)
		}
		held++
	})
	if held != 3 {
		t.Fatalf("EachHeld saw %d requests, want 3", held)
	}
	floor := e.NextBatchID()
	if err := e.Reset(); err != nil {
		t.Fatal(err)
	}
	if e.HasWork() || e.InFlight() != 0 || e.Pool().Used() != 0 || e.Pool().Free() != e.Pool().Capacity() {
		t.Fatalf("after Reset: work %v, %d in flight, %d used, %d free of %d", e.HasWork(), e.InFlight(), e.Pool().Used(), e.Pool().Free(), e.Pool().Capacity())
	}
	r := workload.Request{ID: 9, InputTokens: 20, OutputTokens: 2}
	e.Add(&r, st.End)
	st2, ok, err := e.Begin(st.End)
	if err != nil || !ok || st2.ID <= floor {
		t.Fatalf("batch after Reset: %v, id %d, want > %d", ok, st2.ID, floor)
	}
}
