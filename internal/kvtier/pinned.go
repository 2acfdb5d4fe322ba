// Copies that bypass the chunk tiers: handoff KV offloaded to host memory
// and swap-preemption copies, both over the GPUs' PCIe links.

package kvtier

import "fmt"

// Offload starts copying bytes of a handoff's KV, pinned on instance
// inst's GPUs, to its node's host memory over the GPUs' PCIe links
// (sharing them with stores); Advance reports the end with tag. The
// bytes are held in host memory outside the chunk tiers (a pinned
// staging area: they are never evicted) until Release.
func (h *Hierarchy) Offload(inst int, tag, bytes int64, now int64) error {
	in := h.cfg.Instances[inst]
	nt := &h.nodes[in.Node]
	id := h.newOp()
	o := &h.ops[id]
	o.kind, o.tier, o.inst, o.slot, o.node, o.start, o.bytes, o.tag = opOffload, Host, int32(inst), -1, int32(in.Node), now, bytes, tag
	h.handoff[in.Node] += bytes
	h.handoffMax[in.Node] = max(h.handoffMax[in.Node], h.handoff[in.Node])
	h.from, h.to = h.from[:0], h.to[:0]
	for _, ep := range h.pcie[inst] {
		h.from = append(h.from, ep)
		h.to = append(h.to, nt.write[Host])
	}
	if _, err := h.net.StartParallel(now, h.from, h.to, ceilDiv(bytes, int64(in.GPUs)), int64(id)); err != nil {
		return fmt.Errorf("kvtier: offload: %w", err)
	}
	return nil
}

// Swap starts copying blocks of the KV of the preempted request in slot
// of instance inst between its GPUs and host memory, as vLLM v0's swap
// preemption does: out, from each GPU's PCIe egress to the host's write
// side (shared with stores and offloads); in, from the host's read side to
// each GPU's PCIe ingress (shared with loads). The swap space is the
// engine's own (package engine accounts its blocks); Advance reports the
// end with Done.Swap.
func (h *Hierarchy) Swap(inst int, slot int32, blocks int, out bool, now int64) error {
	in := h.cfg.Instances[inst]
	nt := &h.nodes[in.Node]
	id := h.newOp()
	o := &h.ops[id]
	o.kind, o.tier, o.inst, o.slot, o.node, o.start = opSwapIn, Host, int32(inst), slot, int32(in.Node), now
	o.bytes = int64(blocks) * h.cfg.BlockBytes
	h.from, h.to = h.from[:0], h.to[:0]
	for _, ep := range h.pcie[inst] {
		if out {
			h.from = append(h.from, ep)
			h.to = append(h.to, nt.write[Host])
		} else {
			h.from = append(h.from, nt.read[Host])
			h.to = append(h.to, ep)
		}
	}
	if out {
		o.kind = opSwapOut
	}
	if _, err := h.net.StartParallel(now, h.from, h.to, ceilDiv(o.bytes, int64(in.GPUs)), int64(id)); err != nil {
		return fmt.Errorf("kvtier: swap: %w", err)
	}
	return nil
}

// Swapping is the number of swap copies in flight (counted over the
// copies in flight; the engines keep their own count).
func (h *Hierarchy) Swapping() int {
	n := 0
	for i := range h.ops {
		if o := &h.ops[i]; o.live && (o.kind == opSwapOut || o.kind == opSwapIn) {
			n++
		}
	}
	return n
}

// Release frees bytes of offloaded handoff KV in instance inst's node's
// host memory (sent on, or no longer needed).
func (h *Hierarchy) Release(inst int, bytes int64) error {
	n := h.cfg.Instances[inst].Node
	if bytes > h.handoff[n] {
		return fmt.Errorf("kvtier: node %d releases %d bytes of handoff KV but holds %d", n, bytes, h.handoff[n])
	}
	h.handoff[n] -= bytes
	return nil
}

// HandoffBytes is the handoff KV held in node n's host memory.
func (h *Hierarchy) HandoffBytes(n int) int64 { return h.handoff[n] }

// HandoffPeak is the most handoff KV node n's host memory held at once
// (copies in flight included).
func (h *Hierarchy) HandoffPeak(n int) int64 { return h.handoffMax[n] }
