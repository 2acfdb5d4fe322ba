package workload

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/servesim/servesim/internal/des"
)

// Random-stream purposes used by NewSynthetic.
const (
	purposeArrivals = "arrivals"
	purposeInput    = "input-lengths"
	purposeOutput   = "output-lengths"
)

// synthetic is the Source returned by NewSynthetic.
type synthetic struct {
	left    int   // requests still to generate
	id      int64 // next request id
	t       int64 // next arrival, ns
	gap     func() float64
	in, out func() int
	err     error // sticky
	one     singles
}

// NewSynthetic returns a Source that generates cfg.Requests plain requests
// on demand (nothing is precomputed, so a million requests cost no memory).
// The same cfg and seed give the same sequence. Arrivals, input lengths
// and output lengths each draw from their own des.Stream ("arrivals",
// "input-lengths", "output-lengths"), so changing one distribution never
// changes the numbers drawn for another. Requests carry no token ids.
func NewSynthetic(cfg Synthetic, seed uint64) (Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("workload: invalid synthetic config: %w", err)
	}
	s := &synthetic{
		left: cfg.Requests,
		gap:  gapSampler(cfg.Arrival, des.Stream(seed, purposeArrivals)),
		in:   lengthSampler(cfg.Input, des.Stream(seed, purposeInput)),
		out:  lengthSampler(cfg.Output, des.Stream(seed, purposeOutput)),
	}
	if r := cfg.Arrival.RampUp; r != nil {
		// A gap at rate 1 scaled to the ramp's rate after this request.
		unit := cfg.Arrival
		unit.Rate = 1
		draw := gapSampler(unit, des.Stream(seed, purposeArrivals))
		s.gap = func() float64 { return draw() / r.rate(s.id-1, cfg.Requests) }
	}
	return s, nil
}

// Next implements Source.
func (s *synthetic) Next() (Entry, error) {
	if s.err != nil {
		return Entry{}, s.err
	}
	if s.left <= 0 {
		return Entry{}, io.EOF
	}
	r := Request{ID: s.id, Arrival: s.t, InputTokens: s.in(), OutputTokens: s.out()}
	s.left--
	s.id++
	if s.left > 0 {
		g := math.Round(s.gap() * 1e9)
		if !(g >= 0) { // NaN or negative: cannot happen with a valid config
			g = 0
		}
		if g > float64(MaxTimeNs-s.t) {
			s.err = &InputError{fmt.Errorf("workload: synthetic arrival after request %d is beyond the simulator's clock bound of %d ns; raise workload.synthetic.arrival.rate or generate fewer requests", r.ID, int64(MaxTimeNs))}
			return Entry{}, s.err
		}
		s.t += int64(g)
	}
	return s.one.entry(r), nil
}

// Release implements Releaser: plain entries' storage is reused.
func (s *synthetic) Release(e Entry) { s.one.release(e) }

// Remaining implements Counter: the requests not yet generated.
func (s *synthetic) Remaining() (int64, bool) {
	if s.err != nil {
		return 0, false
	}
	n := int64(max(s.left, 0))
	s.left = 0
	return n, true
}

// gapSampler returns a sampler of inter-arrival times in seconds.
func gapSampler(a ArrivalProcess, rng *rand.Rand) func() float64 {
	switch a.Kind {
	case Burst:
		return func() float64 { return 0 }
	case Constant:
		g := 1 / a.Rate
		return func() float64 { return g }
	case Gamma:
		// Shape k = 1/cv^2, rate k*rate: mean 1/rate, CV cv.
		k := 1 / (a.CV * a.CV)
		d := distuv.Gamma{Alpha: k, Beta: k * a.Rate, Src: rng}
		return d.Rand
	default: // Poisson
		d := distuv.Exponential{Rate: a.Rate, Src: rng}
		return d.Rand
	}
}

// lengthSampler returns a sampler of token lengths, rounded and clamped.
func lengthSampler(d LengthDist, rng *rand.Rand) func() int {
	lo := max(1, d.Min)
	hi := maxTokens
	if d.Max > 0 {
		hi = d.Max
	}
	clamp := func(x float64) int {
		x = math.Round(x)
		switch {
		case !(x >= float64(lo)): // also NaN
			return lo
		case x > float64(hi):
			return hi
		}
		return int(x)
	}
	switch d.Kind {
	case Fixed:
		v := clamp(d.Mean)
		return func() int { return v }
	case Uniform:
		n := uint64(hi - lo + 1)
		return func() int { return lo + int(rng.Uint64N(n)) }
	case Normal:
		dist := distuv.Normal{Mu: d.Mean, Sigma: d.Sigma, Src: rng}
		return func() int { return clamp(dist.Rand()) }
	case LogNormal:
		dist := distuv.LogNormal{Mu: math.Log(d.Mean) - d.Sigma*d.Sigma/2, Sigma: d.Sigma, Src: rng}
		return func() int { return clamp(dist.Rand()) }
	default: // Empirical
		w := d.Weights
		if len(w) == 0 {
			w = make([]float64, len(d.Values))
			for i := range w {
				w[i] = 1
			}
		}
		dist := distuv.NewCategorical(w, rng)
		values := d.Values
		return func() int { return clamp(float64(values[int(dist.Rand())])) }
	}
}

// Scale returns a Source that multiplies every request's Arrival by factor
// (rounded to whole ns): factor 0.5 compresses the trace to twice the
// rate, 2 stretches it to half. Session Delays (tool times) are not
// scaled, and a session's later sub-requests keep Arrival 0. A factor that
// is not finite and > 0, or an arrival that would overflow int64, makes
// Next return an error.
func Scale(src Source, factor float64) Source {
	return &scaled{src: src, factor: factor}
}

type scaled struct {
	src    Source
	factor float64
}

// Next implements Source.
func (s *scaled) Next() (Entry, error) {
	if !(s.factor > 0) || math.IsInf(s.factor, 0) {
		return Entry{}, fmt.Errorf("workload: scale factor must be > 0 and finite (got %v)", s.factor)
	}
	e, err := s.src.Next()
	if err != nil {
		return Entry{}, err
	}
	// The entry's requests are ours (the Source contract), so they are
	// scaled in place rather than copied.
	reqs := e.Requests
	for i := range reqs {
		a := math.Round(float64(reqs[i].Arrival) * s.factor)
		if a > MaxTimeNs {
			return Entry{}, &InputError{fmt.Errorf("workload: scaling arrival %d ns of request %d by %v goes beyond the simulator's clock bound of %d ns; use a smaller factor",
				reqs[i].Arrival, reqs[i].ID, s.factor, int64(MaxTimeNs))}
		}
		reqs[i].Arrival = int64(a)
	}
	return e, nil
}

// Release implements Releaser by passing e to the wrapped source.
func (s *scaled) Release(e Entry) { Release(s.src, e) }

// Remaining implements Counter for a wrapped Counter (scaling changes
// arrivals, not the count).
func (s *scaled) Remaining() (int64, bool) { return Remaining(s.src) }

// AllDueAtZero returns a Source whose entries all arrive at 0, in src's
// order: the arrival times are ignored (closed-loop replays of a trace,
// workload.ignore_arrival_times). A plain request's client abort time
// keeps its distance from the arrival (at least 1 ns, as 0 means never).
// Session sub-requests after the first keep their delays.
func AllDueAtZero(src Source) Source { return &dueAtZero{src: src} }

type dueAtZero struct{ src Source }

// Next implements Source.
func (d *dueAtZero) Next() (Entry, error) {
	e, err := d.src.Next()
	if err != nil || len(e.Requests) == 0 {
		return e, err
	}
	first := &e.Requests[0]
	if first.AbortAt > 0 {
		first.AbortAt = max(first.AbortAt-first.Arrival, 1)
	}
	first.Arrival = 0
	return e, nil
}

// Release implements Releaser by passing e to the wrapped source.
func (d *dueAtZero) Release(e Entry) { Release(d.src, e) }

// Remaining implements Counter for a wrapped Counter.
func (d *dueAtZero) Remaining() (int64, bool) { return Remaining(d.src) }

// Take returns a Source that yields the first n requests of src, then
// io.EOF. Every sub-request of a session counts; a session that would
// exceed n is cut after its first requests.
func Take(src Source, n int) Source {
	return &taken{src: src, left: n}
}

type taken struct {
	src  Source
	left int
}

// Next implements Source.
func (t *taken) Next() (Entry, error) {
	if t.left <= 0 {
		return Entry{}, io.EOF
	}
	e, err := t.src.Next()
	if err != nil {
		return e, err
	}
	if len(e.Requests) > t.left {
		e.Requests = e.Requests[:t.left]
	}
	t.left -= len(e.Requests)
	return e, nil
}

// Release implements Releaser by passing e to the wrapped source.
func (t *taken) Release(e Entry) { Release(t.src, e) }

// Remaining implements Counter for a wrapped Counter: the first requests
// up to the ones still allowed.
func (t *taken) Remaining() (int64, bool) {
	if t.left <= 0 {
		return 0, true
	}
	n, ok := Remaining(t.src)
	if !ok {
		return 0, false
	}
	n = min(n, int64(t.left))
	t.left = 0
	return n, true
}

// Collect reads src to io.EOF and returns all entries. It holds the whole
// workload in memory; use it for small traces and tests.
func Collect(src Source) ([]Entry, error) {
	var out []Entry
	for {
		e, err := src.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
}
