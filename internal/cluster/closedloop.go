package cluster

import "github.com/servesim/servesim/internal/des"

// Closed-loop load as vLLM's benchmark client (vllm bench serve) runs it:
// warm-up requests first, then the measured requests, at most maxConc in
// flight; and the steady-state window, where all maxConc clients are busy.

// Window is a closed-loop run's steady-state window: from the first time
// all clients were busy (after the warm-up) to the first time thereafter
// that one of them had nothing to send; End is -1 while it is open (it
// then closes at the end of the run). OutputTokens and Finished count the
// tokens the engines emitted and the requests that ended finished inside
// it.
type Window struct {
	Start, End   int64
	OutputTokens int64
	Finished     int64
}

// closedLoop is the benchmark client's state besides the concurrency
// limit itself (Sim.maxConc, inflight, blocked).
type closedLoop struct {
	warmup     int64 // requests with ids below it are warm-up requests
	warmLeft   int64 // warm-up requests not yet ended
	warmBlock  bool  // a measured request waits for the warm-up to end
	warmEnd    int64 // when the last warm-up request ended (-1: not yet)
	shift      int64 // added to the measured requests' arrival times
	open       bool  // the window is open
	opened     bool  // it has opened (it opens once)
	win        Window
	gen, fin   int64 // output tokens emitted and requests finished so far
	genAt, fAt int64 // the two at the window's start
}

// setWarmup makes the workload's first n requests warm-up requests
// (Config.Warmup).
func (s *Sim) setWarmup(n int64) {
	s.cl.warmup, s.cl.warmLeft, s.cl.warmEnd = n, n, -1
	if n == 0 {
		s.cl.warmEnd = 0
	}
}

// WarmupEnd is when the last warm-up request ended (0 without warm-up,
// -1 while it runs).
func (s *Sim) WarmupEnd() int64 {
	if s.cl.warmup == 0 {
		return 0
	}
	return s.cl.warmEnd
}

// InWarmup reports whether warm-up requests are still running.
func (s *Sim) InWarmup() bool { return s.cl.warmLeft > 0 }

// SteadyWindow returns the steady-state window of a closed-loop run, and
// false when the run is open-loop or all its clients were never busy at
// once.
func (s *Sim) SteadyWindow() (Window, bool) {
	if s.maxConc == 0 || !s.cl.opened {
		return Window{}, false
	}
	w := s.cl.win
	if s.cl.open {
		w.End = s.lastEvent
		w.OutputTokens, w.Finished = s.cl.gen-s.cl.genAt, s.cl.fin-s.cl.fAt
	}
	return w, w.End > w.Start
}

// holdForWarmup reports whether the next entry must wait for the warm-up
// to end (and notes that it waits).
func (s *Sim) holdForWarmup() bool {
	if s.cl.warmLeft == 0 || s.next.Requests[0].ID < s.cl.warmup {
		return false
	}
	s.cl.warmBlock = true
	return true
}

// clEnded notes the end of request id at now: the warm-up count, the
// finished count of the window.
func (s *Sim) clEnded(id int64, finished bool, now int64) error {
	if finished {
		s.cl.fin++
	}
	if id >= s.cl.warmup || s.cl.warmLeft == 0 {
		return nil
	}
	s.cl.warmLeft--
	if s.cl.warmLeft > 0 {
		return nil
	}
	s.cl.warmEnd = now
	if s.cl.warmBlock {
		s.cl.warmBlock = false
		if s.hasNext {
			// The measured schedule starts now.
			s.cl.shift = max(now-s.next.Requests[0].Arrival, 0)
		}
		return s.schedule(desArrival(now))
	}
	return nil
}

// clSent notes a send: the window opens when all clients are busy.
func (s *Sim) clSent(now int64) {
	if s.maxConc == 0 || s.cl.opened || s.cl.warmLeft > 0 {
		return
	}
	if s.inflight >= s.maxConc {
		s.cl.open, s.cl.opened = true, true
		s.cl.win.Start = now
		s.cl.genAt, s.cl.fAt = s.cl.gen, s.cl.fin
	}
}

// clFreed notes that a client's request ended while none waited to be
// sent: unless the next entry is already due (its arrival event pending
// at now, e.g. two requests ended in one step), the client is left idle
// and the window closes.
func (s *Sim) clFreed(now int64) {
	if !s.cl.open || s.hasNext && s.next.Requests[0].Arrival+s.cl.shift <= now {
		return
	}
	s.cl.open = false
	s.cl.win.End = now
	s.cl.win.OutputTokens, s.cl.win.Finished = s.cl.gen-s.cl.genAt, s.cl.fin-s.cl.fAt
}

// desArrival is the event that sends the next workload entry at now.
func desArrival(now int64) des.Event { return des.Event{At: now, Kind: evArrival} }
