package workload

import (
	"io"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

func mustSynthetic(t *testing.T, cfg Synthetic, seed uint64) []Request {
	t.Helper()
	src, err := NewSynthetic(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := Collect(src)
	if err != nil {
		t.Fatal(err)
	}
	reqs := make([]Request, len(entries))
	for i, e := range entries {
		if len(e.Requests) != 1 || e.Session != "" {
			t.Fatalf("entry %d is not a plain request", i)
		}
		reqs[i] = e.Requests[0]
	}
	return reqs
}

func meanStd(xs []float64) (mean, std float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(xs)-1))
}

func TestSyntheticDistributions(t *testing.T) {
	const n = 20000
	fixed := LengthDist{Kind: Fixed, Mean: 7}
	tests := []struct {
		name            string
		arrival         ArrivalProcess
		input           LengthDist
		wantGap, gapTol float64 // mean inter-arrival (s), relative tolerance
		wantCV, cvTol   float64 // CV of gaps (skipped when cvTol is 0)
		wantIn, inTol   float64 // mean input length, relative tolerance
	}{
		{"poisson+lognormal", ArrivalProcess{Kind: Poisson, Rate: 10}, LengthDist{Kind: LogNormal, Mean: 1000, Sigma: 1}, 0.1, 0.03, 1, 0.05, 1000, 0.04},
		{"gamma+normal", ArrivalProcess{Kind: Gamma, Rate: 10, CV: 2}, LengthDist{Kind: Normal, Mean: 500, Sigma: 100}, 0.1, 0.05, 2, 0.1, 500, 0.01},
		{"gamma regular+uniform", ArrivalProcess{Kind: Gamma, Rate: 4, CV: 0.5}, LengthDist{Kind: Uniform, Min: 10, Max: 30}, 0.25, 0.02, 0.5, 0.05, 20, 0.01},
		{"constant+empirical", ArrivalProcess{Kind: Constant, Rate: 2}, LengthDist{Kind: Empirical, Values: []int{10, 100}, Weights: []float64{3, 1}}, 0.5, 1e-9, 0, 0, 32.5, 0.03},
		{"constant+empirical equal", ArrivalProcess{Kind: Constant, Rate: 1000}, LengthDist{Kind: Empirical, Values: []int{1, 3}}, 0.001, 1e-6, 0, 0, 2, 0.02},
		{"poisson+fixed", ArrivalProcess{Kind: Poisson, Rate: 0.5}, LengthDist{Kind: Fixed, Mean: 42}, 2, 0.03, 1, 0.05, 42, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Synthetic{Requests: n, Arrival: tc.arrival, Input: tc.input, Output: fixed}
			reqs := mustSynthetic(t, cfg, 42)
			if len(reqs) != n {
				t.Fatalf("%d requests, want %d", len(reqs), n)
			}
			if reqs[0].Arrival != 0 {
				t.Errorf("first arrival %d, want 0", reqs[0].Arrival)
			}
			gaps := make([]float64, n-1)
			ins := make([]float64, n)
			for i, r := range reqs {
				if r.ID != int64(i) || r.OutputTokens != 7 || r.InputTokens < 1 {
					t.Fatalf("bad request %+v", r)
				}
				ins[i] = float64(r.InputTokens)
				if i > 0 {
					gaps[i-1] = float64(r.Arrival-reqs[i-1].Arrival) / 1e9
				}
			}
			gm, gs := meanStd(gaps)
			if math.Abs(gm-tc.wantGap) > tc.gapTol*tc.wantGap {
				t.Errorf("mean gap %v, want %v ± %v%%", gm, tc.wantGap, 100*tc.gapTol)
			}
			if tc.cvTol > 0 && math.Abs(gs/gm-tc.wantCV) > tc.cvTol*tc.wantCV {
				t.Errorf("gap CV %v, want %v ± %v%%", gs/gm, tc.wantCV, 100*tc.cvTol)
			}
			im, _ := meanStd(ins)
			if math.Abs(im-tc.wantIn) > tc.inTol*tc.wantIn {
				t.Errorf("mean input %v, want %v ± %v%%", im, tc.wantIn, 100*tc.inTol)
			}
		})
	}
}

func TestSyntheticClampAndUniformRange(t *testing.T) {
	cfg := Synthetic{
		Requests: 5000,
		Arrival:  ArrivalProcess{Kind: Poisson, Rate: 100},
		Input:    LengthDist{Kind: Normal, Mean: 50, Sigma: 100, Min: 20, Max: 80},
		Output:   LengthDist{Kind: Uniform, Min: 0, Max: 3},
	}
	seen := map[int]bool{}
	hitLo, hitHi := false, false
	for _, r := range mustSynthetic(t, cfg, 1) {
		if r.InputTokens < 20 || r.InputTokens > 80 {
			t.Fatalf("input %d outside [20, 80]", r.InputTokens)
		}
		hitLo = hitLo || r.InputTokens == 20
		hitHi = hitHi || r.InputTokens == 80
		seen[r.OutputTokens] = true
	}
	if !hitLo || !hitHi {
		t.Error("clamp bounds never reached")
	}
	if !reflect.DeepEqual(seen, map[int]bool{1: true, 2: true, 3: true}) {
		t.Errorf("uniform [max(1,0), 3] produced %v", seen)
	}
}

func TestSyntheticDeterminism(t *testing.T) {
	cfg := ShareGPTLike(2000, 10)
	a := mustSynthetic(t, cfg, 7)
	b := mustSynthetic(t, cfg, 7)
	c := mustSynthetic(t, cfg, 8)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed gave different workloads")
	}
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds gave the same workload")
	}
	// Streams are per purpose: changing the output distribution leaves
	// arrivals and input lengths untouched.
	cfg2 := cfg
	cfg2.Output = LengthDist{Kind: Fixed, Mean: 3}
	d := mustSynthetic(t, cfg2, 7)
	for i := range a {
		if a[i].Arrival != d[i].Arrival || a[i].InputTokens != d[i].InputTokens {
			t.Fatalf("request %d: arrivals or inputs changed with the output distribution", i)
		}
	}
}

func TestShareGPTLikeMeans(t *testing.T) {
	reqs := mustSynthetic(t, ShareGPTLike(20000, 10), 3)
	var in, out float64
	for _, r := range reqs {
		in += float64(r.InputTokens) / float64(len(reqs))
		out += float64(r.OutputTokens) / float64(len(reqs))
	}
	if math.Abs(in-1000) > 40 || math.Abs(out-250) > 10 {
		t.Errorf("mean input %v (want ~1000), mean output %v (want ~250)", in, out)
	}
}

func TestSyntheticStreamsMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	src, err := NewSynthetic(ShareGPTLike(1_000_000, 1000), 1)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n, last := 0, int64(-1)
	for {
		e, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if e.Requests[0].Arrival < last {
			t.Fatal("arrivals out of order")
		}
		last = e.Requests[0].Arrival
		n++
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if n != 1_000_000 {
		t.Fatalf("%d requests", n)
	}
	if grow := int64(after.HeapAlloc) - int64(before.HeapAlloc); grow > 1<<20 {
		t.Errorf("heap grew by %d bytes while streaming", grow)
	}
}

func TestSyntheticValidate(t *testing.T) {
	good := ShareGPTLike(10, 5)
	if err := good.Validate(); err != nil {
		t.Fatalf("ShareGPTLike invalid: %v", err)
	}
	tests := []struct {
		name   string
		mutate func(*Synthetic)
		want   string
	}{
		{"requests", func(s *Synthetic) { s.Requests = 0 }, "workload.synthetic.requests: must be > 0 (got 0)"},
		{"rate", func(s *Synthetic) { s.Arrival.Rate = -1 }, "workload.synthetic.arrival.rate: must be > 0 and finite (got -1)"},
		{"rate NaN", func(s *Synthetic) { s.Arrival.Rate = math.NaN() }, "workload.synthetic.arrival.rate: must be > 0 and finite (got NaN)"},
		{"arrival kind", func(s *Synthetic) { s.Arrival.Kind = "bursty" }, `workload.synthetic.arrival.kind: unknown kind "bursty"`},
		{"arrival kind missing", func(s *Synthetic) { s.Arrival.Kind = "" }, "workload.synthetic.arrival.kind: is missing"},
		{"gamma cv", func(s *Synthetic) { s.Arrival.Kind = Gamma }, "workload.synthetic.arrival.cv: must be in (0, 100] for kind gamma (got 0)"},
		{"gamma cv too large", func(s *Synthetic) { s.Arrival.Kind = Gamma; s.Arrival.CV = 1e155 }, "workload.synthetic.arrival.cv: must be in (0, 100] for kind gamma (got 1e+155)"},
		{"cv unused", func(s *Synthetic) { s.Arrival.CV = 2 }, `workload.synthetic.arrival.cv: is only used with kind gamma`},
		{"length kind", func(s *Synthetic) { s.Input.Kind = "zipf" }, `workload.synthetic.input.kind: unknown kind "zipf"`},
		{"lognormal mean", func(s *Synthetic) { s.Output.Mean = 0 }, "workload.synthetic.output.mean: must be in (0, 2147483647] (got 0)"},
		{"lognormal sigma", func(s *Synthetic) { s.Output.Sigma = -1 }, "workload.synthetic.output.sigma: must be >= 0 and finite (got -1)"},
		{"max below min", func(s *Synthetic) { s.Input.Min = 10; s.Input.Max = 5 }, "workload.synthetic.input.max: must be >= max(1, min) = 10 (got 5)"},
		{"negative min", func(s *Synthetic) { s.Input.Min = -1 }, "workload.synthetic.input.min: must be in [0, 2147483647] (got -1)"},
		{"fixed mean", func(s *Synthetic) { s.Input = LengthDist{Kind: Fixed, Mean: 0.5} }, "workload.synthetic.input.mean: must be in [1, 2147483647] for kind fixed (got 0.5)"},
		{"uniform max", func(s *Synthetic) { s.Input = LengthDist{Kind: Uniform, Min: 3} }, "workload.synthetic.input.max: is required for kind uniform"},
		{"uniform mean", func(s *Synthetic) { s.Input = LengthDist{Kind: Uniform, Max: 3, Mean: 2} }, `workload.synthetic.input.mean: is not used with kind "uniform"`},
		{"values unused", func(s *Synthetic) { s.Input.Values = []int{3} }, `workload.synthetic.input.values: is not used with kind "lognormal"`},
		{"empirical empty", func(s *Synthetic) { s.Input = LengthDist{Kind: Empirical} }, "workload.synthetic.input.values: must list at least one length"},
		{"empirical value", func(s *Synthetic) { s.Input = LengthDist{Kind: Empirical, Values: []int{4, 0}} }, "workload.synthetic.input.values[1]: must be in [1, 2147483647] (got 0)"},
		{"empirical weights len", func(s *Synthetic) { s.Input = LengthDist{Kind: Empirical, Values: []int{4}, Weights: []float64{1, 2}} }, "workload.synthetic.input.weights: has 2 entries but values has 1"},
		{"empirical weight", func(s *Synthetic) { s.Input = LengthDist{Kind: Empirical, Values: []int{4}, Weights: []float64{-1}} }, "workload.synthetic.input.weights[0]: must be >= 0 and finite (got -1)"},
		{"empirical zero sum", func(s *Synthetic) { s.Input = LengthDist{Kind: Empirical, Values: []int{4}, Weights: []float64{0}} }, "workload.synthetic.input.weights: must have a positive, finite sum (got 0)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			cfg.Input.Values = nil
			tc.mutate(&cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			found := false
			for _, line := range strings.Split(err.Error(), "\n") {
				found = found || strings.HasPrefix(line, tc.want)
			}
			if !found {
				t.Errorf("error %q\nhas no line starting %q", err, tc.want)
			}
			if _, err := NewSynthetic(cfg, 1); err == nil {
				t.Error("NewSynthetic accepted an invalid config")
			}
		})
	}
	// Every problem is reported, not only the first.
	bad := Synthetic{}
	if n := len(strings.Split(bad.Validate().Error(), "\n")); n < 4 {
		t.Errorf("zero config reported %d problems, want at least 4", n)
	}
}

func TestSyntheticYAMLRoundTrip(t *testing.T) {
	src := `requests: 100
arrival:
  kind: gamma
  rate: 2.5
  cv: 3
input:
  kind: lognormal
  mean: 1000
  sigma: 1
  max: 8192
output:
  kind: empirical
  values: [10, 20, 30]
  weights: [0.5, 0.25, 0.25]
`
	var cfg Synthetic
	if err := yaml.UnmarshalWithOptions([]byte(src), &cfg, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	want := Synthetic{
		Requests: 100,
		Arrival:  ArrivalProcess{Kind: Gamma, Rate: 2.5, CV: 3},
		Input:    LengthDist{Kind: LogNormal, Mean: 1000, Sigma: 1, Max: 8192},
		Output:   LengthDist{Kind: Empirical, Values: []int{10, 20, 30}, Weights: []float64{0.5, 0.25, 0.25}},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("decoded %+v\nwant    %+v", cfg, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var back Synthetic
	if err := yaml.UnmarshalWithOptions(out, &back, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, cfg) {
		t.Fatalf("round trip changed the config:\n%s", out)
	}
	if strings.Count(string(out), "sigma:") != 1 || strings.Contains(string(out), "cv: 0") {
		t.Errorf("zero fields not omitted:\n%s", out)
	}
}
