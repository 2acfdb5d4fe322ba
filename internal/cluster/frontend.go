package cluster

import (
	"github.com/servesim/servesim/internal/des"
	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/frontend"
	"github.com/servesim/servesim/internal/metrics"
	"github.com/servesim/servesim/internal/workload"
)

// Front-end events (a served endpoint, package frontend).
const (
	evFEIngested  int32 = 40 + iota // Arg = slot in fe.way: the request reached the engine core
	evFEDelivered                   // Arg = slot in fe.held: the client received the last chunk
)

// feState is the served endpoint between the clients and the engines:
// requests on their way in, finished requests whose last chunk is on its
// way out, and the client-side times of the requests in flight.
type feState struct {
	m      *frontend.Model
	simple bool            // m.Simple()
	reqs   map[int64]feReq // requests sent and not yet ended, by id

	way  slotPool[workload.Request] // requests between client and engine core
	held slotPool[metrics.Record]   // finished requests until their client has the last chunk

	gaps  []frontend.Gap // scratch: a step's engine gaps
	itl   []engine.Gap   // the step's client-side gaps, shown to the observer
	saved []engine.Gap   // the engine's own gap slice, restored after
}

// feReq is a request in flight through the front end.
type feReq struct {
	srv   int32 // its API server
	sent  int64 // when the client sent it
	first int64 // when the client received its first chunk (-1: not yet)
}

// send is a request leaving its client at now: straight to admission
// without a front end, else on its way to an API server.
func (s *Sim) send(req *workload.Request, now int64) error {
	if s.fe == nil {
		return s.admit(req, now)
	}
	s.total++
	s.track(req, now)
	fe := s.fe
	fe.reqs[req.ID] = feReq{srv: fe.m.Assign(), sent: now, first: -1}
	slot := fe.way.put(*req)
	// The API server's CPU takes work in the order it is submitted (a
	// request when its client sends it, a step's outputs when the step
	// ends), so the ingest is timed now, starting when the request
	// reaches the server (docs/client.md).
	at := fe.m.Ingest(fe.reqs[req.ID].srv, req.InputTokens, now+fe.m.SendDelay())
	return s.schedule(des.Event{At: at, Kind: evFEIngested, Arg: int64(slot)})
}

// feIngested hands the request in slot to the engines.
func (s *Sim) feIngested(slot int64, now int64) error {
	fe := s.fe
	req := fe.way.take(int32(slot))
	req.Arrival = now
	return s.place(&req, now)
}

// feStep runs the API servers' output work for a step of instance inst
// and replaces the step's gaps by the client-side ones until feRestore.
func (s *Sim) feStep(inst int, r *engine.StepResult, now int64) {
	fe := s.fe
	fe.saved = r.ITL
	var cont int64
	for _, g := range r.ITL {
		cont += g.Count
	}
	if len(r.First) == 0 && cont == 0 {
		return
	}
	if fe.simple {
		// One API server, every token streamed: the client's gaps are the
		// engine's shifted by the change of the delivery delay.
		if d := fe.m.StepShift(inst, now, int64(len(r.First)), cont); d != 0 && cont > 0 {
			fe.itl = append(fe.itl[:0], r.ITL...)
			for k := range fe.itl {
				fe.itl[k].NS = max(fe.itl[k].NS+d, 0)
			}
			r.ITL = fe.itl
		}
	} else {
		fe.gaps = fe.gaps[:0]
		for _, g := range r.ITL {
			fe.gaps = append(fe.gaps, frontend.Gap{NS: g.NS, Count: g.Count})
		}
		cg := fe.m.Step(inst, now, int64(len(r.First)), cont, int64(len(r.Finished)), fe.gaps)
		fe.itl = fe.itl[:0]
		for _, g := range cg {
			fe.itl = append(fe.itl, engine.Gap{NS: g.NS, Count: g.Count})
		}
		r.ITL = fe.itl
	}
	for _, id := range r.First {
		if q, ok := fe.reqs[id]; ok {
			q.first = fe.m.Delivered(q.srv) + fe.m.Jitter()
			fe.reqs[id] = q
		}
	}
}

// feRestore gives the step its engine gaps back.
func (s *Sim) feRestore(r *engine.StepResult) { r.ITL = s.fe.saved }

// feHold turns rec's times into the client's and reports whether its end
// waits for the last chunk to reach the client (a finished request: it
// ends then, by evFEDelivered).
func (s *Sim) feHold(rec *metrics.Record, now int64) (bool, error) {
	fe := s.fe
	q, ok := fe.reqs[rec.ID]
	if !ok {
		return false, nil // never sent (truncated)
	}
	delete(fe.reqs, rec.ID)
	rec.FrontEnd = true
	rec.EngineArrival, rec.EngineFirstToken, rec.EngineLastToken = rec.Arrival, rec.FirstToken, rec.LastToken
	rec.Arrival = q.sent
	if rec.FirstToken >= 0 && q.first >= 0 {
		rec.FirstToken = q.first
	}
	if rec.Outcome != metrics.Finished {
		// Cut off, failed or aborted with tokens generated: a first chunk
		// still on its way to the client when the request ended keeps the
		// engine's time (the record then says when the token left the
		// engine), and the last token is never before the first.
		if rec.FirstToken > now {
			rec.FirstToken = rec.EngineFirstToken
		}
		if rec.LastToken >= 0 && rec.LastToken < rec.FirstToken {
			rec.LastToken = rec.FirstToken
		}
		return false, nil
	}
	last := fe.m.Delivered(q.srv) + fe.m.Jitter()
	if rec.EngineLastToken == rec.EngineFirstToken && rec.FirstToken >= 0 {
		last = rec.FirstToken // one chunk carried the first and the last token
	}
	rec.LastToken = max(last, rec.FirstToken)
	if s.maxConc == 0 {
		if _, ok := s.sessions[rec.ID]; !ok {
			// Nothing waits for this client's last chunk (no closed loop,
			// no session turn after it): the record ends now, with the
			// client's times, rather than by an event.
			return false, nil
		}
	}
	slot := fe.held.put(*rec)
	return true, s.schedule(des.Event{At: max(rec.LastToken, now), Kind: evFEDelivered, Arg: int64(slot)})
}

// feDelivered ends the held request in slot: its client has the last chunk.
func (s *Sim) feDelivered(slot int64, now int64) error {
	fe := s.fe
	rec := fe.held.take(int32(slot))
	return s.end(&rec, now)
}

// slotPool keeps values in reusable slots, so that an event can name one
// by an integer: put stores a value in a free slot (or a new one) and
// returns it, take returns the value and frees its slot.
type slotPool[T any] struct {
	items []T
	free  []int32
}

func (p *slotPool[T]) put(v T) int32 {
	if n := len(p.free); n > 0 {
		slot := p.free[n-1]
		p.free = p.free[:n-1]
		p.items[slot] = v
		return slot
	}
	p.items = append(p.items, v)
	return int32(len(p.items) - 1)
}

func (p *slotPool[T]) take(slot int32) T {
	v := p.items[slot]
	var zero T
	p.items[slot] = zero
	p.free = append(p.free, slot)
	return v
}
