package engine

import (
	"fmt"
	"sort"
	"testing"

	"pgregory.net/rapid"
)

// TestPriorityAdmissionOrderProperty drives random workloads with random
// priorities and arrivals through small engines under the priority policy
// (async scheduling on or off, invariant checks on) and checks, at every
// batch, that no waiting request was admitted while a request ordered
// before it by (priority, arrival, id) and visible to the batch stayed
// waiting: admission takes a prefix of the priority order (vLLM stops at
// the first request whose blocks cannot be allocated). Every request must
// finish with all its tokens and no block may leak.
func TestPriorityAdmissionOrderProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := drawConfig(rt, 40)
		cfg.PriorityScheduling = true
		cfg.AsyncScheduling = rapid.Bool().Draw(rt, "async")
		e, err := New(0, cfg, fixedStep{base: 100, perTok: 1})
		if err != nil {
			rt.Fatal(err)
		}
		reqs := drawRequests(rt, e, true)
		for i := range reqs {
			reqs[i].Priority = int32(rapid.IntRange(-2, 2).Draw(rt, "prio"))
		}
		sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].Arrival < reqs[j].Arrival })
		next := 0
		deliver := func(by int64) {
			for next < len(reqs) && reqs[next].Arrival <= by {
				e.Add(&reqs[next], reqs[next].Arrival)
				next++
			}
		}
		now, finished := int64(0), 0
		for steps := 0; e.HasWork() || next < len(reqs); steps++ {
			if !e.HasWork() {
				now = max(now, reqs[next].Arrival)
			}
			deliver(now)
			formed := now
			if e.async() && e.justEnded && now == e.stepEnd {
				formed = e.stepStart
			}
			before := map[int32]waitKey{}
			for _, k := range waitingKeys(e) {
				before[k.slot] = k
			}
			d, ok := begin(e, now)
			if !ok {
				var st []string
				for i := range e.slots {
					s := &e.slots[i]
					st = append(st, fmt.Sprintf("id=%d %s p=%d prompt=%d out=%d gen=%d comp=%d blocks=%d enq=%d prio=%d", s.rec.ID, s.state, s.prio, s.prompt, s.output, s.generated, s.computed, len(s.blocks), s.enqueued, s.prio))
				}
				rt.Fatalf("t=%d stalled with %d running, %d waiting free=%d zombies=%d lane=%d: %v cfg %+v", now, e.Running(), e.Waiting(), e.Pool().Free(), len(e.zombies), len(e.lane), st, cfg)
			}
			still := map[int32]bool{}
			for _, k := range waitingKeys(e) {
				still[k.slot] = true
			}
			for slot, a := range before {
				if still[slot] {
					continue
				}
				// a was admitted: every visible request still waiting
				// must come after it.
				for other, w := range before {
					if still[other] && e.slots[other].enqueued <= formed && w.before(a) {
						rt.Fatalf("t=%d: request %d (priority %d) admitted while request %d (priority %d) ordered before it waited",
							now, a.id, a.priority, w.id, w.priority)
					}
				}
			}
			deliver(now + d - 1)
			now += d
			r := finish(e, now)
			if err := e.err; err != nil {
				rt.Fatal(err)
			}
			for _, f := range r.Finished {
				if f.Generated != f.OutputTokens {
					rt.Fatalf("request %d generated %d of %d", f.ID, f.Generated, f.OutputTokens)
				}
				finished++
			}
			if steps > 100000 {
				rt.Fatal("no progress")
			}
		}
		if finished != len(reqs) {
			rt.Fatalf("finished %d of %d", finished, len(reqs))
		}
		if _, ok := begin(e, now); ok { // releases async scheduling's last finished requests
			rt.Fatal("a batch formed with no work")
		}
		if e.Pool().Free() != cfg.NumBlocks {
			rt.Fatalf("leaked blocks: %d free of %d", e.Pool().Free(), cfg.NumBlocks)
		}
	})
}

// waitingKeys lists the waiting queue's requests with their keys.
func waitingKeys(e *Engine) []waitKey {
	keys := append([]waitKey(nil), e.waiting.heap...)
	for i := 0; i < e.waiting.fifo.len(); i++ {
		keys = append(keys, e.waitKey(e.waiting.fifo.buf[(int(e.waiting.fifo.head)+i)%len(e.waiting.fifo.buf)]))
	}
	return keys
}
