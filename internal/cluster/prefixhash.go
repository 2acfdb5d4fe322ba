package cluster

import (
	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/workload"
)

// promptHashes hashes the prompt of the request being placed once, for
// every routing candidate and for the engine it lands on (prefix lookups
// cost one hash chain per request, not one per candidate), and carries a
// session's hashes on to its next sub-request, whose prompt usually
// extends this one's (multi-turn chat): only the new tokens are hashed.
type promptHashes struct {
	req    *workload.Request // request the hashes are for; nil: none
	bs     int               // block size they are for
	hashes []uint64          // chained hashes of req's full prompt blocks

	// next holds, keyed by the id of a session's next sub-request, the
	// current one's prompt ids and hashes; an entry lives from the routing
	// of a sub-request to that of its successor (or the session's failure).
	next  map[int64]sessionHashes
	spare [][]uint64 // hash buffers no longer used, for reuse
}

// sessionHashes is a prompt and the chained hashes of its full blocks.
type sessionHashes struct {
	ids    []int32
	bs     int
	hashes []uint64
}

// reset forgets the current request (called before each placement).
func (p *promptHashes) reset() { p.req = nil }

// of returns the chained hashes of req's full prompt blocks for block size
// bs, or nil when req has no token ids. The slice is valid until the next
// reset or call with another block size.
func (p *promptHashes) of(req *workload.Request, bs int) []uint64 {
	if len(req.InputIDs) < req.InputTokens || req.InputTokens < bs {
		return nil
	}
	if p.req == req && p.bs == bs {
		return p.hashes
	}
	p.req, p.bs, p.hashes = req, bs, p.hashes[:0]
	if prev, ok := p.next[req.ID]; ok && prev.bs == bs {
		// The earlier turn's blocks are reused as far as its ids are a
		// prefix of this prompt's (compared, not assumed): its buffer
		// becomes this request's.
		n := min(len(prev.hashes), req.InputTokens/bs) * bs
		same := 0
		for same < n && prev.ids[same] == req.InputIDs[same] {
			same++
		}
		delete(p.next, req.ID)
		p.spare = append(p.spare, p.hashes)
		p.hashes = prev.hashes[:same/bs]
	}
	p.hashes = engine.PromptHashes(p.hashes, req.InputIDs, req.InputTokens/bs, bs)
	return p.hashes
}

// placed is called once req has been given to an engine: the hashes (when
// computed) are handed to its successor in the session, if any, and the
// entry kept for req itself is dropped.
func (p *promptHashes) placed(req *workload.Request, succ int64, hasSucc bool) {
	p.drop(req.ID)
	if !hasSucc || p.req != req || len(p.hashes) == 0 {
		return
	}
	if p.next == nil {
		p.next = map[int64]sessionHashes{}
	}
	// The buffer moves to the successor's entry; p.req is forgotten so
	// that it is not used again for req.
	p.next[succ] = sessionHashes{ids: req.InputIDs, bs: p.bs, hashes: p.hashes}
	p.req, p.hashes = nil, nil
	if n := len(p.spare); n > 0 {
		p.hashes, p.spare = p.spare[n-1][:0], p.spare[:n-1]
	}
}

// drop forgets what was kept for request id (placed, or a sub-request that
// will not be routed: its session failed).
func (p *promptHashes) drop(id int64) {
	if prev, ok := p.next[id]; ok {
		delete(p.next, id)
		p.spare = append(p.spare, prev.hashes[:0])
	}
}

// seedHashes hands the engine of instance inst, to which req was just
// added in slot, req's prompt hashes (hashed now if routing did not), and
// keeps them for req's successor in its session.
func (s *Sim) seedHashes(inst int, slot int32, req *workload.Request) {
	if bs := s.hashBS[inst]; bs > 0 {
		if h := s.ph.of(req, bs); h != nil {
			s.engines[inst].SeedHashes(slot, h)
		}
	}
	s.hashesPlaced(req)
}

// hashesPlaced keeps req's prompt hashes, if computed, for its successor
// in its session.
func (s *Sim) hashesPlaced(req *workload.Request) {
	var succ int64
	rest, ok := s.sessions[req.ID]
	if ok = ok && len(rest) > 0; ok {
		succ = rest[0].ID
	}
	s.ph.placed(req, succ, ok)
}
