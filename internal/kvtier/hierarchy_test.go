package kvtier

import (
	"strings"
	"testing"
)

// testConfig: blocks of 16 tokens and 1e6 bytes, chunks of 4 blocks (4e6
// bytes), one node with a host tier of 10 chunks behind PCIe links of
// 1 GB/s and 10 us, host DRAM of hostBW with 5 us per operation, and n
// single-GPU instances on it.
func testConfig(n int, hostBW float64) Config {
	c := Config{BlockSize: 16, ChunkTokens: 64, BlockBytes: 1e6,
		Nodes: []Node{{Host: Spec{CapacityBytes: 40e6, ReadBW: hostBW, WriteBW: hostBW, LatencyNs: 5000}, PCIeBW: 1e9, PCIeLatencyNs: 10000}}}
	for i := 0; i < n; i++ {
		c.Instances = append(c.Instances, Instance{Node: 0, GPUs: 1})
	}
	return c
}

func seqHashes(base uint64, n int) []uint64 {
	h := make([]uint64, n)
	for i := range h {
		h[i] = base + uint64(i)
	}
	return h
}

// drain advances h through all its events and returns the loads finished
// with their times.
func drain(t *testing.T, h *Hierarchy) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	for {
		at, ok := h.NextEvent()
		if !ok {
			break
		}
		done, err := h.Advance(at)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range done {
			out[l.Slot] = at
		}
		if err := h.Check(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func newH(t *testing.T, c Config) *Hierarchy {
	t.Helper()
	h, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestLoadTimeExact(t *testing.T) {
	tests := []struct {
		name   string
		insts  int
		loads  []int // instance of each concurrent load
		hostBW float64
		want   int64 // end of every load, from its start at t0
	}{
		// latency max(10 us, 5 us) + 8e6 B / 1e9 B/s = 10 us + 8 ms.
		{"idle link", 1, []int{0}, 1e12, 10000 + 8_000_000},
		// Two loads into one GPU share its PCIe ingress: 16 ms of transfer each.
		{"two loads share one PCIe link", 1, []int{0, 0}, 1e12, 10000 + 16_000_000},
		// Two GPUs each have their own PCIe link: no sharing.
		{"two GPUs, own links", 2, []int{0, 1}, 1e12, 10000 + 8_000_000},
		// Host DRAM of 1 GB/s is then the shared bottleneck.
		{"two GPUs, host bound", 2, []int{0, 1}, 1e9, 10000 + 16_000_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newH(t, testConfig(tt.insts, tt.hostBW))
			hs := seqHashes(100, 9)
			// Store blocks [0, 9): chunks 0 and 1 (blocks 0-7); block 8 is a
			// partial chunk and is not stored.
			noErr(h.Store(0, hs, 0, 9, 9, 0))
			drain(t, h)
			if got := h.Tier(0, Host).Occupied(); got != 2 {
				t.Fatalf("host holds %d chunks, want 2", got)
			}
			if end, tier := h.Lookup(0, hs, 0, 9); end != 8 || tier != Host {
				t.Fatalf("lookup = %d blocks in tier %d, want 8 in host", end, tier)
			}
			const t0 = 1_000_000_000
			for i, inst := range tt.loads {
				if err := h.Load(inst, int32(i), hs, 0, 8, Host, t0); err != nil {
					t.Fatal(err)
				}
			}
			if err := h.Check(); err != nil {
				t.Fatal(err)
			}
			got := drain(t, h)
			for i := range tt.loads {
				if got[int32(i)] != t0+tt.want {
					t.Errorf("load %d ended at %d, want %d", i, got[int32(i)]-t0, tt.want)
				}
			}
			st := h.Stats(Host)
			if st.BytesRead != int64(len(tt.loads))*8e6 || st.HitBlocks != int64(len(tt.loads))*8 || st.LoadNs != int64(len(tt.loads))*tt.want {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestStoreChunks(t *testing.T) {
	tests := []struct {
		name             string
		from, to, prompt int
		save             bool
		wantChunks       int
		wantLookup       int
	}{
		{"partial chunk not stored", 0, 7, 7, false, 1, 4},
		{"two whole chunks", 0, 8, 8, false, 2, 8},
		{"decode blocks not stored by default", 0, 8, 5, false, 1, 4},
		{"decode blocks stored with save_decode_cache", 0, 8, 5, true, 2, 8},
		{"only chunks ending in range", 4, 8, 8, false, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig(1, 1e12)
			c.SaveDecodeCache = tt.save
			h := newH(t, c)
			hs := seqHashes(7, 12)
			noErr(h.Store(0, hs, tt.from, tt.to, tt.prompt, 0))
			drain(t, h)
			if got := h.Tier(0, Host).Occupied(); got != tt.wantChunks {
				t.Errorf("stored %d chunks, want %d", got, tt.wantChunks)
			}
			if st := h.Stats(Host); st.BytesWritten != int64(tt.wantChunks)*4e6 {
				t.Errorf("bytes written %d, want %d", st.BytesWritten, int64(tt.wantChunks)*4e6)
			}
			if end, _ := h.Lookup(0, hs, 0, 11); end != tt.wantLookup {
				t.Errorf("lookup finds %d blocks, want %d", end, tt.wantLookup)
			}
		})
	}
}

func TestStoreIsWriteBehind(t *testing.T) {
	h := newH(t, testConfig(1, 1e12))
	hs := seqHashes(1, 4)
	noErr(h.Store(0, hs, 0, 4, 4, 0))
	// Not readable until the copy has ended: 10 us + 4 ms.
	if end, _ := h.Lookup(0, hs, 0, 4); end != 0 {
		t.Fatalf("chunk readable while being written")
	}
	must(h.Advance(10000 + 4_000_000 - 1))
	if end, _ := h.Lookup(0, hs, 0, 4); end != 0 {
		t.Fatalf("chunk readable before its write ended")
	}
	must(h.Advance(10000 + 4_000_000))
	if end, _ := h.Lookup(0, hs, 0, 4); end != 4 {
		t.Fatalf("chunk not readable after its write ended")
	}
}

func TestDiskTierAndCostBased(t *testing.T) {
	c := testConfig(1, 1e12)
	// A disk of 0.1 GB/s read, 100 us per operation.
	c.Nodes[0].Disk = &Spec{CapacityBytes: 400e6, ReadBW: 1e8, WriteBW: 1e8, LatencyNs: 100000}
	// Host holds one chunk only: the older chunk survives on disk.
	c.Nodes[0].Host.CapacityBytes = 4e6
	c.Instances[0].PrefillTokensPerSec = 10000 // 64 tokens in 6.4 ms
	h := newH(t, c)
	a, b := seqHashes(1000, 4), seqHashes(2000, 4)
	noErr(h.Store(0, a, 0, 4, 4, 0))
	drain(t, h)
	noErr(h.Store(0, b, 0, 4, 4, 1e9))
	drain(t, h)
	if end, tier := h.Lookup(0, a, 0, 4); end != 4 || tier != Disk {
		t.Fatalf("evicted chunk: lookup = %d in tier %d, want 4 in disk", end, tier)
	}
	if end, tier := h.Lookup(0, b, 0, 4); end != 4 || tier != Host {
		t.Fatalf("recent chunk: lookup = %d in tier %d, want 4 in host", end, tier)
	}
	// Disk load: 100 us + 4e6 B / 1e8 B/s = 40.1 ms > 6.4 ms of prefill.
	if err := h.Load(0, 1, a, 0, 4, Disk, 2e9); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, h)[1]; got != 2e9+100000+40_000_000 {
		t.Fatalf("disk load ended at %d", got-2e9)
	}
	h.cfg.LoadPolicy = CostBased
	if end, _ := h.Lookup(0, a, 0, 4); end != 0 {
		t.Errorf("cost_based loads from slow disk (%d blocks)", end)
	}
	// Host load: 10 us + 4 ms < 6.4 ms: loaded.
	if end, tier := h.Lookup(0, b, 0, 4); end != 4 || tier != Host {
		t.Errorf("cost_based skips the host hit")
	}
}

func TestReadingNotEvictable(t *testing.T) {
	c := testConfig(1, 1e12)
	c.Nodes[0].Host.CapacityBytes = 4e6 // one chunk
	h := newH(t, c)
	a, b := seqHashes(1, 4), seqHashes(50, 4)
	noErr(h.Store(0, a, 0, 4, 4, 0))
	drain(t, h)
	if err := h.Load(0, 0, a, 0, 4, Host, 1e9); err != nil {
		t.Fatal(err)
	}
	noErr(h.Store(0, b, 0, 4, 4, 1e9)) // dropped: the only slot is being read
	if st := h.Stats(Host); st.Dropped != 1 || st.Stored != 1 {
		t.Fatalf("stats %+v, want one store dropped", st)
	}
	drain(t, h)
	noErr(h.Store(0, b, 0, 4, 4, 2e9)) // evicts a now
	drain(t, h)
	if h.Tier(0, Host).Readable(a[3]) || !h.Tier(0, Host).Readable(b[3]) {
		t.Fatal("LRU eviction after the read ended did not happen")
	}
}

func TestWeight(t *testing.T) {
	c := testConfig(1, 1e12)
	// A 4-block chunk (64 tokens, 4e6 bytes) loads in 10 us + 4 ms =
	// 4.01 ms and prefills in 64 / 7980.0499 tok/s = 8.02 ms: weight 0.5.
	c.Instances[0].PrefillTokensPerSec = 64 / 8.02e-3
	c.Nodes[0].Disk = &Spec{CapacityBytes: 1e9, ReadBW: 1e8, WriteBW: 1e8, LatencyNs: 100000}
	h := newH(t, c)
	if w := h.Weight(0, Host); w < 0.5-1e-9 || w > 0.5+1e-9 {
		t.Errorf("host weight %g, want 0.5", w)
	}
	// Disk: 100 us + 40 ms > 8.02 ms: loading saves nothing.
	if w := h.Weight(0, Disk); w != 0 {
		t.Errorf("disk weight %g, want 0", w)
	}
	if w := h.Weight(0, GPU); w != 1 {
		t.Errorf("gpu weight %g, want 1", w)
	}
}

// TestWriteBuffer: with a write buffer of two 4e6-byte chunks, a store of
// three chunks writes two and drops one; a store from another GPU of the
// node while they are in flight is dropped; once they end (10 us + 8e6 B
// at 1 GB/s) the buffer takes stores again. Unbounded, all are stored.
func TestWriteBuffer(t *testing.T) {
	for _, tt := range []struct {
		buffer                 int64
		stored, dropped, after int64
	}{
		{8e6, 2, 2, 3},
		{0, 4, 0, 5},
	} {
		c := testConfig(2, 1e12)
		c.WriteBufferBytes = tt.buffer
		h := newH(t, c)
		noErr(h.Store(0, seqHashes(100, 12), 0, 12, 12, 0))
		noErr(h.Store(1, seqHashes(200, 4), 0, 4, 4, 1))
		if s := h.Stats(Host); s.Stored != tt.stored || s.Dropped != tt.dropped {
			t.Errorf("buffer %d: stored %d dropped %d, want %d and %d", tt.buffer, s.Stored, s.Dropped, tt.stored, tt.dropped)
		}
		if err := h.Check(); err != nil {
			t.Fatal(err)
		}
		must(h.Advance(10000 + 8_000_000))
		if err := h.Check(); err != nil {
			t.Fatal(err)
		}
		noErr(h.Store(1, seqHashes(300, 4), 0, 4, 4, 10000+8_000_000))
		if s := h.Stats(Host); s.Stored != tt.after {
			t.Errorf("buffer %d: %d chunks stored after the first stores ended, want %d", tt.buffer, s.Stored, tt.after)
		}
		drain(t, h)
	}
	c := testConfig(1, 1e12)
	c.WriteBufferBytes = 3e6
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "kv_tiers.write_buffer_mb") {
		t.Errorf("a buffer smaller than a chunk: error %v", err)
	}
}

// must returns v, panicking on err (a call the test expects to succeed).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// noErr panics on err (a call the test expects to succeed).
func noErr(err error) {
	if err != nil {
		panic(err)
	}
}
