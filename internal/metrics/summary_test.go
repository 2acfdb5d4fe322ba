package metrics

import (
	"encoding/json"
	"flag"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// newHist returns an empty histogram of the shared geometry.
func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowUs, histHighUs, histDigits)
}

var update = flag.Bool("update", false, "rewrite testdata/*.golden files")

// nearestRank is HdrHistogram's percentile definition applied exactly: the
// value at rank round(p/100*n), at least 1.
func nearestRank(sorted []int64, p float64) int64 {
	rank := int64(p/100*float64(len(sorted)) + 0.5)
	rank = min(max(rank, 1), int64(len(sorted)))
	return sorted[rank-1]
}

func TestSummaryPercentiles(t *testing.T) {
	cases := []struct {
		name string
		gen  func(r *rand.Rand) int64 // ns
		n    int
	}{
		{"uniform-ms", func(r *rand.Rand) int64 { return r.Int64N(1e9) }, 10000},
		{"lognormal", func(r *rand.Rand) int64 { return int64(math.Exp(r.NormFloat64()*2+16)) + 1 }, 5000},
		{"small-us", func(r *rand.Rand) int64 { return r.Int64N(5000) }, 999},
		{"single", func(r *rand.Rand) int64 { return 42_000_000 }, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			s := NewSummary()
			vals := make([]int64, c.n)
			var sum int64
			for i := range vals {
				vals[i] = c.gen(rng)
				sum += vals[i]
				s.AddITL(vals[i])
			}
			slices.Sort(vals)
			got := s.Finish(1e9).ITL
			if got.Count != int64(c.n) {
				t.Fatalf("count %d, want %d", got.Count, c.n)
			}
			if want := float64(sum) / float64(c.n) / 1e6; math.Abs(got.Mean-want) > 1e-6 {
				t.Errorf("mean %v, want %v", got.Mean, want)
			}
			if got.Max != float64(vals[c.n-1])/1e6 || got.Min != float64(vals[0])/1e6 {
				t.Errorf("min/max %v/%v, want exact %v/%v", got.Min, got.Max, vals[0], vals[c.n-1])
			}
			for _, p := range []struct {
				q   float64
				got float64
			}{{50, got.P50}, {90, got.P90}, {95, got.P95}, {99, got.P99}} {
				want := float64(nearestRank(vals, p.q)) / 1e6
				// bucket midpoint (<= 1/2048 relative) plus the 1 us
				// recording unit (0.5 us rounding + bucket width).
				if tol := want/2000 + 0.0015; math.Abs(p.got-want) > tol {
					t.Errorf("p%v = %v, want %v +- %v", p.q, p.got, want, tol)
				}
			}
		})
	}
}

func TestSummaryCounts(t *testing.T) {
	s := NewSummary()
	s.SetSLO(SLO{TTFT: 30e6, TPOT: 20e6})
	recs := testRecords()
	for i := range recs {
		s.Add(&recs[i])
	}
	failed := NewRecord(4, 0)
	failed.Outcome, failed.Reason = Failed, "lease expired"
	s.Add(&failed)
	s.Add(&failed)
	noReason := NewRecord(5, 0)
	noReason.Outcome = Failed
	s.Add(&noReason)

	r := s.Finish(2e9)
	if r.RequestsTotal != 7 || r.Finished != 3 || r.Rejected != 1 || r.Failed != 3 {
		t.Errorf("outcomes: %+v", r)
	}
	if r.InputTokens != 100+2048+10 || r.OutputTokens != 4+2+1 || r.CachedTokens != 16 {
		t.Errorf("tokens: in %d out %d cached %d", r.InputTokens, r.OutputTokens, r.CachedTokens)
	}
	if r.ThroughputRPS != 1.5 || r.InputTokS != 2158.0/2 || r.OutputTokS != 3.5 {
		t.Errorf("rates: %v %v %v", r.ThroughputRPS, r.InputTokS, r.OutputTokS)
	}
	if r.TTFT.Count != 3 || r.TPOT.Count != 2 || r.E2E.Count != 3 || r.QueueDelay.Count != 3 {
		t.Errorf("counts: ttft %d tpot %d e2e %d queue %d", r.TTFT.Count, r.TPOT.Count, r.E2E.Count, r.QueueDelay.Count)
	}
	// Only the P/D request had a handoff.
	if r.HandoffWait.Count != 1 || r.HandoffWait.Mean != 5 || r.CapacityWait.Max != 4 || r.Transfer.P50 != 2.5005 {
		t.Errorf("P/D: %+v %+v %+v", r.HandoffWait, r.CapacityWait, r.Transfer)
	}
	if r.Preemptions != 3 || r.Reprefills != 1 || r.Retries != 2 {
		t.Errorf("counters: %d %d %d", r.Preemptions, r.Reprefills, r.Retries)
	}
	wantFail := map[string]int64{"lease expired": 2, "unspecified": 1}
	if !mapsEqual(r.FailureReasons, wantFail) {
		t.Errorf("failure reasons %v, want %v", r.FailureReasons, wantFail)
	}
	if r.RejectionReasons["queue too long, predicted Ns"] != 1 || r.RejectionExamples["queue too long, predicted Ns"] != "queue too long, predicted 3s" {
		t.Errorf("rejection reasons %v", r.RejectionReasons)
	}
	// TTFTs 20, 58, 5 ms: the P/D one misses the 30 ms bound.
	if r.SLO == nil || r.SLO.Met == nil || *r.SLO.Met != 2 || *r.SLO.GoodputRPS != 1 || math.Abs(*r.SLO.Attainment-2.0/7) > 1e-12 {
		t.Errorf("SLO: %+v", r.SLO)
	}
}

// TestPercentileTargetsAloneHaveNoAttainment: with percentile targets and
// no per-request bounds there is no attainment or goodput to report (they
// used to read 100 % beside a missed target); the target's verdict stands.
func TestPercentileTargetsAloneHaveNoAttainment(t *testing.T) {
	s := NewSummary()
	s.SetTargets([]Target{{Metric: "ttft", Percentile: 99, MaxMs: 2000}})
	for i, ttft := range []int64{100e6, 3000e6} {
		rec := NewRecord(int64(i), 0)
		rec.Outcome, rec.InputTokens, rec.OutputTokens, rec.Generated = Finished, 10, 1, 1
		rec.Queued, rec.Scheduled, rec.FirstToken, rec.LastToken = 0, 0, ttft, ttft
		s.Add(&rec)
	}
	r := s.Finish(4e9)
	if r.SLO == nil || r.SLO.Attainment != nil || r.SLO.GoodputRPS != nil || r.SLO.Met != nil {
		t.Fatalf("attainment without per-request bounds: %+v", r.SLO)
	}
	if len(r.SLO.Targets) != 1 || r.SLO.Targets[0].Met {
		t.Fatalf("p99 TTFT of 3 s must miss 2 s: %+v", r.SLO.Targets)
	}
	text := r.String()
	if strings.Contains(text, "SLO attainment (%)") || !strings.Contains(text, "n/a") || !strings.Contains(text, "MISSED") {
		t.Fatalf("summary:\n%s", text)
	}
}

// TestTargetWithoutSamples: when nothing finished a percentile target has
// no value: it is missed, its value is null in JSON and "-" in the table,
// never a 0.0 ms that reads as met-but-missed.
func TestTargetWithoutSamples(t *testing.T) {
	s := NewSummary()
	s.SetTargets([]Target{{Metric: "ttft", Percentile: 99, MaxMs: 10}, {Metric: "e2e", Percentile: 50, MaxMs: 1000}})
	rec := NewRecord(0, 0)
	rec.Outcome, rec.InputTokens, rec.OutputTokens, rec.Reason = Failed, 10, 1, "unfit: too long"
	s.Add(&rec)
	r := s.Finish(1e9)
	for _, tg := range r.SLO.Targets {
		if tg.Met || tg.ValueMs != nil {
			t.Fatalf("target without samples: %+v", tg)
		}
	}
	js, err := json.Marshal(r.SLO.Targets[0])
	if err != nil || !strings.Contains(string(js), `"value_ms":null`) {
		t.Fatalf("JSON %s (%v)", js, err)
	}
	text := r.String()
	if !strings.Contains(text, "- MISSED (no samples)") || strings.Contains(text, "0.0 MISSED") {
		t.Fatalf("summary:\n%s", text)
	}
}

// TestTargetVerdictIsExact: a percentile target missed by less than the
// histogram's rounding is MISSED. 100 requests with TPOT 116.028 ms (each
// one token after the first, so TPOT = the gap) against p99 <= 116 ms: the
// histogram's bucket holding 116.028 ms has its midpoint below 116 ms, so
// comparing the shown percentile printed "met"; the verdict counts the
// values within the bound (0 of 100, rank 99 needed). The same values
// against 116.1 ms are met (100 within); one slow request in 100 still
// meets p99 (99 within), two do not.
func TestTargetVerdictIsExact(t *testing.T) {
	run := func(bound float64, tpots ...int64) TargetResult {
		t.Helper()
		s := NewSummary()
		s.SetTargets([]Target{{Metric: "tpot", Percentile: 99, MaxMs: bound}})
		for i, tp := range tpots {
			rec := NewRecord(int64(i), 0)
			rec.Outcome, rec.InputTokens, rec.OutputTokens, rec.Generated = Finished, 10, 2, 2
			rec.Queued, rec.Scheduled, rec.FirstToken, rec.LastToken = 0, 0, 10e6, 10e6+tp
			s.Add(&rec)
		}
		r := s.Finish(10e9)
		if r.SLO == nil || len(r.SLO.Targets) != 1 {
			t.Fatalf("targets: %+v", r.SLO)
		}
		return r.SLO.Targets[0]
	}
	same := func(n int, v int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	// Alone, equal values show the exact value (the bucket of the max);
	// between a faster and a slower request they show the bucket's
	// midpoint, 116.000 ms.
	if tg := run(116, same(100, 116_028_000)...); tg.Met || tg.Within != 0 || tg.Count != 100 || tg.Straddles() {
		t.Errorf("p99 TPOT of 116.028 ms against 116 ms: %+v, want missed with 0 of 100 within", tg)
	}
	tg := run(116, append(append([]int64{50e6}, same(98, 116_028_000)...), 200e6)...)
	if tg.Met || tg.Within != 1 || *tg.ValueMs > 116 || !tg.Straddles() {
		t.Errorf("p99 TPOT of 116.028 ms shown as %g against 116 ms: %+v, want missed, 1 of 100 within, straddling", *tg.ValueMs, tg)
	}
	text := (&Result{TPOT: Stat{Count: 1}, SLO: &SLOResult{Targets: []TargetResult{tg}}}).String()
	if !strings.Contains(text, "116.000 MISSED (1 of 100 within") {
		t.Errorf("summary line:\n%s", text)
	}
	if tg := run(116.1, same(100, 116_028_000)...); !tg.Met || tg.Within != 100 {
		t.Errorf("116.028 ms against 116.1 ms: %+v, want met", tg)
	}
	if tg := run(116, append(same(99, 100e6), 200e6)...); !tg.Met || tg.Within != 99 {
		t.Errorf("99 of 100 within: %+v, want met (rank 99)", tg)
	}
	if tg := run(116, append(same(98, 100e6), 200e6, 200e6)...); tg.Met || tg.Within != 98 {
		t.Errorf("98 of 100 within: %+v, want missed (rank 99)", tg)
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestEmptySummaryJSON(t *testing.T) {
	r := NewSummary().Finish(0)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if strings.Contains(s, "NaN") || strings.Contains(s, "Inf") || strings.Contains(s, "null") {
		t.Errorf("bad empty JSON: %s", s)
	}
	for _, key := range []string{
		"requests_total", "finished", "rejected", "failed", "sim_time_s",
		"throughput_rps", "input_tok_s", "output_tok_s", "ttft_ms", "tpot_ms",
		"itl_ms", "e2e_ms", "queue_delay_ms", "handoff_wait_ms",
		"decode_capacity_wait_ms", "transfer_ms", "preemptions", "reprefills",
		"retries", "failure_reasons", `"p99"`, `"max"`,
	} {
		if !strings.Contains(s, key) {
			t.Errorf("JSON lacks %s: %s", key, s)
		}
	}
	if strings.Contains(s, `"slo"`) {
		t.Errorf("slo present without SetSLO: %s", s)
	}
}

func TestResultStringGolden(t *testing.T) {
	full := NewSummary()
	full.SetSLO(SLO{TTFT: 30e6, TPOT: 20e6})
	recs := testRecords()
	for i := range recs {
		full.Add(&recs[i])
	}
	failed := NewRecord(4, 0)
	failed.Outcome, failed.Reason = Failed, "unfit: prompt+output exceed decode capacity"
	full.Add(&failed)
	for _, g := range []int64{9_999_833, 10_000_000, 10_000_001, 123_456_789_000} {
		full.AddITL(g)
	}
	cases := []struct {
		name string
		r    Result
	}{
		{"empty", NewSummary().Finish(0)},
		{"mixed", full.Finish(1_234_567_890)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.r.String()
			if got != c.r.String() {
				t.Fatal("String is not deterministic")
			}
			path := filepath.Join("testdata", "summary_"+c.name+".golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if got != string(want) {
				t.Errorf("String() mismatch with %s (run with -update)\n got:\n%s\nwant:\n%s", path, got, want)
			}
		})
	}
}

// TestMidEquivalent checks the hard-coded bucket geometry against the
// histogram itself: the midpoint shares a bucket with the value, and the
// bucket's width matches.
func TestMidEquivalent(t *testing.T) {
	h := newHist()
	for _, v := range []int64{0, 1, 2047, 2048, 2049, 4095, 4096, 20015, 1 << 30, 1e12 + 7} {
		m := midEquivalent(v)
		if !h.ValuesAreEquivalent(v, m) {
			t.Errorf("midEquivalent(%d) = %d is in another bucket", v, m)
		}
		shift := max(bits.Len64(uint64(v))-histSubBucketBits, 0)
		lo := v &^ (int64(1)<<shift - 1)
		hi := lo + int64(1)<<shift - 1
		if !h.ValuesAreEquivalent(lo, hi) || (lo > 0 && h.ValuesAreEquivalent(lo-1, lo)) || h.ValuesAreEquivalent(hi, hi+1) {
			t.Errorf("bucket of %d is not [%d, %d]", v, lo, hi)
		}
	}
}

// TestAddITLsEqualsRepeatedAddITL: recording a run of equal gaps with a
// count gives the same statistics as recording each gap, for runs mixed
// with single values, counts of 0 and negative gaps (both ignored).
func TestAddITLsEqualsRepeatedAddITL(t *testing.T) {
	runs := []struct{ ns, count int64 }{
		{20_000_000, 250}, {19_500_123, 3}, {-5, 4}, {7, 0}, {1_200, 1},
		{20_000_000, 17}, {4_000_000_000, 2}, {999, 1000},
	}
	one, many := NewSummary(), NewSummary()
	for _, r := range runs {
		many.AddITLs(r.ns, r.count)
		for i := int64(0); i < r.count; i++ {
			one.AddITL(r.ns)
		}
	}
	a, b := one.Finish(1e9).ITL, many.Finish(1e9).ITL
	if a != b {
		t.Fatalf("AddITLs gives %+v, repeated AddITL %+v", b, a)
	}
	if a.Count != 250+3+1+17+2+1000 {
		t.Fatalf("count %d", a.Count)
	}
}

// TestDistMatchesHdrHistogram records the same values into a dist (its own
// counts array, indexed by histIndex, single values batched in pend) and
// straight into an HdrHistogram (RecordValues, as dist did): the counts,
// the total and the quantiles must be the same, bit for bit.
func TestDistMatchesHdrHistogram(t *testing.T) {
	if i := histIndex(histHighUs); i >= 1<<16 {
		t.Fatalf("histIndex(histHighUs) = %d does not fit pend's uint16", i)
	}
	edges := []int64{0, 1, 499, 500, 1499, 2047e3, 2047499, 2047500, 2048e3, 4095e3, 4096e3, 1 << 40, 1e16 - 1, 1e16, 1e16 + 1, math.MaxInt64 - 1000}
	rng := rand.New(rand.NewPCG(7, 9))
	spread := make([]int64, 3*pendCap+5) // pend fills up three times
	for i := range spread {
		spread[i] = int64(math.Exp(rng.Float64() * 40)) // 1 ns to ~2e17 ns
	}
	tests := []struct {
		name  string
		ns    []int64
		count func(i int) int64
	}{
		{"bucket edges, one each", edges, func(int) int64 { return 1 }},
		{"bucket edges, counts", edges, func(i int) int64 { return int64(i%5) + 1 }},
		{"spread over the range", spread, func(i int) int64 { return int64(i%3) + 1 }},
		{"spread over the range, one each", spread, func(int) int64 { return 1 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, h := newDist(), newHist()
			for i, ns := range tc.ns {
				c := tc.count(i)
				if c == 1 {
					d.add(ns)
				} else {
					d.addN(ns, c)
				}
				if err := h.RecordValues(toUs(ns), c); err != nil {
					t.Fatal(err)
				}
			}
			got := d.hist()
			if !slices.Equal(got.Export().Counts, h.Export().Counts) || got.TotalCount() != h.TotalCount() {
				t.Fatalf("counts differ: total %d, want %d", got.TotalCount(), h.TotalCount())
			}
			for _, p := range []float64{0, 1, 50, 90, 95, 99, 99.9, 100} {
				if g, w := got.ValueAtQuantile(p), h.ValueAtQuantile(p); g != w {
					t.Errorf("p%g: %d, want %d", p, g, w)
				}
			}
		})
	}
}
