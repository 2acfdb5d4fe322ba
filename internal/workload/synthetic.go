package workload

import (
	"errors"
	"fmt"
	"math"
)

// ArrivalKind names an arrival process.
type ArrivalKind string

// Arrival processes.
const (
	// Poisson arrivals: exponential inter-arrival times with mean 1/rate.
	Poisson ArrivalKind = "poisson"
	// Gamma arrivals: gamma inter-arrival times with mean 1/rate and
	// coefficient of variation cv (cv > 1 is burstier than Poisson, cv < 1
	// more regular; cv = 1 is Poisson).
	Gamma ArrivalKind = "gamma"
	// Constant arrivals: exactly 1/rate apart.
	Constant ArrivalKind = "constant"
	// Burst: every request at time 0 (vLLM's benchmark client with
	// --request-rate inf); usually paired with workload.max_concurrency.
	Burst ArrivalKind = "burst"
)

// LengthKind names a token-length distribution.
type LengthKind string

// Length distributions.
const (
	// Fixed: every length is mean.
	Fixed LengthKind = "fixed"
	// Uniform: integers uniform in [max(1,min), max].
	Uniform LengthKind = "uniform"
	// Normal: mean + sigma * N(0,1).
	Normal LengthKind = "normal"
	// LogNormal: exp(mu + sigma * N(0,1)) with mu = ln(mean) - sigma^2/2,
	// so that the mean of the (unrounded, unclamped) lengths is mean.
	LogNormal LengthKind = "lognormal"
	// Empirical: one of values, drawn with probability proportional to
	// weights (equal weights when weights is empty).
	Empirical LengthKind = "empirical"
)

// Synthetic configures a generated workload. It has no seed: the seed is
// passed to NewSynthetic so one config can be run with many seeds.
type Synthetic struct {
	// Requests is the number of requests to generate (> 0).
	Requests int `yaml:"requests" json:"requests"`
	// Arrival is the arrival process.
	Arrival ArrivalProcess `yaml:"arrival" json:"arrival"`
	// Input is the prompt-length distribution (tokens).
	Input LengthDist `yaml:"input" json:"input"`
	// Output is the output-length distribution (tokens).
	Output LengthDist `yaml:"output" json:"output"`
}

// ArrivalProcess configures inter-arrival times. The first request arrives
// at time 0 (as vLLM's benchmark client sends it); each later one a sampled
// gap after the previous. Gaps are rounded to whole ns.
type ArrivalProcess struct {
	// Kind is poisson, gamma or constant.
	Kind ArrivalKind `yaml:"kind" json:"kind"`
	// Rate is the mean arrival rate in requests per second (> 0; unused,
	// and left 0, with kind burst).
	Rate float64 `yaml:"rate" json:"rate"`
	// CV is, for kind gamma only, the coefficient of variation of the
	// inter-arrival times (> 0): the gamma shape is 1/cv^2. Leave it 0 for
	// the other kinds.
	CV float64 `yaml:"cv,omitempty" json:"cv,omitempty"`
	// RampUp, when set, replaces Rate by a rate that moves from StartRPS
	// to EndRPS over the requests, as vllm bench serve's --ramp-up-*
	// options do; Rate is then left 0.
	RampUp *RampUp `yaml:"ramp_up,omitempty" json:"ramp_up,omitempty"`
}

// RampUp is vllm bench serve's ramp-up of the request rate: the gap after
// request i (of n) is drawn at the rate start + (end - start) * p
// (linear) or start * (end/start)^p (exponential), p = i / (n - 1).
type RampUp struct {
	Strategy string  `yaml:"strategy" json:"strategy"` // linear or exponential
	StartRPS float64 `yaml:"start_rps" json:"start_rps"`
	EndRPS   float64 `yaml:"end_rps" json:"end_rps"`
}

// rate is the request rate for the gap after request i of n.
func (r *RampUp) rate(i int64, n int) float64 {
	p := float64(i) / float64(max(n-1, 1))
	if r.Strategy == "exponential" {
		return r.StartRPS * math.Pow(r.EndRPS/r.StartRPS, p)
	}
	return r.StartRPS + (r.EndRPS-r.StartRPS)*p
}

// LengthDist configures a token-length distribution. Samples are rounded to
// the nearest integer and clamped to [max(1,min), max] (max 0 means no
// upper bound beyond 2^31-1). Clamping and rounding shift the mean slightly
// when much mass lies outside the bounds.
type LengthDist struct {
	// Kind is fixed, uniform, normal, lognormal or empirical.
	Kind LengthKind `yaml:"kind" json:"kind"`
	// Mean is the length for fixed, and the mean for normal and lognormal.
	// Unused (0) for uniform and empirical.
	Mean float64 `yaml:"mean,omitempty" json:"mean,omitempty"`
	// Sigma is the standard deviation for normal and, for lognormal, the
	// standard deviation of the underlying normal (of ln length). Unused
	// (0) for the other kinds.
	Sigma float64 `yaml:"sigma,omitempty" json:"sigma,omitempty"`
	// Min is the lower clamp (>= 0; the effective bound is at least 1).
	// For uniform it is the lower end of the range.
	Min int `yaml:"min,omitempty" json:"min,omitempty"`
	// Max is the upper clamp (0 = none); for uniform, the upper end of the
	// range (required).
	Max int `yaml:"max,omitempty" json:"max,omitempty"`
	// Values are the possible lengths for empirical (each >= 1).
	Values []int `yaml:"values,omitempty" json:"values,omitempty"`
	// Weights are the relative frequencies of Values for empirical (same
	// length as Values, each >= 0, positive sum); empty means equal.
	Weights []float64 `yaml:"weights,omitempty" json:"weights,omitempty"`
}

// ShareGPTLike returns a synthetic workload shaped like ShareGPT chat
// traffic: Poisson arrivals at rate req/s, lognormal prompt lengths (mean
// 1000 tokens, sigma 1.0, at most 16384) and lognormal output lengths (mean
// 250, sigma 1.0, at most 4096).
func ShareGPTLike(requests int, rate float64) Synthetic {
	return Synthetic{
		Requests: requests,
		Arrival:  ArrivalProcess{Kind: Poisson, Rate: rate},
		Input:    LengthDist{Kind: LogNormal, Mean: 1000, Sigma: 1.0, Max: 16384},
		Output:   LengthDist{Kind: LogNormal, Mean: 250, Sigma: 1.0, Max: 4096},
	}
}

// MaxCV bounds the gamma arrivals' coefficient of variation: the shape
// 1/cv^2 stays >= 1e-4, which the gamma sampler handles exactly.
const MaxCV = 100

// SyntheticPath is the config path Validate names fields under.
const SyntheticPath = "workload.synthetic"

// Validate checks the config and returns every problem found, joined, each
// naming its field path, e.g.
// "workload.synthetic.arrival.rate: must be > 0 (got -1)".
func (s Synthetic) Validate() error {
	return s.ValidateAt(SyntheticPath)
}

// ValidateAt is Validate with the field paths rooted at path.
func (s Synthetic) ValidateAt(path string) error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", path, field, fmt.Sprintf(format, args...)))
	}
	if s.Requests <= 0 {
		bad("requests", "must be > 0 (got %d)", s.Requests)
	}
	errs = append(errs, s.Arrival.validate(path+".arrival")...)
	errs = append(errs, s.Input.validate(path+".input")...)
	errs = append(errs, s.Output.validate(path+".output")...)
	return errors.Join(errs...)
}

// validate checks an arrival process; path names its fields.
func (a ArrivalProcess) validate(path string) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", path, field, fmt.Sprintf(format, args...)))
	}
	switch a.Kind {
	case Poisson, Constant, Gamma:
	case Burst:
		if a.Rate != 0 {
			bad("rate", "is not used with kind burst (every request arrives at 0); remove it")
		}
	case "":
		bad("kind", "is missing; use poisson, gamma, constant or burst")
	default:
		bad("kind", "unknown kind %q; use poisson, gamma, constant or burst", a.Kind)
	}
	if r := a.RampUp; r != nil {
		if a.Kind == Burst {
			bad("ramp_up", "is not used with kind burst; remove it")
		}
		if a.Rate != 0 {
			bad("rate", "is replaced by ramp_up's rates; remove it")
		}
		if r.Strategy != "linear" && r.Strategy != "exponential" {
			bad("ramp_up.strategy", "must be linear or exponential (got %q)", r.Strategy)
		}
		if !(r.StartRPS > 0) || math.IsInf(r.StartRPS, 0) {
			bad("ramp_up.start_rps", "must be > 0 and finite (got %v)", r.StartRPS)
		}
		if !(r.EndRPS > 0) || math.IsInf(r.EndRPS, 0) {
			bad("ramp_up.end_rps", "must be > 0 and finite (got %v)", r.EndRPS)
		}
	} else if a.Kind != Burst && (!(a.Rate > 0) || math.IsInf(a.Rate, 0)) {
		bad("rate", "must be > 0 and finite (got %v)", a.Rate)
	}
	if a.Kind == Gamma {
		if !(a.CV > 0 && a.CV <= MaxCV) {
			bad("cv", "must be in (0, %g] for kind gamma (got %v); larger values make the gamma shape 1/cv^2 vanish", float64(MaxCV), a.CV)
		}
	} else if a.CV != 0 {
		bad("cv", "is only used with kind gamma (got %v with kind %q); remove it", a.CV, a.Kind)
	}
	return errs
}

func (d LengthDist) validate(path string) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", path, field, fmt.Sprintf(format, args...)))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	unused := func(field string, set bool) {
		if set {
			bad(field, "is not used with kind %q; remove it", d.Kind)
		}
	}
	if d.Min < 0 || d.Min > maxTokens {
		bad("min", "must be in [0, %d] (got %d)", maxTokens, d.Min)
	}
	if d.Max < 0 || d.Max > maxTokens {
		bad("max", "must be in [0, %d] (got %d; 0 means no upper bound)", maxTokens, d.Max)
	}
	if d.Max > 0 && d.Max < max(1, d.Min) {
		bad("max", "must be >= max(1, min) = %d (got %d)", max(1, d.Min), d.Max)
	}
	switch d.Kind {
	case Fixed:
		if !(d.Mean >= 1) || !finite(d.Mean) || d.Mean > maxTokens {
			bad("mean", "must be in [1, %d] for kind fixed (got %v)", maxTokens, d.Mean)
		}
		unused("sigma", d.Sigma != 0)
	case Uniform:
		if d.Max <= 0 {
			bad("max", "is required for kind uniform (the upper end of the range)")
		}
		unused("mean", d.Mean != 0)
		unused("sigma", d.Sigma != 0)
	case Normal, LogNormal:
		if !(d.Mean > 0) || !finite(d.Mean) || d.Mean > maxTokens {
			bad("mean", "must be in (0, %d] (got %v)", maxTokens, d.Mean)
		}
		if !(d.Sigma >= 0) || !finite(d.Sigma) {
			bad("sigma", "must be >= 0 and finite (got %v)", d.Sigma)
		} else if d.Kind == LogNormal && d.Sigma > 10 {
			bad("sigma", "must be at most 10 for kind lognormal (got %v); it is the sigma of ln(length)", d.Sigma)
		}
	case Empirical:
		d.validateEmpirical(bad)
		unused("mean", d.Mean != 0)
		unused("sigma", d.Sigma != 0)
	case "":
		bad("kind", "is missing; use fixed, uniform, normal, lognormal or empirical")
	default:
		bad("kind", "unknown kind %q; use fixed, uniform, normal, lognormal or empirical", d.Kind)
	}
	if d.Kind != Empirical {
		unused("values", len(d.Values) > 0)
		unused("weights", len(d.Weights) > 0)
	}
	return errs
}

func (d LengthDist) validateEmpirical(bad func(field, format string, args ...any)) {
	if len(d.Values) == 0 {
		bad("values", "must list at least one length for kind empirical")
	}
	for i, v := range d.Values {
		if v < 1 || v > maxTokens {
			bad(fmt.Sprintf("values[%d]", i), "must be in [1, %d] (got %d)", maxTokens, v)
		}
	}
	if len(d.Weights) == 0 {
		return
	}
	if len(d.Weights) != len(d.Values) {
		bad("weights", "has %d entries but values has %d; give one weight per value or none", len(d.Weights), len(d.Values))
		return
	}
	sum := 0.0
	for i, w := range d.Weights {
		if !(w >= 0) || math.IsInf(w, 0) {
			bad(fmt.Sprintf("weights[%d]", i), "must be >= 0 and finite (got %v)", w)
			return
		}
		sum += w
	}
	if !(sum > 0) || math.IsInf(sum, 0) {
		bad("weights", "must have a positive, finite sum (got %v)", sum)
	}
}
