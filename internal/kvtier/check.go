// The hierarchy's invariant check.

package kvtier

import "fmt"

// Check verifies every tier's invariants and that the copies in flight
// account for exactly the chunks being written and read: a chunk is
// Writing iff one store or spill in flight writes it, and a Reading
// chunk's readers equal the loads in flight reading it. Bytes are
// conserved: what each tier has had written is its chunks written times
// the chunk size, and every chunk written is held or was evicted.
func (h *Hierarchy) Check() error {
	for n := range h.nodes {
		for t := Host; t <= Disk; t++ {
			tr := h.nodes[n].tiers[t]
			if tr == nil {
				continue
			}
			if err := tr.Check(); err != nil {
				return fmt.Errorf("node %d %s tier: %w", n, TierName(t), err)
			}
			if t == Host {
				var inFlight int64
				for i := range h.ops {
					if o := &h.ops[i]; o.live && o.kind == opStore && int(o.node) == n {
						inFlight += o.bytes
					}
				}
				if b := h.nodes[n].buffered; b != inFlight || (h.cfg.WriteBufferBytes > 0 && b > h.cfg.WriteBufferBytes) {
					return fmt.Errorf("node %d: write buffer holds %d bytes, stores in flight %d, bound %d", n, b, inFlight, h.cfg.WriteBufferBytes)
				}
			}
			writers := make(map[SlotID]int32)
			readers := make(map[SlotID]int32)
			for i := range h.ops {
				o := &h.ops[i]
				if !o.live || int(o.node) != n || int(o.tier) != t {
					continue
				}
				for _, sid := range o.ids {
					if o.kind == opLoad {
						readers[sid]++
					} else {
						writers[sid]++
					}
				}
			}
			for i := range tr.slots {
				sl := &tr.slots[i]
				if w := writers[SlotID(i)]; (sl.state == Writing) != (w == 1) || w > 1 {
					return fmt.Errorf("node %d %s tier: slot %d in state %s has %d writes in flight", n, TierName(t), i, sl.state, w)
				}
				if r := readers[SlotID(i)]; r != sl.readers {
					return fmt.Errorf("node %d %s tier: slot %d has %d readers but %d loads in flight", n, TierName(t), i, sl.readers, r)
				}
			}
		}
	}
	for t := Host; t <= Disk; t++ {
		s := h.Stats(t)
		if s.BytesWritten != s.Stored*h.chunkBytes {
			return fmt.Errorf("%s tier: %d bytes written for %d chunks of %d bytes", TierName(t), s.BytesWritten, s.Stored, h.chunkBytes)
		}
		// Every chunk written is still held (or being written) or was
		// evicted: the bytes written are the bytes held plus the bytes
		// evicted.
		if s.Stored != s.Occupied+s.Evicted {
			return fmt.Errorf("%s tier: %d chunks (%d bytes) written but %d held and %d evicted", TierName(t), s.Stored, s.BytesWritten, s.Occupied, s.Evicted)
		}
	}
	return nil
}
