package runner

import (
	"testing"

	"github.com/servesim/servesim/internal/metrics"
)

// TestLightLoadFixedCost: one closed-loop client sending 1-token prompts
// finds the engine idle every time, so its client-side TTFT is the
// engine's TTFT plus the front end's fixed path, by hand with the
// defaults of docs/client.md and drift off:
//
//	way in:  network 50 + request 300 + enqueue 50 + tokenizer wait 2,000
//	         + 1 token x 1.1 + hop 50                     = 2,451.1 us
//	way out: hop 50 + step 100 + output 15 + chunk 25 + network 50 = 240 us
//
// 2,691.1 us in all, the figure docs/client.md compares with vLLM's
// measured light-load fixed cost ("A light-load fixed cost on one host").
// The client's TPOT equals the engine's (every chunk is delayed alike).
func TestLightLoadFixedCost(t *testing.T) {
	b := buildYAML(t, "light.yaml", `
workload:
  max_concurrency: 1
  synthetic:
    requests: 20
    arrival: {kind: burst}
    input: {kind: fixed, mean: 1}
    output: {kind: fixed, mean: 16}
frontend: {jitter_us: 0}
`)
	const fixed = 2_451_100 + 240_000 // ns
	var recs []metrics.Record
	if _, err := Run(b, Options{OnRecord: func(r *metrics.Record) { recs = append(recs, *r) }}); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 20 {
		t.Fatalf("%d records, want 20", len(recs))
	}
	for _, r := range recs {
		if !r.FrontEnd {
			t.Fatalf("request %d has no client-side times", r.ID)
		}
		client := r.FirstToken - r.Arrival
		engine := r.EngineFirstToken - r.EngineArrival
		if got := client - engine; got != fixed {
			t.Errorf("request %d: client TTFT %d ns - engine TTFT %d ns = %d ns, want %d", r.ID, client, engine, got, fixed)
		}
		if got, want := r.LastToken-r.FirstToken, r.EngineLastToken-r.EngineFirstToken; got != want {
			t.Errorf("request %d: client first-to-last %d ns, engine %d ns; want equal", r.ID, got, want)
		}
	}
}
