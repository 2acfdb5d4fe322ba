package main

import (
	"fmt"
	"io"
	"os"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// progress shows a live count of finished requests and simulated time on
// stderr when it is a terminal; otherwise it does nothing.
type progress struct {
	p   *mpb.Progress
	bar *mpb.Bar
	sim float64
}

func newProgress(w io.Writer, quiet bool) *progress {
	f, ok := w.(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) {
		return &progress{}
	}
	pr := &progress{p: mpb.New(mpb.WithOutput(w), mpb.WithWidth(40))}
	pr.bar = pr.p.New(0, mpb.SpinnerStyle(),
		mpb.PrependDecorators(decor.Name("simulating ")),
		mpb.AppendDecorators(
			decor.Any(func(s decor.Statistics) string {
				return fmt.Sprintf("%d requests done, %.0f s simulated", s.Current, pr.sim)
			}),
			decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace),
		))
	return pr
}

func (p *progress) update(done, simNs int64) {
	if p.bar == nil {
		return
	}
	p.sim = float64(simNs) / 1e9
	p.bar.SetCurrent(done)
}

func (p *progress) done() {
	if p.bar == nil {
		return
	}
	p.bar.SetTotal(-1, true)
	p.p.Wait()
}
