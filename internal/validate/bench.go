package validate

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/workload"
)

// A vllm bench serve result file (--save-result --save-detailed) holds,
// besides its summary statistics, one entry per request in parallel lists:
// input_lens and output_lens (tokens), ttfts (seconds), itls (the gaps
// between streamed tokens, seconds), start_times (the client's
// time.perf_counter() when it sent the request, seconds) and errors ("" for
// a success). Its times are client-side: the HTTP round trip, the API
// server's tokenisation and the detokenisation and streaming of the output
// are inside them. The engine settings are not in the file.

// benchFile is the part of a bench serve result ReadBench reads.
type benchFile struct {
	ModelID    string      `json:"model_id"`
	InputLens  []int       `json:"input_lens"`
	OutputLens []int       `json:"output_lens"`
	TTFTs      []float64   `json:"ttfts"`
	ITLs       [][]float64 `json:"itls"`
	StartTimes []float64   `json:"start_times"`
	Errors     []string    `json:"errors"`
}

// Bench is a bench serve result read as measured requests: request i of the
// file is "bench-i", queued at its start time, its first token at start +
// ttft and its last at start + ttft + the sum of its itls.
type Bench struct {
	Model    string
	Requests []workload.MeasuredRequest
	// Failed counts requests with a non-empty error (left out).
	Failed int
}

// ReadBench parses a vllm bench serve result, plain or gzip-compressed
// (name labels errors). It needs
// the per-request lists --save-detailed keeps, including start_times.
func ReadBench(r io.Reader, name string) (*Bench, error) {
	var f benchFile
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	dec := json.NewDecoder(r)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: not a vllm bench serve result (JSON): %w", name, err)
	}
	n := len(f.InputLens)
	if n == 0 {
		return nil, fmt.Errorf("%s: no input_lens; save the result with vllm bench serve --save-result --save-detailed", name)
	}
	for _, l := range []struct {
		field string
		n     int
	}{{"output_lens", len(f.OutputLens)}, {"ttfts", len(f.TTFTs)}, {"itls", len(f.ITLs)}, {"start_times", len(f.StartTimes)}} {
		if l.n != n {
			hint := "the per-request lists must have one entry per request"
			if l.field == "start_times" && l.n == 0 {
				hint = "this vLLM version does not save request start times; arrivals cannot be replayed without them"
			}
			return nil, fmt.Errorf("%s: %s has %d entries, input_lens %d; %s", name, l.field, l.n, n, hint)
		}
	}
	if len(f.Errors) != 0 && len(f.Errors) != n {
		return nil, fmt.Errorf("%s: errors has %d entries, input_lens %d; the per-request lists must have one entry per request", name, len(f.Errors), n)
	}
	b := &Bench{Model: f.ModelID}
	for i := range n {
		if len(f.Errors) == n && f.Errors[i] != "" {
			b.Failed++
			continue
		}
		st, ttft := f.StartTimes[i], f.TTFTs[i]
		if !finite(st) || !finite(ttft) || ttft <= 0 {
			return nil, fmt.Errorf("%s: request %d: start_times %v and ttfts %v must be finite, ttft > 0", name, i, st, ttft)
		}
		if f.InputLens[i] <= 0 || f.OutputLens[i] <= 0 {
			return nil, fmt.Errorf("%s: request %d: input_lens %d and output_lens %d must be > 0", name, i, f.InputLens[i], f.OutputLens[i])
		}
		sum := 0.0
		for _, g := range f.ITLs[i] {
			if !finite(g) || g < 0 {
				return nil, fmt.Errorf("%s: request %d: itls holds %v; gaps are finite seconds >= 0", name, i, g)
			}
			sum += g
		}
		b.Requests = append(b.Requests, workload.MeasuredRequest{
			RequestID: fmt.Sprintf("bench-%d", i), Index: i,
			InputToks: f.InputLens[i], OutputToks: f.OutputLens[i],
			ArrivalTime: st, QueuedTS: st, ScheduledTS: st,
			FirstTokenTS: st + ttft, LastTokenTS: st + ttft + sum,
		})
	}
	if len(b.Requests) == 0 {
		return nil, fmt.Errorf("%s: all %d requests failed", name, n)
	}
	return b, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// BenchOptions of a validation on a bench serve result.
type BenchOptions struct {
	// Scenario holds the engine settings of the measured server (its
	// workload is replaced by the measured requests) and Source where it
	// was read from (for relative paths).
	Scenario *config.Scenario
	Source   config.Source
	// Name labels the run; File is the result file's path; RequestsCSV as
	// in Options.
	Name, File, RequestsCSV string
	// ClientOffsetMs is the client-side time inside every measured TTFT and
	// E2E (HTTP, tokenisation, detokenisation): added to the simulated
	// ones. See docs/validation.md.
	ClientOffsetMs float64
	// ErrorBars as in Options.
	ErrorBars bool
}

// RunBench validates a bench serve result against the scenario's engine.
// The measured requests carry no token ids: prefix caching sees no hits.
func RunBench(b *Bench, o BenchOptions) (*Report, error) {
	if o.ClientOffsetMs < 0 || !finite(o.ClientOffsetMs) {
		return nil, fmt.Errorf("client offset %v ms: want a finite value >= 0", o.ClientOffsetMs)
	}
	s := *o.Scenario
	// The replayed requests are the file's; the trace names it (the build
	// only checks that it opens).
	s.Workload.Trace, s.Workload.Format, s.Workload.Synthetic = o.File, "jsonl", nil
	s.Workload.Limit, s.Workload.TimeScale = 0, 1
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Name, err)
	}
	newSrc := func() (workload.Source, error) { return workload.MeasuredSource(b.Requests, nil) }
	band, err := errorBand(o.ErrorBars, &s)
	if err != nil {
		return nil, err
	}
	rep, err := compare(&s, o.Source, b.Requests, newSrc, o.Name, o.RequestsCSV, o.ClientOffsetMs, band, false)
	if err != nil {
		return nil, err
	}
	rep.Failed = b.Failed
	return rep, nil
}
