package runner

import (
	"testing"

	"github.com/servesim/servesim/internal/metrics"
)

// TestChatTurnsHitThePrefixCache: in a generated conversation each turn's
// prompt holds the previous prompt and reply, so with prefix caching a
// turn reuses every full block of what the engine computed before: the
// previous prompt and all but the last reply token (whose KV is never
// computed). With 100-token messages, 50-token replies and 16-token
// blocks: turn 2 hits floor(149/16)*16 = 144 tokens, turn 3
// floor(299/16)*16 = 288; without prefix caching nothing.
func TestChatTurnsHitThePrefixCache(t *testing.T) {
	const base = `
workload:
  chat:
    conversations: 1
    arrival: {kind: poisson, rate: 1}
    turns: {kind: fixed, mean: 3}
    think_ms: {kind: fixed, mean: 1000}
    message: {kind: fixed, mean: 100}
    output: {kind: fixed, mean: 50}
check_invariants: true
`
	for _, c := range []struct {
		caching string
		want    []int
	}{
		{"true", []int{0, 144, 288}},
		{"false", []int{0, 0, 0}},
	} {
		b := buildYAML(t, "chat.yaml", base+"engine: {enable_prefix_caching: "+c.caching+"}\n")
		var got []int
		if _, err := Run(b, Options{OnRecord: func(r *metrics.Record) {
			if r.Outcome != metrics.Finished {
				t.Errorf("request %d: %s %s", r.ID, r.Outcome, r.Reason)
			}
			if r.Session != "chat-0" {
				t.Errorf("request %d: session %q, want chat-0", r.ID, r.Session)
			}
			got = append(got, r.CachedTokens)
		}}); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(c.want) {
			t.Fatalf("caching %s: %d records, want %d", c.caching, len(got), len(c.want))
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("caching %s: turn %d hit %d cached tokens, want %d", c.caching, i+1, got[i], c.want[i])
			}
		}
	}
}
