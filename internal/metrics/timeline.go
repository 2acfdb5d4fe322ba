package metrics

import (
	"fmt"
	"strings"
)

// timelineWidth is the width of a timeline's bars, characters.
const timelineWidth = 48

// Timeline renders the life of one request as a text chart: one row per
// phase (the client-to-engine way in, the wait for the engine's step
// boundary, the queue, the prefill to the first token, the first chunk's
// way out, the decode, the last chunk's way out), with its start, end and
// duration in ms from the request's arrival (the client's send with a
// front end) and a bar on a common scale. Phases that did not happen, or
// that the run does not model (the front-end rows without a front end),
// are left out.
func Timeline(r *Record) string {
	var b strings.Builder
	side := "engine-side: no front end simulated"
	if r.FrontEnd {
		side = "client-side: from the client's send"
	}
	fmt.Fprintf(&b, "Request %d: %d prompt tokens, %d output tokens, %s (%s)\n", r.ID, r.InputTokens, r.Generated, r.Outcome, side)
	type phase struct {
		name     string
		from, to int64
	}
	engFirst, engLast, engArr := r.FirstToken, r.LastToken, r.Arrival
	if r.FrontEnd {
		engFirst, engLast, engArr = r.EngineFirstToken, r.EngineLastToken, r.EngineArrival
	}
	var ph []phase
	if r.FrontEnd {
		ph = append(ph, phase{"client -> engine core", r.Arrival, engArr})
	}
	ph = append(ph,
		phase{"wait for step end", engArr, r.Queued},
		phase{"queue", r.Queued, r.Scheduled},
		phase{"prefill, 1st token", r.Scheduled, engFirst})
	if r.FrontEnd {
		ph = append(ph, phase{"1st chunk -> client", engFirst, r.FirstToken})
	}
	ph = append(ph, phase{"decode", engFirst, engLast})
	if r.FrontEnd {
		ph = append(ph, phase{"last chunk -> client", engLast, r.LastToken})
	}
	end := r.LastToken
	span := end - r.Arrival
	if span <= 0 {
		span = 1
	}
	fmt.Fprintf(&b, "%-22s %10s %10s %10s\n", "phase (ms)", "start", "end", "duration")
	for _, p := range ph {
		if p.from < 0 || p.to < 0 || p.to < p.from {
			continue
		}
		lo := int((p.from - r.Arrival) * timelineWidth / span)
		hi := int((p.to - r.Arrival) * timelineWidth / span)
		hi = max(hi, lo+1) // every phase shows
		lo, hi = min(lo, timelineWidth-1), min(hi, timelineWidth)
		bar := strings.Repeat(" ", lo) + strings.Repeat("#", hi-lo) + strings.Repeat(" ", timelineWidth-hi)
		fmt.Fprintf(&b, "%-22s %10.3f %10.3f %10.3f |%s|\n", p.name, ms(p.from-r.Arrival), ms(p.to-r.Arrival), ms(p.to-p.from), bar)
	}
	fmt.Fprintf(&b, "%-22s %10.3f %10s %10s  TTFT %.3f, E2E %.3f\n", "", ms(span), "", "", ms(r.TTFT()), ms(r.E2E()))
	return b.String()
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }
