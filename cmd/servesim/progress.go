package main

import (
	"fmt"
	"io"
	"os"

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
	p   *mpb.Progress
	bar *mpb.Bar
	sim float64
}

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

func newProgress(w io.Writer, quiet bool, total int64) *progress {
	f, ok := w.(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) {
		return &progress{}
	}
	pr := &progress{p: mpb.New(mpb.WithOutput(w), mpb.WithWidth(40))}
	counts := decor.Any(func(s decor.Statistics) string {
		if total > 0 {
			return fmt.Sprintf("%d/%d requests done, %.0f s simulated", s.Current, total, pr.sim)
		}
		return fmt.Sprintf("%d requests done, %.0f s simulated", s.Current, pr.sim)
	})
	if total > 0 {
		pr.bar = pr.p.New(total, mpb.BarStyle(),
			mpb.PrependDecorators(decor.Name("simulating "), decor.Percentage(decor.WCSyncSpace)),
			mpb.AppendDecorators(counts, decor.Name(", "), decor.AverageETA(decor.ET_STYLE_GO), decor.Name(" left")))
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
}

// countProgress counts finished runs of a fixed number on stderr when it
// is a terminal.
type countProgress struct {
	p   *mpb.Progress
	bar *mpb.Bar
}

func newCountProgress(w io.Writer, quiet bool, total int, what string) *countProgress {
	f, ok := w.(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) {
		return &countProgress{}
	}
	pr := &countProgress{p: mpb.New(mpb.WithOutput(w), mpb.WithWidth(30))}
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
