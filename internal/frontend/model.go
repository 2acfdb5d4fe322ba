package frontend

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/servesim/servesim/internal/des"
)

// Gap is a run of Count equal gaps of NS ns between streamed chunks.
type Gap struct {
	NS    int64
	Count int64
}

// Model is the time model of one endpoint's API server processes. Its
// methods must be called in simulated-time order (the cluster's events);
// it is not safe for concurrent use.
type Model struct {
	req, enq, hop, step, net int64   // ns
	tokWait                  int64   // ns: the tokenizer batcher's wait for more prompts
	tokMax                   int     // prompts per tokenizer batch at most
	tokNs, outNs, chunkNs    float64 // ns per token, per request-step, per chunk
	jitterMu, jitterSigma    float64 // ln of the median in ns, and sigma; no drift when off
	jitterOn                 bool
	si                       int
	rng                      *rand.Rand

	busy   []int64    // per API server: its CPU is busy until then
	tok    []tokBatch // per API server: its tokenizer batcher's latest batch
	done   []int64    // per API server: when its share of the last step's outputs was processed
	next   int        // round-robin assignment of requests to API servers
	insts  []inst     // per engine instance: the previous step's delivery delays
	carry  []float64
	gaps   []Gap
	counts []int64
}

// tokBatch is an API server's latest tokenizer batch: its window opened
// at start (when the batcher took its first prompt), it holds n prompts,
// and the tokenizer thread finishes its last prompt at done.
type tokBatch struct {
	start, done int64
	n           int
}

// inst is what the client-side gaps of an instance's next step need.
type inst struct {
	seen  bool
	delay []int64 // per API server: delivery delay of its last step with outputs, ns
}

// New returns the model of c (resolved) for an endpoint serving
// instances engine instances; seed drives the drift.
func New(c Config, seed uint64, instances int) *Model {
	c = c.Resolved()
	us := func(p *float64) int64 { return int64(math.Round(*p * 1e3)) }
	a := c.APIServerCount
	m := &Model{
		req: us(c.RequestUs), enq: us(c.EnqueueUs), hop: us(c.HopUs), step: us(c.StepUs), net: us(c.NetworkUs),
		tokWait: us(c.TokenizeBatchWaitUs), tokMax: c.TokenizeBatchMax, tok: make([]tokBatch, a),
		tokNs: *c.TokenizeNsPerToken, outNs: *c.OutputUs * 1e3, chunkNs: *c.ChunkUs * 1e3,
		jitterOn: *c.JitterUs > 0, jitterSigma: *c.JitterSigma, si: c.StreamInterval,
		rng:  des.Stream(seed, "frontend-jitter"),
		busy: make([]int64, a), done: make([]int64, a), carry: make([]float64, a),
		counts: make([]int64, a), insts: make([]inst, instances),
	}
	if m.jitterOn {
		m.jitterMu = math.Log(*c.JitterUs * 1e3)
	}
	for i := range m.insts {
		m.insts[i].delay = make([]int64, a)
	}
	return m
}

// Servers returns the number of API server processes.
func (m *Model) Servers() int { return len(m.busy) }

// Assign returns the API server of the next request (round-robin in
// sending order, as the kernel spreads connections over the processes
// listening on one port).
func (m *Model) Assign() int32 {
	s := m.next
	m.next = (m.next + 1) % len(m.busy)
	return int32(s)
}

// maxJitter caps one drift draw (a lognormal's far tail), ns.
const maxJitter = int64(10e9)

// Jitter draws one message's drift delay, ns (0 when drift is off).
func (m *Model) Jitter() int64 {
	if !m.jitterOn {
		return 0
	}
	v := math.Exp(m.jitterMu + m.jitterSigma*m.rng.NormFloat64())
	return min(int64(math.Round(v)), maxJitter)
}

// SendDelay is the time from the client sending a request to the request
// reaching its API server: the network plus one drift draw.
func (m *Model) SendDelay() int64 { return m.net + m.Jitter() }

// IngestWork is the API server event loop's time to accept a request,
// ns: request handling and sending it to the engine core.
func (m *Model) IngestWork() int64 { return m.req + m.enq }

// TokenizeTime is the time to tokenise inputTokens prompt tokens, ns. vLLM
// tokenises raw prompts off the event loop (the Rust tokenizer releases
// Python's lock), so it delays the request without taking the loop's CPU.
func (m *Model) TokenizeTime(inputTokens int) int64 {
	return int64(math.Round(m.tokNs * float64(inputTokens)))
}

// Ingest runs the ingest of a request that reached API server srv at now
// and returns when the request reaches the engine core: its handling
// waits for the server's event loop (first come, first served), then its
// prompt is tokenised beside the loop by the server's tokenizer batcher,
// then the engine-core hop.
func (m *Model) Ingest(srv int32, inputTokens int, now int64) int64 {
	start := max(now, m.busy[srv])
	m.busy[srv] = start + m.IngestWork()
	return m.Tokenize(srv, inputTokens, m.busy[srv]) + m.hop
}

// Tokenize gives a prompt of inputTokens tokens to API server srv's
// tokenizer batcher at t and returns when its tokens are ready. As vLLM's
// AsyncMicrobatchTokenizer does, the batcher takes a prompt, waits
// tokWait for up to tokMax-1 more and tokenises the batch on its one
// thread; it takes the next prompt once the batch is done. A prompt
// joins the open batch if it comes before the batch's window closes and
// the batch has room; else it opens the next batch, when it comes or when
// the thread is free. The prompts of a batch are tokenised one after
// another. A window is taken to close after tokWait even when it fills
// up sooner (under a burst the batch would start earlier: at most
// tokWait per tokMax prompts).
func (m *Model) Tokenize(srv int32, inputTokens int, t int64) int64 {
	b := &m.tok[srv]
	work := m.TokenizeTime(inputTokens)
	if b.n > 0 && b.n < m.tokMax && t < b.start+m.tokWait {
		b.n++
		b.done += work
		return b.done
	}
	b.start, b.n = max(t, b.done), 1
	b.done = b.start + m.tokWait + work
	return b.done
}

// StepWork is the API server CPU time to process one step's outputs of
// requests requests, chunks of which send a chunk to their client, ns.
func (m *Model) StepWork(requests int64, chunks float64) int64 {
	if requests <= 0 {
		return 0
	}
	return m.step + int64(math.Round(m.outNs*float64(requests)+m.chunkNs*chunks))
}

// Step processes the outputs of a step of instance i that ended at end:
// first requests emitted their first token, cont a further token, and
// finished of them their last. The work is shared evenly by the API
// servers; each starts once the outputs have crossed the engine-core hop
// and its CPU is free. Delivered then gives when each server's clients
// receive the step's chunks. gaps are the engine-side gaps of the step's
// continuing requests (run-length encoded, in any order and with equal
// gaps in any number of runs: Step sorts and merges them in place, so
// the result depends only on the multiset of gaps, not on the order in
// which the engine visited its requests); Step returns the client-side
// gaps between chunks, valid until the next call.
func (m *Model) Step(i int, end int64, first, cont, finished int64, gaps []Gap) []Gap {
	a := int64(len(m.busy))
	st := &m.insts[i]
	m.gaps = m.gaps[:0]
	gaps = canonical(gaps)
	si := float64(m.si)
	for s := range m.busy {
		share := func(n int64) int64 {
			q := n / a
			if int64(s) < n%a {
				q++
			}
			return q
		}
		f, c, fin := share(first), share(cont), share(finished)
		n := f + c
		if n == 0 {
			m.done[s] = end + m.hop // nothing of this server's in the step
			continue
		}
		// A request sends a chunk at its first token, every stream
		// interval tokens after it and at its end.
		chunks := float64(f) + float64(c)/si + float64(min(fin, c))*(1-1/si)
		start := max(end+m.hop, m.busy[s])
		m.busy[s] = start + m.StepWork(n, chunks)
		m.done[s] = m.busy[s]
		d := m.done[s] - end
		prev := d
		if st.seen {
			prev = st.delay[s]
		}
		st.delay[s] = d
		if c > 0 {
			m.clientGaps(s, gaps, c, cont, d-prev)
		}
	}
	st.seen = true
	return m.gaps
}

// canonical sorts gaps by length and merges the runs of equal length, in
// place, and returns the merged runs: the one form of a multiset of gaps.
// It costs O(r log r) for r runs (at most the step's batch), nothing when
// the runs are already strictly increasing (a steady step's one run).
func canonical(gaps []Gap) []Gap {
	sorted := true
	for k := 1; k < len(gaps) && sorted; k++ {
		sorted = gaps[k-1].NS < gaps[k].NS
	}
	if sorted {
		return gaps
	}
	slices.SortFunc(gaps, func(x, y Gap) int { return cmp.Compare(x.NS, y.NS) })
	out := gaps[:1]
	for _, g := range gaps[1:] {
		if last := &out[len(out)-1]; last.NS == g.NS {
			last.Count += g.Count
		} else {
			out = append(out, g)
		}
	}
	return out
}

// clientGaps appends server s's share (c of total) of the engine gaps,
// shifted by the change dd of the delivery delay and, with a stream
// interval above 1, merged into one gap per chunk.
func (m *Model) clientGaps(s int, gaps []Gap, c, total int64, dd int64) {
	left := c
	for k, g := range gaps {
		n := g.Count * c / total
		if k == len(gaps)-1 {
			n = left
		}
		n = min(n, left)
		left -= n
		if n <= 0 {
			continue
		}
		ns := g.NS
		if m.si > 1 {
			// Chunks of si tokens: n/si of them (carried across steps),
			// each spanning si engine gaps.
			x := m.carry[s] + float64(n)/float64(m.si)
			n = int64(x)
			m.carry[s] = x - float64(n)
			ns *= int64(m.si)
			if n == 0 {
				continue
			}
		}
		m.gaps = append(m.gaps, Gap{NS: max(ns+dd, 0), Count: n})
	}
}

// Simple reports whether the model has one API server and a stream
// interval of 1: then StepShift does Step's work, and every client gap is
// its engine gap plus the shift.
func (m *Model) Simple() bool { return len(m.busy) == 1 && m.si == 1 }

// StepShift is Step for a Simple model: it processes the step's outputs
// and returns by how much the client's gaps to this step's chunks differ
// from the engine's gaps (the change of the delivery delay since the
// instance's previous step).
func (m *Model) StepShift(i int, end int64, first, cont int64) int64 {
	n := first + cont
	if n == 0 {
		m.done[0] = end + m.hop
		return 0
	}
	start := max(end+m.hop, m.busy[0])
	done := start + m.step + int64(math.Round((m.outNs+m.chunkNs)*float64(n)))
	m.busy[0], m.done[0] = done, done
	st := &m.insts[i]
	d := done - end
	prev := d
	if st.seen {
		prev = st.delay[0]
	}
	st.seen, st.delay[0] = true, d
	return d - prev
}

// Delivered is when the clients of API server srv receive the chunks of
// the last step passed to Step (without drift).
func (m *Model) Delivered(srv int32) int64 { return m.done[srv] + m.net }
