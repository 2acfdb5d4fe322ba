package engine

import (
	"math"
	"reflect"
	"testing"

	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
	"pgregory.net/rapid"
)

// specEngine is an engine for speculative-decoding tests: room for every
// request, invariants checked after every step.
func specEngine(t testing.TB, sp Speculative, seqs int) *Engine {
	t.Helper()
	cfg := Config{MaxNumSeqs: seqs, MaxNumBatchedTokens: 4096, BlockSize: 16, NumBlocks: 20000,
		ChunkedPrefill: true, PrefixCaching: true, CheckInvariants: true, Spec: sp}
	e, err := New(0, cfg, fixedStep{base: 1000, perTok: 10})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func sameRequests(n, prompt, output int) []workload.Request {
	reqs := make([]workload.Request, n)
	for i := range reqs {
		reqs[i] = workload.Request{ID: int64(i), InputTokens: prompt, OutputTokens: output}
	}
	return reqs
}

// acceptMoments is the mean and variance of the tokens one verification
// yields, 1 + A, when P(A >= i) = a[i-1].
func acceptMoments(a []float64) (mean, variance float64) {
	var m2 float64
	for i := 0; i <= len(a); i++ {
		p := 1.0 // P(A >= i)
		if i > 0 {
			p = a[i-1]
		}
		next := 0.0 // P(A >= i+1)
		if i < len(a) {
			next = a[i]
		}
		x := float64(1 + i)
		mean += (p - next) * x
		m2 += (p - next) * x * x
	}
	return mean, m2 - mean*mean
}

// TestSpecMeanTokensPerStep checks the mean tokens per verification
// against theory: (1 − α^(k+1))/(1 − α) for i.i.d. conditional α, and
// 1 + Σ aᵢ for a per-position vector, within 4 standard errors of the
// sample mean (the variance from the same distribution).
func TestSpecMeanTokensPerStep(t *testing.T) {
	tests := []struct {
		name string
		a    []float64
		want float64 // hand-computed
	}{
		{"iid 0.6 k3", IIDAcceptance(0.6, 3), (1 - math.Pow(0.6, 4)) / (1 - 0.6)},
		{"iid 0.8 k5", IIDAcceptance(0.8, 5), (1 - math.Pow(0.8, 6)) / (1 - 0.8)},
		{"iid 0.3 k1", IIDAcceptance(0.3, 1), 1.3},
		{"vector", []float64{0.9, 0.7, 0.4, 0.1}, 1 + 0.9 + 0.7 + 0.4 + 0.1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mean, variance := acceptMoments(tc.a)
			if math.Abs(mean-tc.want) > 1e-12 {
				t.Fatalf("distribution mean %g, hand-computed %g", mean, tc.want)
			}
			e := specEngine(t, Speculative{K: len(tc.a), Accept: Rates(tc.a), Seed: 7}, 32)
			drive(t, e, sameRequests(32, 64, 3000))
			st := e.SpecTotals()
			if st.Drafts < 10000 {
				t.Fatalf("only %d verifications", st.Drafts)
			}
			got := 1 + float64(st.Accepted)/float64(st.Drafts)
			se := math.Sqrt(variance / float64(st.Drafts))
			t.Logf("mean tokens per verification %.4f (theory %.4f, SE %.4f, %d verifications)", got, tc.want, se, st.Drafts)
			if math.Abs(got-tc.want) > 4*se {
				t.Errorf("mean tokens per verification %.4f, want %.4f ± %.4f (4 SE, %d verifications)", got, tc.want, 4*se, st.Drafts)
			}
			if st.Proposed != st.Drafts*int64(len(tc.a)) {
				t.Errorf("proposed %d, want %d verifications x k %d", st.Proposed, st.Drafts, len(tc.a))
			}
		})
	}
}

// TestSpecZeroAcceptance: with α = 0 every step yields exactly one token,
// as without speculation, but each step computes 1+k tokens per decoder,
// so the run takes longer.
func TestSpecZeroAcceptance(t *testing.T) {
	run := func(sp Speculative) ([]metrics.Record, *Engine) {
		e := specEngine(t, sp, 8)
		return drive(t, e, sameRequests(8, 100, 200)), e
	}
	off, _ := run(Speculative{})
	on, e := run(Speculative{K: 3, Accept: Rates(IIDAcceptance(0, 3)), Seed: 1})
	st := e.SpecTotals()
	if st.Accepted != 0 || st.Emitted != st.Drafts {
		t.Fatalf("α=0: %d accepted, %d tokens in %d verifications; want 0 and one each", st.Accepted, st.Emitted, st.Drafts)
	}
	// 8 requests x 199 decode steps after the first token.
	if st.Drafts != 8*199 {
		t.Errorf("%d verifications, want %d", st.Drafts, 8*199)
	}
	for i := range off {
		if on[i].Generated != off[i].Generated {
			t.Fatalf("request %d generated %d with α=0, %d without", on[i].ID, on[i].Generated, off[i].Generated)
		}
		// Each decode step costs 3 more tokens x 8 requests x 10 ns.
		if on[i].LastToken <= off[i].LastToken {
			t.Errorf("request %d: last token at %d ns with α=0 speculation, not after %d ns without", on[i].ID, on[i].LastToken, off[i].LastToken)
		}
	}
	// Hand computation: the prompts take one 800-token step (1000 + 8000
	// ns), then 199 decode steps of 8 x 4 tokens (1000 + 320 ns) against
	// 8 x 1 (1000 + 80 ns) without.
	if want := int64(9000 + 199*1320); on[0].LastToken != want {
		t.Errorf("last token at %d ns, want %d", on[0].LastToken, want)
	}
	if want := int64(9000 + 199*1080); off[0].LastToken != want {
		t.Errorf("without speculation: last token at %d ns, want %d", off[0].LastToken, want)
	}
}

// TestSpecPerRequestAcceptance: a per-request α is used for that request.
func TestSpecPerRequestAcceptance(t *testing.T) {
	e := specEngine(t, Speculative{K: 4, PerRequest: true, Seed: 3}, 16)
	reqs := sameRequests(16, 32, 2000)
	for i := range reqs {
		reqs[i].SpecAcceptance = 0.5
	}
	drive(t, e, reqs)
	st := e.SpecTotals()
	mean, variance := acceptMoments(IIDAcceptance(0.5, 4))
	got := 1 + float64(st.Accepted)/float64(st.Drafts)
	if se := math.Sqrt(variance / float64(st.Drafts)); math.Abs(got-mean) > 4*se {
		t.Errorf("mean tokens per verification %.4f, want %.4f ± %.4f", got, mean, 4*se)
	}
}

// TestSpecProperties: for random workloads and settings, every request
// ends with exactly its output length (never more), the KV invariants
// hold after every step (CheckInvariants, lookahead slots included), all
// blocks are released at the end, and the same seed gives the same run.
func TestSpecProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		k := rapid.IntRange(1, 8).Draw(rt, "k")
		alpha := rapid.Float64Range(0, 0.95).Draw(rt, "alpha")
		seqs := rapid.IntRange(1, 8).Draw(rt, "seqs")
		n := rapid.IntRange(1, 12).Draw(rt, "n")
		reqs := make([]workload.Request, n)
		ids := rapid.Bool().Draw(rt, "ids") // token ids: shared prefixes hit the cache
		for i := range reqs {
			reqs[i] = workload.Request{ID: int64(i), InputTokens: rapid.IntRange(1, 200).Draw(rt, "in"),
				OutputTokens: rapid.IntRange(1, 120).Draw(rt, "out"), Arrival: int64(i) * 500}
			if ids {
				r := &reqs[i]
				r.InputIDs, r.OutputIDs = make([]int32, r.InputTokens), make([]int32, r.OutputTokens)
				for j := range r.InputIDs {
					r.InputIDs[j] = int32(j % 7) // every prompt shares its prefix
				}
				for j := range r.OutputIDs {
					r.OutputIDs[j] = int32(i)
				}
			}
		}
		cfg := Config{MaxNumSeqs: seqs, MaxNumBatchedTokens: rapid.IntRange(16, 256).Draw(rt, "budget"), BlockSize: 16,
			NumBlocks: rapid.IntRange(30, 200).Draw(rt, "blocks"), ChunkedPrefill: true,
			PrefixCaching: rapid.Bool().Draw(rt, "caching"), AsyncScheduling: rapid.Bool().Draw(rt, "async"), CheckInvariants: true,
			Spec: Speculative{K: k, Accept: Rates(IIDAcceptance(alpha, k)), Seed: 11}}
		run := func() []metrics.Record {
			e, err := New(0, cfg, fixedStep{base: 1000, perTok: 3})
			if err != nil {
				rt.Fatal(err)
			}
			var out []metrics.Record
			next, now := 0, int64(0)
			for steps := 0; next < n || e.HasWork() || e.InFlight() > 0; steps++ {
				for next < n && reqs[next].Arrival <= now {
					if why := e.Unfit(&reqs[next]); why != "" {
						rt.Skip(why)
					}
					e.Add(&reqs[next], now)
					next++
				}
				st, ok, err := e.Begin(now)
				if err != nil {
					rt.Fatal(err)
				}
				if !ok {
					now = reqs[next].Arrival
					continue
				}
				now = st.End
				r, err := e.FinishBatch(st.ID, now)
				if err != nil {
					rt.Fatal(err)
				}
				out = appendFinished(out, r)
				if steps > 100000 {
					rt.Fatal("no progress")
				}
			}
			if _, ok, err := e.Begin(now); ok || err != nil { // releases the last finished requests' blocks (async)
				rt.Fatalf("a batch formed with no work left (%v)", err)
			}
			if refs := e.Pool().TotalRefs(); refs != 0 {
				rt.Fatalf("%d block references left after every request finished", refs)
			}
			return out
		}
		out := run()
		if len(out) != n {
			rt.Fatalf("%d requests finished, want %d", len(out), n)
		}
		for _, r := range out {
			if r.Generated != r.OutputTokens {
				rt.Fatalf("request %d generated %d tokens, output length %d", r.ID, r.Generated, r.OutputTokens)
			}
		}
		if again := run(); !reflect.DeepEqual(out, again) {
			rt.Fatal("same seed, different run")
		}
	})
}

// TestSpecFitsWholePool: a request that fills the pool to the last slot,
// its speculative slots included, finishes; one more token is unfit
// rather than a request that preempts itself forever. 4 blocks of 16 =
// 64 slots: prompt 40 + output 20 - 1 + 2 x k(2) = 63 fits; output 22
// needs 65.
func TestSpecFitsWholePool(t *testing.T) {
	cfg := Config{MaxNumSeqs: 2, MaxNumBatchedTokens: 64, BlockSize: 16, NumBlocks: 4, ChunkedPrefill: true, CheckInvariants: true,
		Spec: Speculative{K: 2, Accept: Rates(IIDAcceptance(0.5, 2)), Seed: 5}}
	e, err := New(0, cfg, fixedStep{base: 100})
	if err != nil {
		t.Fatal(err)
	}
	if why := e.Unfit(&workload.Request{InputTokens: 40, OutputTokens: 22}); why == "" {
		t.Error("a request needing 65 slots of 64 is not unfit")
	}
	recs := drive(t, e, []workload.Request{{ID: 1, InputTokens: 40, OutputTokens: 20}})
	if len(recs) != 1 || recs[0].Generated != 20 || recs[0].Preemptions != 0 {
		t.Fatalf("records %+v; want one request of 20 tokens, never preempted", recs)
	}
}
