package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/config"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// progress shows a live count of finished requests and simulated time on
// stderr when it is a terminal; otherwise it does nothing. When the number
// of requests is known in advance it draws a bar with the share done and
// an estimate of the time left.
type progress struct {
	p     *mpb.Progress
	bar   *mpb.Bar
	sim   float64
	total int64
}

// progressEnded, when set (by tests), is told the final count and the
// total of every progress bar that ends.
var progressEnded func(done, total int64)

// knownRequests is the number of requests a scenario's workload will
// have, when that is known without reading it (0 otherwise).
func knownRequests(s *config.Scenario) int64 {
	w := s.Workload
	var n int64
	switch {
	case w.Synthetic != nil:
		n = int64(w.Synthetic.Requests)
	case w.SharedPrefix != nil:
		n = int64(w.SharedPrefix.Requests)
	default:
		return 0
	}
	if w.Limit > 0 && int64(w.Limit) < n {
		n = int64(w.Limit)
	}
	return n
}

// workloadRequests is the number of requests the built workload holds:
// known from the scenario for synthetic and shared-prefix workloads, else
// counted by reading the workload once (a trace, or the generated chat
// conversations, each turn a request). It returns 0 when the workload
// cannot be read; the run itself then reports why.
func workloadRequests(b *assemble.Built) int64 {
	s := b.Scenario()
	if n := knownRequests(&s); n > 0 {
		return n
	}
	src, closer, err := b.Open()
	if err != nil {
		return 0
	}
	defer closer.Close()
	var n int64
	for {
		e, err := src.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return 0
			}
			return n
		}
		n += int64(len(e.Requests))
	}
}

// isTerminal reports whether w is a terminal, where progress is shown;
// tests replace it to see the progress output.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newProgress starts a progress indicator on w when it is a terminal and
// quiet is off. total, called only then, is the number of requests (0:
// unknown, a spinner without ETA).
func newProgress(w io.Writer, quiet bool, total func() int64) *progress {
	if quiet || !isTerminal(w) {
		return &progress{}
	}
	return startProgress(w, total())
}

func startProgress(w io.Writer, total int64) *progress {
	pr := &progress{p: mpb.New(mpb.WithOutput(w), mpb.WithWidth(40), mpb.WithAutoRefresh()), total: total}
	counts := decor.Any(func(s decor.Statistics) string {
		if total > 0 {
			return fmt.Sprintf(" %d/%d requests, %.0f s simulated, ETA ", s.Current, total, pr.sim)
		}
		return fmt.Sprintf("%d requests done, %.0f s simulated", s.Current, pr.sim)
	})
	if total > 0 {
		pr.bar = pr.p.New(total, mpb.BarStyle(),
			mpb.PrependDecorators(decor.Name("simulating "), decor.Percentage(decor.WCSyncSpace)),
			mpb.AppendDecorators(counts, decor.AverageETA(decor.ET_STYLE_GO)))
		return pr
	}
	pr.bar = pr.p.New(0, mpb.SpinnerStyle(),
		mpb.PrependDecorators(decor.Name("simulating ")),
		mpb.AppendDecorators(counts, decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace)))
	return pr
}

func (p *progress) update(done, simNs int64) {
	if p.bar == nil {
		return
	}
	p.sim = float64(simNs) / 1e9
	p.bar.SetCurrent(done)
}

// done shows the final count and ends the bar.
func (p *progress) done(final int64) {
	if p.bar == nil {
		return
	}
	p.bar.SetCurrent(final)
	p.bar.SetTotal(-1, true)
	p.p.Wait()
	if progressEnded != nil {
		progressEnded(final, p.total)
	}
}

// countProgress counts finished runs of a fixed number on stderr when it
// is a terminal.
type countProgress struct {
	p   *mpb.Progress
	bar *mpb.Bar
}

func newCountProgress(w io.Writer, quiet bool, total int, what string) *countProgress {
	if quiet || !isTerminal(w) {
		return &countProgress{}
	}
	pr := &countProgress{p: mpb.New(mpb.WithOutput(w), mpb.WithWidth(30), mpb.WithAutoRefresh())}
	pr.bar = pr.p.New(int64(total), mpb.BarStyle(),
		mpb.PrependDecorators(decor.Name("running "+what+" "), decor.CountersNoUnit("%d/%d", decor.WCSyncSpace)),
		mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace)))
	return pr
}

// add counts one finished run (safe from the pool's emit callback, which
// runs on one goroutine at a time).
func (p *countProgress) add() {
	if p.bar != nil {
		p.bar.Increment()
	}
}

func (p *countProgress) done() {
	if p.bar == nil {
		return
	}
	p.bar.SetTotal(-1, true)
	p.p.Wait()
}
