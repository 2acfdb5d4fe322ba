package kvtier

import (
	"testing"

	_ "github.com/servesim/servesim/internal/testseed"
	"pgregory.net/rapid"
)

// TestHierarchyProperties drives a two-instance node with host and disk
// tiers through random stores, lookups with loads, handoff offloads and
// time steps. After every operation Check holds (slot states match the
// copies in flight, chunks and bytes are conserved); every load started is
// reported done exactly once, never before latency + bytes / bandwidth of
// an idle path; time never goes back; at the end, with every copy done,
// no chunk is being read or written.
func TestHierarchyProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := testConfig(2, rapid.SampledFrom([]float64{1e9, 1e12}).Draw(rt, "hostBW"))
		c.Nodes[0].Host.CapacityBytes = int64(rapid.IntRange(1, 6).Draw(rt, "hostChunks")) * 4e6
		if rapid.Bool().Draw(rt, "disk") {
			c.Nodes[0].Disk = &Spec{CapacityBytes: int64(rapid.IntRange(1, 12).Draw(rt, "diskChunks")) * 4e6, ReadBW: 5e8, WriteBW: 2e8, LatencyNs: 50000}
		}
		c.SaveDecodeCache = rapid.Bool().Draw(rt, "save")
		h, err := New(c)
		if err != nil {
			rt.Fatal(err)
		}
		now := int64(0)
		type load struct {
			start, min int64
		}
		pending := map[int32]load{}
		nextSlot := int32(0)
		var offloaded int64
		seqs := [][]uint64{seqHashes(100, 16), seqHashes(200, 16), seqHashes(300, 16)}
		check := func() {
			if err := h.Check(); err != nil {
				rt.Fatal(err)
			}
		}
		advance := func(to int64) {
			done, err := h.Advance(to)
			if err != nil {
				rt.Fatal(err)
			}
			for _, d := range done {
				if d.Offload {
					continue
				}
				l, ok := pending[d.Slot]
				if !ok {
					rt.Fatalf("load %d reported twice or never started", d.Slot)
				}
				if to-l.start < l.min {
					rt.Fatalf("load %d took %d ns, less than the idle-path %d ns", d.Slot, to-l.start, l.min)
				}
				delete(pending, d.Slot)
			}
		}
		for step := 0; step < 40; step++ {
			inst := rapid.IntRange(0, 1).Draw(rt, "inst")
			hs := seqs[rapid.IntRange(0, len(seqs)-1).Draw(rt, "seq")]
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0:
				to := rapid.IntRange(0, 16).Draw(rt, "to")
				noErr(h.Store(inst, hs, rapid.IntRange(0, to).Draw(rt, "from"), to, rapid.IntRange(0, 16).Draw(rt, "prompt"), now))
			case 1:
				from := rapid.IntRange(0, 8).Draw(rt, "gpu")
				end, tier := h.Lookup(inst, hs, from, 16)
				if end > from {
					if err := h.Load(inst, nextSlot, hs, from, end, tier, now); err != nil {
						rt.Fatal(err)
					}
					// At best the 10 us PCIe latency plus the bytes at 1 GB/s.
					pending[nextSlot] = load{start: now, min: 10000 + int64(end-from)*1_000_000}
					nextSlot++
				}
			case 2:
				b := int64(rapid.IntRange(1, 8).Draw(rt, "blocks")) * 1e6
				noErr(h.Offload(inst, int64(step), b, now))
				offloaded += b
			case 3:
				now += int64(rapid.IntRange(0, 20_000_000).Draw(rt, "dt"))
				advance(now)
			}
			check()
		}
		for {
			at, ok := h.NextEvent()
			if !ok {
				break
			}
			now = max(now, at)
			advance(now)
			check()
		}
		if len(pending) != 0 {
			rt.Fatalf("%d loads never reported done", len(pending))
		}
		if got := h.HandoffBytes(0); got != offloaded {
			rt.Fatalf("host holds %d bytes of handoff KV, %d offloaded", got, offloaded)
		}
		if err := h.Release(0, offloaded); err != nil || h.HandoffBytes(0) != 0 {
			rt.Fatalf("release: %v, %d left", err, h.HandoffBytes(0))
		}
		if err := h.Release(0, 1); err == nil {
			rt.Fatal("releasing more handoff KV than held accepted")
		}
		for t := Host; t <= Disk; t++ {
			if tr := h.Tier(0, t); tr != nil && (tr.numWriting != 0 || tr.numReading != 0) {
				rt.Fatalf("%s tier: %d writing, %d reading with no copy in flight", TierName(t), tr.numWriting, tr.numReading)
			}
		}
	})
}
