package search

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/runner"
	"github.com/servesim/servesim/internal/workload"
)

func loadPD(t *testing.T) (*config.Scenario, config.Source) {
	t.Helper()
	s, src, err := config.Load("../../examples/pd-2p2d.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s, src
}

var pdSLO = SLO{TTFTMs: 2000, TPOTMs: 100}

// attainment runs s independently of the search.
func attainment(t *testing.T, s *config.Scenario, src config.Source) float64 {
	t.Helper()
	b, err := assemble.Build(s, src)
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(b, runner.Options{SLO: pdSLO.metrics()})
	if err != nil {
		t.Fatal(err)
	}
	return *res.SLO.Attainment
}

// TestMaxRatePD2P2D is the acceptance test of max-rate: on
// examples/pd-2p2d.yaml (the 300-request ShareGPT trace) with TTFT <= 2 s
// and TPOT <= 100 ms, the rate found meets 90 % attainment and 5 % more
// misses it; both are checked again with runs independent of the search.
func TestMaxRatePD2P2D(t *testing.T) {
	base, src := loadPD(t)
	res, err := MaxRate(context.Background(), base, src, Options{SLO: pdSLO})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("base %.3f req/s; max rate %.3f req/s (x%.4f, attainment %.3f); +5 %%: %.3f req/s (attainment %.3f); %d runs",
		res.BaseRateRPS, res.Best.RateRPS, res.Best.Multiplier, res.Best.Attainment, res.Above.RateRPS, res.Above.Attainment, len(res.Probes))
	if res.Scaling != "workload.time_scale" || math.Abs(res.BaseRateRPS-10) > 1 {
		t.Fatalf("scaling %s, base rate %g: want time_scale of a ~10 req/s trace", res.Scaling, res.BaseRateRPS)
	}
	if !res.Best.Pass || res.Best.Attainment < 0.9 || res.Above.Pass || res.Above.Attainment >= 0.9 {
		t.Fatalf("best %+v / above %+v", res.Best.Attainment, res.Above.Attainment)
	}
	if r := res.Above.RateRPS / res.Best.RateRPS; math.Abs(r-1.05) > 1e-9 {
		t.Fatalf("above/best rate = %g, want 1.05", r)
	}
	if res.Best.RateRPS <= res.BaseRateRPS {
		t.Fatalf("max rate %g should exceed the trace's own rate %g (which pd-2p2d serves easily)", res.Best.RateRPS, res.BaseRateRPS)
	}
	// Independent runs at both rates.
	rs, err := newRateScaler(base, src)
	if err != nil {
		t.Fatal(err)
	}
	at, _, err := rs.scenario(res.Best.Multiplier)
	if err != nil {
		t.Fatal(err)
	}
	if a := attainment(t, at, src); a < 0.9 || a != res.Best.Attainment {
		t.Fatalf("attainment at the max rate: %g (search said %g)", a, res.Best.Attainment)
	}
	at, _, err = rs.scenario(res.Best.Multiplier * 1.05)
	if err != nil {
		t.Fatal(err)
	}
	if a := attainment(t, at, src); a >= 0.9 {
		t.Fatalf("attainment at 5 %% more: %g, want < 0.9", a)
	}
	// Deterministic: the same search gives the same answer.
	again, err := MaxRate(context.Background(), base, src, Options{SLO: pdSLO})
	if err != nil {
		t.Fatal(err)
	}
	if again.Best.RateRPS != res.Best.RateRPS || len(again.Probes) != len(res.Probes) {
		t.Fatalf("not deterministic: %g vs %g", again.Best.RateRPS, res.Best.RateRPS)
	}
}

// TestMaxRateSynthetic scales arrival.rate of a synthetic workload.
func TestMaxRateSynthetic(t *testing.T) {
	base, src := loadPD(t)
	s, err := Resample(base, src, 400)
	if err != nil {
		t.Fatal(err)
	}
	if s.Workload.Synthetic == nil || s.Workload.Synthetic.Requests != 400 || s.Workload.Trace != "" {
		t.Fatalf("resampled workload: %+v", s.Workload)
	}
	var probes int
	res, err := MaxRate(context.Background(), s, src, Options{SLO: pdSLO, OnProbe: func(Probe) { probes++ }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Scaling != "workload.synthetic.arrival.rate" || res.Best.TimeScale != 0 || probes != len(res.Probes) {
		t.Fatalf("scaling %s, time scale %g, probes %d/%d", res.Scaling, res.Best.TimeScale, probes, len(res.Probes))
	}
	if !res.Best.Pass || res.Above.Pass {
		t.Fatalf("best %g above %g", res.Best.Attainment, res.Above.Attainment)
	}
}

func TestMaxRateErrors(t *testing.T) {
	base, src := loadPD(t)
	ctx := context.Background()
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, "no SLO"},
		{Options{SLO: pdSLO, Target: 1.5}, "target attainment must be in (0, 1]"},
		{Options{SLO: SLO{TTFTMs: -1}}, "must be >= 0"},
		{Options{SLO: pdSLO, Margin: 0.01, Tolerance: 0.02}, "tolerance must be in"},
	} {
		if _, err := MaxRate(ctx, base, src, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	// Arrival times ignored: there is no rate to scale.
	closed := *base
	closed.Workload.IgnoreArrivalTimes, closed.Workload.MaxConcurrency = true, 4
	if _, err := MaxRate(ctx, &closed, src, Options{SLO: pdSLO}); err == nil || !strings.Contains(err.Error(), "workload.ignore_arrival_times") {
		t.Errorf("ignored arrival times: %v", err)
	}
	// An SLO no rate can meet: TTFT below one prefill step.
	lim := *base
	lim.Workload.Limit = 30
	_, err := MaxRate(ctx, &lim, src, Options{SLO: SLO{TTFTMs: 0.001}})
	if err == nil || !strings.Contains(err.Error(), "cannot be met by this cluster") {
		t.Fatalf("unattainable SLO: %v", err)
	}
}

func TestSplits(t *testing.T) {
	got := Splits(8, 1, 1)
	if len(got) != 7 || got[0].Prefill != 1 || got[0].Decode != 7 || got[6].Prefill != 7 || got[6].Decode != 1 {
		t.Fatalf("splits of 8: %+v", got)
	}
	got = Splits(8, 2, 1)
	if len(got) != 3 || got[2].Prefill != 3 || got[2].Decode != 2 {
		t.Fatalf("splits of 8 with prefill tp 2: %+v", got)
	}
	if got := Splits(5, 2, 2); len(got) != 0 {
		t.Fatalf("5 GPUs in tp-2 instances: %+v", got)
	}
	def, err := config.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	p, d, err := Templates(def)
	if err != nil || p.Role != "prefill" || d.Role != "decode" {
		t.Fatalf("templates of a mixed scenario: %+v %+v %v", p, d, err)
	}
	s, err := SplitScenario(def, p, d, 3, 5)
	if err != nil || !s.PD() || *s.Instances[0].Count != 3 || *s.Instances[1].Count != 5 {
		t.Fatalf("split scenario: %v", err)
	}
	// A split is a variant of the base: it carries its own name (the base
	// scenario's name on every split hid which one a result was).
	if want := def.Name + " 3P+5D"; s.Name != want || def.Name == want {
		t.Errorf("split scenario named %q, want %q (base %q)", s.Name, want, def.Name)
	}
	two := *def
	two.Instances = append(append([]config.Group(nil), def.Instances...), def.Instances...)
	if _, _, err := Templates(&two); err == nil || !strings.Contains(err.Error(), "exactly one prefill and one decode group") {
		t.Fatalf("two mixed groups: %v", err)
	}
	dpg := *def
	dp, ep := 2, 2
	dpg.Instances = []config.Group{def.Instances[0]}
	dpg.Instances[0].DP, dpg.Instances[0].EP = &dp, &ep
	if _, _, err := Templates(&dpg); err == nil || !strings.Contains(err.Error(), "instances[0].dp") {
		t.Fatalf("a DP/EP group: %v", err)
	}
}

// TestPDRatioShareGPT is the acceptance test of pd-ratio: every split of 8
// GPUs on the ShareGPT workload (resampled to 800 requests so the cluster
// reaches a steady state) gets a max rate and a goodput, and the best is
// the split with the highest max rate per GPU.
func TestPDRatioShareGPT(t *testing.T) {
	base, src := loadPD(t)
	s, err := Resample(base, src, 800)
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	res, err := PDRatio(context.Background(), s, src, 8, Options{SLO: pdSLO}, 0, func(done, total int) {
		calls++
		if total != 7 || done != calls {
			t.Errorf("progress %d/%d", done, total)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Splits) != 7 {
		t.Fatalf("%d splits, want 7", len(res.Splits))
	}
	for i, sp := range res.Splits {
		if sp.Prefill != i+1 || sp.Decode != 7-i || sp.Err != "" || sp.MaxRate == nil || sp.GoodputRPS <= 0 {
			t.Fatalf("split %d: %+v", i, sp)
		}
		if !sp.MaxRate.Best.Pass || sp.MaxRate.Above.Pass {
			t.Fatalf("split %dP%dD: best/above attainment %g/%g", sp.Prefill, sp.Decode, sp.MaxRate.Best.Attainment, sp.MaxRate.Above.Attainment)
		}
		if math.Abs(sp.GoodputPerGPU-sp.GoodputRPS/8) > 1e-12 {
			t.Fatalf("goodput per GPU %g of %g", sp.GoodputPerGPU, sp.GoodputRPS)
		}
		t.Logf("%dP%dD: max rate %.3f req/s (attainment %.3f; +5 %% %.3f), goodput %.3f req/s, %.4f per GPU",
			sp.Prefill, sp.Decode, sp.MaxRate.Best.RateRPS, sp.MaxRate.Best.Attainment, sp.MaxRate.Above.Attainment, sp.GoodputRPS, sp.GoodputPerGPU)
	}
	for i, sp := range res.Splits {
		if math.Abs(sp.RatePerGPU-sp.MaxRate.Best.RateRPS/8) > 1e-12 {
			t.Fatalf("rate per GPU %g of %g", sp.RatePerGPU, sp.MaxRate.Best.RateRPS)
		}
		if sp.RatePerGPU > res.Splits[res.Best].RatePerGPU {
			t.Fatalf("split %d has a higher max rate per GPU than the best (%d)", i, res.Best)
		}
	}
	// The answer does not depend on the number of workers.
	one, err := PDRatio(context.Background(), s, src, 8, Options{SLO: pdSLO}, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range one.Splits {
		if one.Splits[i].GoodputRPS != res.Splits[i].GoodputRPS {
			t.Fatalf("split %d: %g with 3 workers, %g with all", i, one.Splits[i].GoodputRPS, res.Splits[i].GoodputRPS)
		}
	}
}

// Scaling every step time by f and every latency bound by f scales the
// whole simulation's time by f: the max rate found is the nominal one / f,
// within the bisection's tolerance (both answers lie within it of their
// thresholds) and the nanosecond rounding of the scaled steps.
func TestMaxRateStepScale(t *testing.T) {
	s, err := config.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	src := config.Source{}
	o := Options{SLO: SLO{TTFTMs: 2000, TPOTMs: 50}}
	nom, err := MaxRate(context.Background(), s, src, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []float64{0.8, 1.25} {
		of := o
		of.StepScale = f
		of.SLO = SLO{TTFTMs: 2000 * f, TPOTMs: 50 * f}
		got, err := MaxRate(context.Background(), s, src, of)
		if err != nil {
			t.Fatal(err)
		}
		r := got.Best.RateRPS * f / nom.Best.RateRPS
		t.Logf("x%g: %.4f req/s, nominal %.4f: ratio %.5f", f, got.Best.RateRPS, nom.Best.RateRPS, r)
		if math.Abs(r-1) > 2*DefaultTolerance {
			t.Errorf("steps x%g: max rate %.4f, want %.4f / %g within %g %%", f, got.Best.RateRPS, nom.Best.RateRPS, f, 200*DefaultTolerance)
		}
	}
	// The interval at band ends 0.8 and 1.25 with the SLO unchanged: faster
	// steps carry more load, slower less; the span holds all three.
	if err := nom.AddInterval(context.Background(), s, src, o, "test band", 0.9, 0.8, 1.25); err != nil {
		t.Fatal(err)
	}
	iv := nom.Interval
	t.Logf("interval %+v", *iv)
	if !(iv.SlowRPS < nom.Best.RateRPS && nom.Best.RateRPS < iv.FastRPS) || iv.LoRPS != iv.SlowRPS || iv.HiRPS != iv.FastRPS {
		t.Errorf("interval %+v around %.4f", *iv, nom.Best.RateRPS)
	}
}

// TestMaxRateSeedVariance replicates the search with other seeds of a
// synthetic workload: each replica's answer is the search of that seed
// (checked by searching one again), the seed interval is the 5th and 95th
// percentile of the answers (nominal included, by hand), and the step band
// widens it by the ratio of each band end's answer to the nominal one.
func TestMaxRateSeedVariance(t *testing.T) {
	s, err := config.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	s.Workload = config.Workload{TimeScale: 1, Format: "jsonl", Synthetic: &workload.Synthetic{Requests: 200,
		Arrival: workload.ArrivalProcess{Kind: "poisson", Rate: 4},
		Input:   workload.LengthDist{Kind: "lognormal", Mean: 800, Sigma: 0.6},
		Output:  workload.LengthDist{Kind: "lognormal", Mean: 150, Sigma: 0.6}}}
	ctx, src := context.Background(), config.Source{}
	o := Options{SLO: SLO{TTFTMs: 1000, TPOTMs: 50}}
	nom, err := MaxRate(ctx, s, src, o)
	if err != nil {
		t.Fatal(err)
	}
	const replicas = 4
	if err := nom.AddSeedVariance(ctx, s, src, o, 0.9, replicas); err != nil {
		t.Fatal(err)
	}
	iv := nom.Interval
	t.Logf("nominal %.4f, seeds %v, interval %+v", nom.Best.RateRPS, iv.SeedRPS, *iv)
	if iv.Replicas != replicas || len(iv.SeedRPS) != replicas || iv.Band != "" {
		t.Fatalf("interval %+v", *iv)
	}
	s3 := *s
	s3.Seed = s.Seed + 3
	r3, err := MaxRate(ctx, &s3, src, o)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Best.RateRPS != iv.SeedRPS[2] {
		t.Errorf("seed %d: %v searched alone, %v in the replicas", s3.Seed, r3.Best.RateRPS, iv.SeedRPS[2])
	}
	// Seeds change the requests, so the answers differ.
	if slices.Min(iv.SeedRPS) == slices.Max(iv.SeedRPS) {
		t.Errorf("all seeds gave %v", iv.SeedRPS)
	}
	// 5 answers sorted: q05 at position 0.2 and q95 at 3.8.
	all := append([]float64{nom.Best.RateRPS}, iv.SeedRPS...)
	slices.Sort(all)
	lo, hi := all[0]+0.2*(all[1]-all[0]), all[3]+0.8*(all[4]-all[3])
	lo, hi = min(lo, nom.Best.RateRPS), max(hi, nom.Best.RateRPS)
	if math.Abs(iv.SeedLoRPS-lo) > 1e-12 || math.Abs(iv.SeedHiRPS-hi) > 1e-12 || iv.LoRPS != iv.SeedLoRPS || iv.HiRPS != iv.SeedHiRPS {
		t.Errorf("seed interval %v–%v (overall %v–%v), want %v–%v", iv.SeedLoRPS, iv.SeedHiRPS, iv.LoRPS, iv.HiRPS, lo, hi)
	}
	// The step band on top: factors fast/nominal > 1 and slow/nominal < 1.
	if err := nom.AddInterval(ctx, s, src, o, "test band", 0.9, 0.8, 1.25); err != nil {
		t.Fatal(err)
	}
	v := nom.Best.RateRPS
	wantLo, wantHi := lo*min(1, iv.SlowRPS/v, iv.FastRPS/v), hi*max(1, iv.SlowRPS/v, iv.FastRPS/v)
	if iv.SlowRPS >= v || iv.FastRPS <= v || math.Abs(iv.LoRPS-wantLo) > 1e-9 || math.Abs(iv.HiRPS-wantHi) > 1e-9 {
		t.Errorf("combined %v–%v (band ends %v, %v), want %v–%v", iv.LoRPS, iv.HiRPS, iv.FastRPS, iv.SlowRPS, wantLo, wantHi)
	}
	// A trace has no seed to vary; fewer than 2 replicas are refused.
	tr, trSrc := loadPD(t)
	if err := nom.AddSeedVariance(ctx, tr, trSrc, o, 0.9, replicas); err == nil || !strings.Contains(err.Error(), "generated workload") {
		t.Errorf("trace: %v", err)
	}
	if err := nom.AddSeedVariance(ctx, s, src, o, 0.9, 1); err == nil || !strings.Contains(err.Error(), "at least 2") {
		t.Errorf("1 replica: %v", err)
	}
}

// TestPDRatioIntervals: every split's interval is the one its own max-rate
// search gets (checked by searching one split's scenario alone), and a
// call with no source is an error.
func TestPDRatioIntervals(t *testing.T) {
	base, src := loadPD(t)
	s, err := Resample(base, src, 200)
	if err != nil {
		t.Fatal(err)
	}
	ctx, o := context.Background(), Options{SLO: pdSLO}
	res, err := PDRatio(ctx, s, src, 4, o, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.AddIntervals(ctx, s, src, o, 0, "", 0.9, 1, 1, 2); err != nil {
		t.Fatal(err)
	}
	for _, sp := range res.Splits {
		iv := sp.MaxRate.Interval
		if iv == nil || iv.Replicas != 2 || iv.LoRPS > sp.MaxRate.Best.RateRPS || iv.HiRPS < sp.MaxRate.Best.RateRPS {
			t.Fatalf("%dP%dD: interval %+v around %g", sp.Prefill, sp.Decode, iv, sp.MaxRate.Best.RateRPS)
		}
		t.Logf("%dP%dD: %.3f req/s in %.3f–%.3f", sp.Prefill, sp.Decode, sp.MaxRate.Best.RateRPS, iv.LoRPS, iv.HiRPS)
	}
	sp := res.Splits[1]
	pre, dec, err := Templates(s)
	if err != nil {
		t.Fatal(err)
	}
	one, err := SplitScenario(s, pre, dec, sp.Prefill, sp.Decode)
	if err != nil {
		t.Fatal(err)
	}
	alone, err := MaxRate(ctx, one, src, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := alone.AddSeedVariance(ctx, one, src, o, 0.9, 2); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(alone.Interval.SeedRPS, sp.MaxRate.Interval.SeedRPS) || alone.Interval.LoRPS != sp.MaxRate.Interval.LoRPS || alone.Interval.HiRPS != sp.MaxRate.Interval.HiRPS {
		t.Errorf("split %dP%dD: %+v in pd-ratio, %+v alone", sp.Prefill, sp.Decode, *sp.MaxRate.Interval, *alone.Interval)
	}
	if err := res.AddIntervals(ctx, s, src, o, 0, "", 0.9, 1, 1, 0); err == nil {
		t.Error("no band and no replicas: no error")
	}
}
