package search

import (
	"fmt"
	"io"
	"sort"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/sweep"
	"github.com/servesim/servesim/internal/workload"
)

// Resample returns s with its trace replaced by a synthetic workload of n
// requests shaped like the trace: prompt and output lengths drawn
// (independently, seeded by the scenario's seed) from the trace's lengths,
// Poisson arrivals at the trace's mean rate. It lets a short trace load a
// large cluster long enough to measure a sustained rate. Token ids, and so
// prefix-cache hits, and agentic sessions' tool delays are not kept. A
// synthetic scenario is an error (set workload.synthetic.requests instead).
func Resample(s *config.Scenario, src config.Source, n int) (*config.Scenario, error) {
	if n <= 0 {
		return nil, fmt.Errorf("resample: the request count must be > 0 (got %d)", n)
	}
	if s.Workload.Synthetic != nil {
		return nil, fmt.Errorf("resample: the workload is already synthetic; set workload.synthetic.requests instead")
	}
	rate, err := traceRate(s, src)
	if err != nil {
		return nil, err
	}
	b, err := assemble.Build(s, src)
	if err != nil {
		return nil, err
	}
	ws, closer, err := b.Open()
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	in, out := map[int]float64{}, map[int]float64{}
	for {
		e, err := ws.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("resample: read workload: %w", err)
		}
		for _, r := range e.Requests {
			in[r.InputTokens]++
			out[r.OutputTokens]++
		}
	}
	syn := workload.Synthetic{
		Requests: n,
		Arrival:  workload.ArrivalProcess{Kind: workload.Poisson, Rate: rate},
		Input:    empirical(in),
		Output:   empirical(out),
	}
	wp, err := sweep.ParsePath("workload")
	if err != nil {
		return nil, fmt.Errorf("resample: %w", err)
	}
	return sweep.Apply(s, sweep.Assignment{Path: wp, Value: config.Workload{
		Format:    "jsonl",
		TimeScale: 1,
		Synthetic: &syn,
	}})
}

// empirical turns length counts into an empirical distribution with the
// lengths ascending.
func empirical(counts map[int]float64) workload.LengthDist {
	d := workload.LengthDist{Kind: workload.Empirical}
	for v := range counts {
		d.Values = append(d.Values, v)
	}
	sort.Ints(d.Values)
	for _, v := range d.Values {
		d.Weights = append(d.Weights, counts[v])
	}
	return d
}
