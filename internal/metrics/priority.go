package metrics

import (
	"fmt"
	"slices"
	"strings"
)

// maxPriorityClasses bounds the priority classes a summary tracks one by
// one; requests of further classes are summarised together (Other).
const maxPriorityClasses = 64

// PriorityResult summarises the requests of one priority class: their
// counts, and the TTFT, TPOT and E2E of the finished ones (the same
// definitions as the run's).
type PriorityResult struct {
	Priority int32 `json:"priority"`
	// Other marks the class gathering every priority beyond the first
	// 64 distinct ones seen (Priority is then the first of them).
	Other    bool  `json:"other,omitempty"`
	Requests int64 `json:"requests"`
	Finished int64 `json:"finished"`
	TTFT     Stat  `json:"ttft_ms"`
	TPOT     Stat  `json:"tpot_ms"`
	E2E      Stat  `json:"e2e_ms"`
}

// priorityClass accumulates one class.
type priorityClass struct {
	ttft, tpot, e2e dist // first: see Summary
	priority        int32
	other           bool
	requests, done  int64
}

// byPriority accumulates the per-priority statistics of a summary.
type byPriority struct {
	nonzero bool // a request had a priority other than 0
	// Until a request has a priority other than 0 (nearly every run),
	// class 0's TTFT, TPOT and E2E are the summary's own: only the class's
	// counts are kept, and the first other priority makes the class from
	// them (split).
	zeroReqs, zeroDone int64
	classes            []*priorityClass
	index              map[int32]*priorityClass
	other              *priorityClass // the priorities beyond the first maxPriorityClasses
}

// class returns the accumulator of priority p, creating it on first use.
func (b *byPriority) class(p int32) *priorityClass {
	if c, ok := b.index[p]; ok {
		return c
	}
	if b.index == nil {
		b.index = map[int32]*priorityClass{}
	}
	if len(b.index) >= maxPriorityClasses {
		if b.other == nil {
			b.other = &priorityClass{priority: p, other: true, ttft: newDist(), tpot: newDist(), e2e: newDist()}
			b.classes = append(b.classes, b.other)
		}
		return b.other
	}
	c := &priorityClass{priority: p, ttft: newDist(), tpot: newDist(), e2e: newDist()}
	b.classes = append(b.classes, c)
	b.index[p] = c
	return c
}

// add accounts for one request's final record (not a warm-up one), before
// s does.
func (b *byPriority) add(r *Record, s *Summary) {
	if !b.nonzero {
		if r.Priority == 0 {
			b.zeroReqs++
			if r.Outcome == Finished {
				b.zeroDone++
			}
			return
		}
		b.split(s)
	}
	c := b.class(r.Priority)
	c.requests++
	if r.Outcome != Finished {
		return
	}
	c.done++
	c.ttft.add(r.TTFT())
	c.tpot.add(r.TPOT())
	c.e2e.add(r.E2E())
}

// split makes class 0, if a request had priority 0, from its counts and
// the summary's TTFT, TPOT and E2E: so far they were the class's.
//
//go:noinline
func (b *byPriority) split(s *Summary) {
	b.nonzero = true
	if b.zeroReqs == 0 {
		return
	}
	c := b.class(0)
	c.requests, c.done = b.zeroReqs, b.zeroDone
	c.ttft, c.tpot, c.e2e = s.ttft.clone(), s.tpot.clone(), s.e2e.clone()
}

// results returns the classes by increasing priority (the gathered
// others last), or nil when every request had priority 0.
func (b *byPriority) results() []PriorityResult {
	if !b.nonzero {
		return nil
	}
	out := make([]PriorityResult, 0, len(b.classes))
	for _, c := range b.classes {
		out = append(out, PriorityResult{Priority: c.priority, Other: c.other, Requests: c.requests, Finished: c.done,
			TTFT: c.ttft.stat(), TPOT: c.tpot.stat(), E2E: c.e2e.stat()})
	}
	slices.SortStableFunc(out, func(a, b PriorityResult) int {
		switch {
		case a.Other != b.Other:
			if a.Other {
				return 1
			}
			return -1
		case a.Priority < b.Priority:
			return -1
		case a.Priority > b.Priority:
			return 1
		}
		return 0
	})
	return out
}

// writePriorities renders the per-priority table of the text summary.
func writePriorities(b *strings.Builder, ps []PriorityResult) {
	if len(ps) == 0 {
		return
	}
	b.WriteString(strings.Repeat("-", tableWidth) + "\n")
	fmt.Fprintf(b, "%-11s %8s %8s", "Priority", "requests", "finished")
	for _, h := range []string{"TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2E p50", "E2E p99"} {
		fmt.Fprintf(b, " %10s", h)
	}
	b.WriteString("\n")
	for _, p := range ps {
		name := fmt.Sprintf("%d", p.Priority)
		if p.Other {
			name = "others"
		}
		fmt.Fprintf(b, "%-11s %8d %8d", name, p.Requests, p.Finished)
		for _, v := range []struct {
			s Stat
			x float64
		}{{p.TTFT, p.TTFT.P50}, {p.TTFT, p.TTFT.P99}, {p.TPOT, p.TPOT.P50}, {p.TPOT, p.TPOT.P99}, {p.E2E, p.E2E.P50}, {p.E2E, p.E2E.P99}} {
			b.WriteString(" ")
			b.WriteString(cell(v.x, v.s.Count))
		}
		b.WriteString("\n")
	}
}
