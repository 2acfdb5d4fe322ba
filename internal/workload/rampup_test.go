package workload

import (
	"math"
	"strings"
	"testing"
)

// TestRampUpGaps: with constant arrivals the gap after request i is
// exactly 1/rate(i), the rate moving linearly or geometrically from start
// to end over the requests, as vllm bench serve's ramp-up computes it.
func TestRampUpGaps(t *testing.T) {
	for _, c := range []struct {
		strategy string
		rate     func(p float64) float64
	}{
		{"linear", func(p float64) float64 { return 2 + (20-2)*p }},
		{"exponential", func(p float64) float64 { return 2 * math.Pow(10, p) }},
	} {
		t.Run(c.strategy, func(t *testing.T) {
			const n = 51
			cfg := Synthetic{Requests: n, Arrival: ArrivalProcess{Kind: Constant, RampUp: &RampUp{Strategy: c.strategy, StartRPS: 2, EndRPS: 20}},
				Input: LengthDist{Kind: Fixed, Mean: 10}, Output: LengthDist{Kind: Fixed, Mean: 10}}
			src, err := NewSynthetic(cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			reqs, err := Collect(src)
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i < n; i++ {
				want := 1e9 / c.rate(float64(i-1)/float64(n-1))
				if got := float64(reqs[i].Requests[0].Arrival - reqs[i-1].Requests[0].Arrival); math.Abs(got-want) > 1 {
					t.Fatalf("gap after request %d is %v ns, want %v", i-1, got, want)
				}
			}
		})
	}
}

// TestRampUpValidate: the ramp's fields are checked and name their path.
func TestRampUpValidate(t *testing.T) {
	for _, c := range []struct {
		a    ArrivalProcess
		want string
	}{
		{ArrivalProcess{Kind: Poisson, Rate: 3, RampUp: &RampUp{Strategy: "linear", StartRPS: 1, EndRPS: 2}}, "arrival.rate: is replaced by ramp_up"},
		{ArrivalProcess{Kind: Poisson, RampUp: &RampUp{Strategy: "steps", StartRPS: 1, EndRPS: 2}}, "ramp_up.strategy"},
		{ArrivalProcess{Kind: Gamma, CV: 1, RampUp: &RampUp{Strategy: "linear", StartRPS: 0, EndRPS: 2}}, "ramp_up.start_rps"},
		{ArrivalProcess{Kind: Burst, RampUp: &RampUp{Strategy: "linear", StartRPS: 1, EndRPS: 2}}, "ramp_up: is not used with kind burst"},
	} {
		s := Synthetic{Requests: 1, Arrival: c.a, Input: LengthDist{Kind: Fixed, Mean: 1}, Output: LengthDist{Kind: Fixed, Mean: 1}}
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.a, err, c.want)
		}
	}
}
