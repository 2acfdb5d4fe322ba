package kvtier

import "testing"

// TestSwapTimeExact: a swap copy of n blocks is one flow per GPU between
// the GPU's PCIe link and the host's memory, timed on the shared links:
// on an idle path latency max(10 us PCIe, 5 us host) + bytes / min(PCIe
// 1 GB/s, host bandwidth). A swap-out shares the GPU's PCIe egress with a
// prefix store, a swap-in its ingress with a prefix load; PCIe is full
// duplex, so a swap-out does not slow a swap-in.
func TestSwapTimeExact(t *testing.T) {
	type copyOp struct {
		kind   string // out, in, store, load
		inst   int
		blocks int
	}
	tests := []struct {
		name   string
		insts  int
		hostBW float64
		ops    []copyOp
		want   []int64 // end of each swap copy, from t0
	}{
		{"swap-out, idle link", 1, 1e12, []copyOp{{"out", 0, 8}}, []int64{10000 + 8_000_000}},
		{"swap-in, idle link", 1, 1e12, []copyOp{{"in", 0, 8}}, []int64{10000 + 8_000_000}},
		// Host memory of 0.5 GB/s is the bottleneck: 8e6 B in 16 ms.
		{"swap-out, host bound", 1, 5e8, []copyOp{{"out", 0, 8}}, []int64{10000 + 16_000_000}},
		// Two swap-outs of one GPU share its egress: 16 ms each.
		{"two swap-outs share PCIe", 1, 1e12, []copyOp{{"out", 0, 8}, {"out", 0, 8}}, []int64{10000 + 16_000_000, 10000 + 16_000_000}},
		// A store of 2 chunks (8 blocks) shares the egress: both take 16 ms.
		{"swap-out with a store", 1, 1e12, []copyOp{{"out", 0, 8}, {"store", 0, 8}}, []int64{10000 + 16_000_000}},
		// A load of 8 blocks shares the ingress with the swap-in.
		{"swap-in with a load", 1, 1e12, []copyOp{{"in", 0, 8}, {"load", 0, 8}}, []int64{10000 + 16_000_000}},
		// Out and in of one GPU use the two directions: no sharing.
		{"swap-out and swap-in, full duplex", 1, 1e12, []copyOp{{"out", 0, 8}, {"in", 0, 8}}, []int64{10000 + 8_000_000, 10000 + 8_000_000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig(tt.insts, tt.hostBW)
			c.Nodes[0].Host.CapacityBytes = 100e6
			h := newH(t, c)
			const t0 = 100_000_000 // after any store made at time 0
			hashes := seqHashes(100, 8)
			for _, op := range tt.ops {
				if op.kind == "load" {
					// Stored beforehand, at time 0, on an idle link.
					noErr(h.Store(op.inst, hashes, 0, op.blocks, op.blocks, 0))
					must(h.Advance(t0))
				}
			}
			for i, op := range tt.ops {
				switch op.kind {
				case "out", "in":
					noErr(h.Swap(op.inst, int32(i), op.blocks, op.kind == "out", t0))
				case "store":
					noErr(h.Store(op.inst, hashes, 0, op.blocks, op.blocks, t0))
				case "load":
					if end, tier := h.Lookup(op.inst, hashes, 0, op.blocks); end != op.blocks || tier != Host {
						t.Fatalf("stored prefix not found: end %d tier %d", end, tier)
					}
					if err := h.Load(op.inst, int32(i), hashes, 0, op.blocks, Host, t0); err != nil {
						t.Fatal(err)
					}
				}
			}
			if h.Swapping() == 0 {
				t.Fatal("no swap copy in flight")
			}
			ends := map[int32]int64{}
			for {
				at, ok := h.NextEvent()
				if !ok {
					break
				}
				for _, d := range must(h.Advance(at)) {
					if d.Swap {
						if d.Out != (tt.ops[d.Slot].kind == "out") {
							t.Errorf("copy %d reported out=%t", d.Slot, d.Out)
						}
						ends[d.Slot] = at - t0
					}
				}
				if err := h.Check(); err != nil {
					t.Fatal(err)
				}
			}
			got := []int64{}
			for i, op := range tt.ops {
				if op.kind == "out" || op.kind == "in" {
					got = append(got, ends[int32(i)])
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("swap copies ended at %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("swap copy %d took %d ns, want %d", i, got[i], tt.want[i])
				}
			}
			if h.Swapping() != 0 {
				t.Errorf("%d swap copies still counted in flight", h.Swapping())
			}
		})
	}
}
