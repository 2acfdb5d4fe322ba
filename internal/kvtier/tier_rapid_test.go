package kvtier

import (
	"testing"

	"pgregory.net/rapid"
)

// TestTierStateMachine drives a tier with random writes, write ends,
// reads and read ends against a model (a map of chunk -> state and an
// LRU order), checking the tier's invariants after every operation.
func TestTierStateMachine(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		capacity := rapid.IntRange(1, 8).Draw(rt, "capacity")
		tr, err := NewTier(capacity)
		if err != nil {
			rt.Fatal(err)
		}
		type entry struct {
			id      SlotID
			state   State
			readers int
		}
		model := map[uint64]*entry{}
		var lru []uint64 // Stored chunks, least recently used first
		removeLRU := func(h uint64) {
			for i, x := range lru {
				if x == h {
					lru = append(lru[:i], lru[i+1:]...)
					return
				}
			}
		}
		keys := func(st State) []uint64 {
			var out []uint64
			for h := uint64(1); h <= 12; h++ {
				if e, ok := model[h]; ok && e.state == st {
					out = append(out, h)
				}
			}
			return out
		}
		for step := 0; step < 60; step++ {
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0: // write
				h := rapid.Uint64Range(1, 12).Draw(rt, "hash")
				id, ok := tr.BeginWrite(h)
				_, present := model[h]
				occupied := len(model)
				switch {
				case present:
					if ok {
						rt.Fatalf("duplicate write of %d accepted", h)
					}
					if model[h].state == Stored {
						removeLRU(h)
						lru = append(lru, h)
					}
				case occupied < capacity:
					if !ok {
						rt.Fatalf("write refused with free slots")
					}
					model[h] = &entry{id: id, state: Writing}
				case len(lru) > 0:
					if !ok {
						rt.Fatalf("write refused with an evictable chunk")
					}
					victim := lru[0]
					lru = lru[1:]
					if model[victim].id != id {
						rt.Fatalf("evicted slot %d, want the LRU chunk's %d", id, model[victim].id)
					}
					delete(model, victim)
					model[h] = &entry{id: id, state: Writing}
				default:
					if ok {
						rt.Fatalf("write accepted with every slot writing or reading")
					}
				}
			case 1: // end a write
				ks := keys(Writing)
				if len(ks) == 0 {
					continue
				}
				h := ks[rapid.IntRange(0, len(ks)-1).Draw(rt, "w")]
				if err := tr.EndWrite(model[h].id); err != nil {
					rt.Fatal(err)
				}
				model[h].state = Stored
				lru = append(lru, h)
			case 2: // read
				h := rapid.Uint64Range(1, 12).Draw(rt, "hash")
				_, ok := tr.BeginRead(h)
				e, present := model[h]
				readable := present && (e.state == Stored || e.state == Reading)
				if ok != readable {
					rt.Fatalf("read of %d: ok %t, readable %t", h, ok, readable)
				}
				if ok {
					if e.state == Stored {
						removeLRU(h)
					}
					e.state = Reading
					e.readers++
				}
			case 3: // end a read
				ks := keys(Reading)
				if len(ks) == 0 {
					continue
				}
				h := ks[rapid.IntRange(0, len(ks)-1).Draw(rt, "r")]
				e := model[h]
				if err := tr.EndRead(e.id); err != nil {
					rt.Fatal(err)
				}
				e.readers--
				if e.readers == 0 {
					e.state = Stored
					lru = append(lru, h)
				}
			}
			if err := tr.Check(); err != nil {
				rt.Fatal(err)
			}
			for h, e := range model {
				if tr.StateOf(e.id) != e.state {
					rt.Fatalf("chunk %d: tier says %s, model %s", h, tr.StateOf(e.id), e.state)
				}
			}
			if tr.Occupied() != len(model) {
				rt.Fatalf("occupied %d, model %d", tr.Occupied(), len(model))
			}
		}
		// Ending a write or read of a slot not in that state is an error.
		if err := tr.EndWrite(SlotID(capacity)); err == nil {
			rt.Fatal("end of write of a slot outside the tier accepted")
		}
	})
}
