package cluster

import (
	"fmt"

	"github.com/servesim/servesim/internal/des"
	"github.com/servesim/servesim/internal/kvtier"
)

// Offloading pinned handoff KV to host memory (pull policy, with KV
// tiers): a request queued for a decode admission whose KV has been
// pinned on its prefill instance for handoff.offload_pinned_after_s has
// that KV copied over the prefill GPUs' PCIe links into the node's host
// memory; when the copy ends the GPU blocks are released (the prefill
// instance can admit new prompts) and the request keeps its place in the
// decode queue. At admission the decode instance pulls the KV from the
// prefill node's host memory through the same NICs (RDMA reads host
// memory as it reads GPU memory), so the transfer is timed as from the
// GPU; the host copy is then released. With PDConfig.OffloadPinnedMax
// the offloaded KV a node holds (copies in flight included) is bounded:
// an offload that does not fit waits, FIFO per node, until a release
// makes room, its KV staying pinned meanwhile.

// pendingOffload is one offload copy in flight.
type pendingOffload struct {
	id    int64 // request
	inst  int   // prefill instance
	bytes int64
}

// armOffload schedules the offload of h's pinned KV, when configured.
func (s *Sim) armOffload(h *hand, now int64) error {
	p := s.pd
	if p.cfg.OffloadPinnedAfter <= 0 || s.tiers == nil || !h.holds.has(holdPinned) || h.holds.has(holdOffloading) || h.holds.has(holdOffWait) {
		return nil // none, or already under way or waiting in its place
	}
	return s.schedule(des.Event{At: max(now, satAdd(h.prefillEnd, p.cfg.OffloadPinnedAfter)), Kind: evOffload, Arg: h.id, Target: h.gen})
}

// offloadDue starts copying h's pinned KV to host memory.
func (s *Sim) offloadDue(id int64, gen int32, now int64) error {
	h := s.pd.hands.get(id)
	if h == nil || h.gen != gen || h.st != hQueued || !h.holds.has(holdPinned) || h.holds.has(holdOffloading) || h.holds.has(holdOffWait) {
		return nil
	}
	t := s.tiers
	if s.pd.cfg.OffloadPinnedMax > 0 {
		// Behind the offloads already waiting; started now if it fits. It
		// keeps this place while it waits, moved between decode queues
		// (retry) or not.
		node := t.h.NodeOf(h.p)
		if t.deferred == nil {
			t.deferred = make([][]deferredOffload, t.h.Nodes())
		}
		t.nextTicket++
		h.holds.set(holdOffWait)
		h.offTicket = t.nextTicket
		t.deferred[node] = append(t.deferred[node], deferredOffload{id: id, ticket: t.nextTicket})
		if err := s.retryOffloads(node, now); err != nil {
			return err
		}
		if !h.holds.has(holdOffloading) {
			t.offloadDeferred++
		}
		return nil
	}
	return s.startOffload(h, id, s.offloadBytes(h), now)
}

// offloadBytes is the size of h's pinned prompt KV.
func (s *Sim) offloadBytes(h *hand) int64 {
	return int64(cdiv(h.req.InputTokens, s.engines[h.p].Config().BlockSize)) * s.tiers.h.BlockBytes()
}

// deferredOffload is an offload waiting for room in host memory. ticket
// matches the request's hand.offTicket while this entry is its place in
// the queue.
type deferredOffload struct {
	id     int64
	ticket int64
}

// startOffload starts the copy of h's pinned KV (bytes) to host memory.
func (s *Sim) startOffload(h *hand, id, bytes, now int64) error {
	t := s.tiers
	t.nextOffload++
	if t.offloads == nil {
		t.offloads = map[int64]pendingOffload{}
	}
	t.offloads[t.nextOffload] = pendingOffload{id: id, inst: h.p, bytes: bytes}
	h.holds.set(holdOffloading)
	h.offloadTag = t.nextOffload
	if err := t.h.Offload(h.p, t.nextOffload, bytes, now); err != nil {
		return fmt.Errorf("cluster: request %d: offloading its pinned KV: %w", h.id, err)
	}
	if t.onOffloadStart != nil {
		t.onOffloadStart(id)
	}
	return nil
}

// retryOffloads starts the deferred offloads of node, in order, while they
// fit under the bound; those whose request no longer waits with pinned
// KV are dropped.
func (s *Sim) retryOffloads(node int, now int64) error {
	t := s.tiers
	if s.pd.cfg.OffloadPinnedMax <= 0 || t.deferred == nil {
		return nil
	}
	q := t.deferred[node]
	for len(q) > 0 {
		d := q[0]
		h := s.pd.hands.get(d.id)
		if h == nil || !h.holds.has(holdOffWait) || h.offTicket != d.ticket {
			q = q[1:] // the request moved on
			continue
		}
		bytes := s.offloadBytes(h)
		if bytes > s.pd.cfg.OffloadPinnedMax {
			q = q[1:] // larger than the bound: it stays pinned
			h.holds.drop(holdOffWait)
			continue
		}
		if t.h.HandoffBytes(node)+bytes > s.pd.cfg.OffloadPinnedMax {
			break
		}
		q = q[1:]
		h.holds.drop(holdOffWait)
		if err := s.startOffload(h, d.id, bytes, now); err != nil {
			return err
		}
	}
	if len(q) == 0 {
		q = t.deferred[node][:0] // reuse the array
	}
	t.deferred[node] = q
	return nil
}

// OffloadDeferred is the number of pinned-KV offloads that could not
// start at once under PDConfig.OffloadPinnedMax: they waited for room or,
// larger than the bound, never started (their KV stayed pinned).
func (s *Sim) OffloadDeferred() int64 {
	if s.tiers == nil {
		return 0
	}
	return s.tiers.offloadDeferred
}

// offloaded ends an offload copy: the KV is in host memory and the GPU
// blocks are released, unless the request no longer waits with its KV
// pinned (admitted, re-prefilled or failed meanwhile): then the host copy
// is dropped.
func (s *Sim) offloaded(d kvtier.Done, now int64) error {
	t := s.tiers
	po, ok := t.offloads[d.Tag]
	if !ok {
		return fmt.Errorf("cluster: invariant violated: offload %d finished but was never started", d.Tag)
	}
	delete(t.offloads, d.Tag)
	h := s.pd.hands.get(po.id)
	if h == nil || !h.holds.has(holdOffloading) || h.offloadTag != d.Tag || h.st != hQueued || !h.holds.has(holdPinned) {
		if h != nil && h.offloadTag == d.Tag {
			h.holds.drop(holdOffloading)
		}
		if err := t.h.Release(po.inst, po.bytes); err != nil {
			return err
		}
		return s.retryOffloads(t.h.NodeOf(po.inst), now)
	}
	h.holds.drop(holdOffloading)
	if err := s.unpin(h, now); err != nil {
		return err
	}
	h.holds.set(holdOffloaded)
	h.hostBytes = po.bytes
	return nil
}

// dropOffloaded releases h's KV held in host memory, and disowns an
// offload copy in flight (its end releases it). The room freed goes to
// deferred offloads.
func (s *Sim) dropOffloaded(h *hand, now int64) error {
	h.holds.drop(holdOffloading)
	if !h.holds.has(holdOffloaded) {
		return nil
	}
	h.holds.drop(holdOffloaded)
	bytes := h.hostBytes
	h.hostBytes = 0
	if err := s.tiers.h.Release(h.p, bytes); err != nil {
		return err
	}
	return s.retryOffloads(s.tiers.h.NodeOf(h.p), now)
}

func cdiv(a, b int) int { return (a + b - 1) / b }
