package kvtier

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/internal/link"
)

// nodeTiers is the live state of one node's tiers.
type nodeTiers struct {
	tiers [3]*Tier // by tier index; [GPU] unused, [Disk] nil without a disk
	// Endpoints of the transfer network: a tier's read side (egress) and
	// write side (ingress) are separate endpoints so that they can have
	// different bandwidths.
	read, write [3]link.EndpointID
	// buffered is the bytes of stores to the host tier in flight.
	buffered int64
}

type opKind uint8

const (
	opLoad    opKind = iota // tier -> GPU
	opStore                 // GPU -> host
	opSpill                 // host -> disk
	opOffload               // handoff KV: GPU -> host
	opSwapOut               // preempted request's KV: GPU -> host swap space
	opSwapIn                // swapped KV: host swap space -> GPU
)

// op is one copy in flight.
type op struct {
	kind  opKind
	tier  int8
	inst  int32
	slot  int32 // engine request slot (loads)
	node  int32
	start int64
	bytes int64
	ids   []SlotID // tier slots read or written
	tag   int64    // offloads: the caller's tag
	live  bool
}

// Done reports a finished copy the caller waits for: a prefix load (the
// request in Slot of instance Inst has its prefix on the GPU), with
// Offload the copy of a handoff's pinned KV to host (Tag as given to
// Offload), or with Swap a swap-out (Out) or swap-in of the preempted
// request in Slot.
type Done struct {
	Inst    int
	Slot    int32
	Offload bool
	Tag     int64
	Swap    bool
	Out     bool
}

// Stats are the counters of one tier summed over nodes.
type Stats struct {
	HitBlocks    int64 // blocks loaded from the tier for prefix hits
	HitTokens    int64
	Loads        int64 // load operations
	LoadNs       int64 // summed duration of the loads
	BytesRead    int64
	BytesWritten int64
	Stored       int64 // chunks written
	Evicted      int64
	Dropped      int64 // stores refused (tier full of chunks in use)
	Occupied     int64 // chunks held now
	Capacity     int64 // chunks
}

// Hierarchy is the host and disk tiers of every node, with the copies
// between them and the GPUs timed on a max-min fair transfer network
// (package link). It is a deterministic state machine driven like
// link.Network: the caller starts work (Load, Store), asks NextEvent for
// the next time it must Advance, and Advance returns the finished loads.
type Hierarchy struct {
	cfg        Config
	blkPerChk  int
	chunkBytes int64
	net        *link.Network
	nodes      []nodeTiers
	pcie       [][]link.EndpointID // per instance, one per GPU
	ops        []op
	freeOps    []int32
	stats      [3]Stats
	done       []link.Completion
	loaded     []Done
	handoff    []int64           // bytes of handoff KV offloaded to each node's host memory, held now
	handoffMax []int64           // the most bytes of handoff KV each node held at once
	bufDropped int64             // chunks not stored for want of write-buffer room
	from, to   []link.EndpointID // scratch
}

// New builds the tiers of cfg, all empty.
func New(cfg Config) (*Hierarchy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kvtier: %w", err)
	}
	h := &Hierarchy{cfg: cfg, blkPerChk: cfg.ChunkTokens / cfg.BlockSize, net: link.New()}
	h.chunkBytes = int64(h.blkPerChk) * cfg.BlockBytes
	for i, n := range cfg.Nodes {
		var nt nodeTiers
		specs := [3]*Spec{Host: &cfg.Nodes[i].Host, Disk: n.Disk}
		for t := Host; t <= Disk; t++ {
			sp := specs[t]
			if sp == nil {
				continue
			}
			chunks := sp.CapacityBytes / h.chunkBytes
			if chunks <= 0 {
				return nil, fmt.Errorf("kvtier: node %d %s tier of %d bytes holds no chunk of %d bytes; raise its capacity or lower kv_tiers.chunk_tokens", i, TierName(t), sp.CapacityBytes, h.chunkBytes)
			}
			tier, err := NewTier(int(min(chunks, 1<<30)))
			if err != nil {
				return nil, fmt.Errorf("node %d %s tier: %w", i, TierName(t), err)
			}
			nt.tiers[t] = tier
			if nt.read[t], err = h.net.AddEndpoint(sp.ReadBW, sp.LatencyNs); err == nil {
				nt.write[t], err = h.net.AddEndpoint(sp.WriteBW, sp.LatencyNs)
			}
			if err != nil {
				return nil, fmt.Errorf("kvtier: node %d %s tier: %w", i, TierName(t), err)
			}
		}
		h.nodes = append(h.nodes, nt)
	}
	h.handoff = make([]int64, len(cfg.Nodes))
	h.handoffMax = make([]int64, len(cfg.Nodes))
	for _, in := range cfg.Instances {
		n := cfg.Nodes[in.Node]
		eps := make([]link.EndpointID, in.GPUs)
		for g := range eps {
			var err error
			if eps[g], err = h.net.AddEndpoint(n.PCIeBW, n.PCIeLatencyNs); err != nil {
				return nil, fmt.Errorf("kvtier: node %d PCIe link: %w", in.Node, err)
			}
		}
		h.pcie = append(h.pcie, eps)
	}
	return h, nil
}

// ChunkBlocks is the number of GPU blocks in one chunk.
func (h *Hierarchy) ChunkBlocks() int { return h.blkPerChk }

// Tier returns node n's tier t (nil when absent), for observation.
func (h *Hierarchy) Tier(n, t int) *Tier { return h.nodes[n].tiers[t] }

// Stats returns the counters of tier t (Host or Disk) over all nodes.
func (h *Hierarchy) Stats(t int) Stats {
	s := h.stats[t]
	for _, n := range h.nodes {
		if tr := n.tiers[t]; tr != nil {
			s.Occupied += int64(tr.Occupied())
			s.Capacity += int64(tr.Capacity())
			s.Evicted += tr.Evictions()
			s.Dropped += tr.Dropped()
		}
	}
	if t == Host {
		s.Dropped += h.bufDropped
	}
	return s
}

// Occupied returns the chunks held in tier t of node n (0 without one).
func (h *Hierarchy) Occupied(n, t int) int {
	if tr := h.nodes[n].tiers[t]; tr != nil {
		return tr.Occupied()
	}
	return 0
}

// Nodes is the number of nodes with tiers.
func (h *Hierarchy) Nodes() int { return len(h.nodes) }

// BlockBytes is the KV size of one block of one instance.
func (h *Hierarchy) BlockBytes() int64 { return h.cfg.BlockBytes }

// NodeOf returns the node of instance inst.
func (h *Hierarchy) NodeOf(inst int) int { return h.cfg.Instances[inst].Node }

// key is the chunk key of chunk c: the chained hash of its last block.
func (h *Hierarchy) key(hashes []uint64, c int) uint64 {
	return hashes[(c+1)*h.blkPerChk-1]
}

// Lookup returns how far a lower tier of instance inst's node extends a
// prefix whose first from blocks the GPU holds: the end block (from when
// nothing is found) and the tier. hashes are the chained block hashes of
// the request (at least max of them); only whole chunks within the first
// max blocks count, all from one tier (host before disk). With CostBased,
// a hit whose load would take longer than prefilling it is reported as
// none. It changes nothing.
func (h *Hierarchy) Lookup(inst int, hashes []uint64, from, max int) (end, tier int) {
	end, tier = h.find(inst, hashes, from, max)
	if end > from && h.cfg.LoadPolicy == CostBased && h.loadNs(inst, tier, end-from) > h.prefillNs(inst, end-from) {
		return from, GPU
	}
	return end, tier
}

func (h *Hierarchy) find(inst int, hashes []uint64, from, max int) (int, int) {
	nt := &h.nodes[h.cfg.Instances[inst].Node]
	max = min(max, len(hashes))
	c0 := from / h.blkPerChk
	for t := Host; t <= Disk; t++ {
		tr := nt.tiers[t]
		if tr == nil {
			continue
		}
		c := c0
		for (c+1)*h.blkPerChk <= max && tr.Readable(h.key(hashes, c)) {
			c++
		}
		if end := c * h.blkPerChk; end > from {
			return end, t
		}
	}
	return from, GPU
}

// Weight is what reusing a prefix token held in tier t saves for
// instance inst, relative to one held on its GPU (1): 1 - (time to load
// a chunk on idle links) / (time to prefill it), at least 0. Routers
// weigh lower-tier prefix tokens by it.
func (h *Hierarchy) Weight(inst, t int) float64 {
	if t == GPU {
		return 1
	}
	if t == Disk && h.cfg.Nodes[h.cfg.Instances[inst].Node].Disk == nil {
		return 0
	}
	p := h.prefillNs(inst, h.blkPerChk)
	if math.IsInf(p, 1) {
		return 1
	}
	return math.Max(0, 1-h.loadNs(inst, t, h.blkPerChk)/p)
}

// loadNs is the time to load n blocks from tier t on idle links: the
// slowest latency plus the bytes over the narrowest bandwidth.
func (h *Hierarchy) loadNs(inst, t, n int) float64 {
	in := h.cfg.Instances[inst]
	nd := h.cfg.Nodes[in.Node]
	sp := nd.Host
	if t == Disk {
		sp = *nd.Disk
	}
	perGPU := float64(int64(n)*h.cfg.BlockBytes) / float64(in.GPUs)
	bw := math.Min(nd.PCIeBW, sp.ReadBW/float64(in.GPUs))
	return float64(max(sp.LatencyNs, nd.PCIeLatencyNs)) + perGPU/bw*1e9
}

// prefillNs is the time to prefill n blocks' tokens at the instance's
// prefill throughput (+Inf when unknown: then loading always wins).
func (h *Hierarchy) prefillNs(inst, n int) float64 {
	r := h.cfg.Instances[inst].PrefillTokensPerSec
	if !(r > 0) {
		return math.Inf(1)
	}
	return float64(n*h.cfg.BlockSize) / r * 1e9
}

// Load starts copying blocks [from, end) of a prefix found by Lookup in
// tier t to the GPUs of instance inst, for the request in slot; the
// chunks read stay unevictable until the copy ends. Advance reports the
// end. It returns an error when the chunks are no longer readable (a
// caller bug: Lookup and Load must be called at the same instant).
func (h *Hierarchy) Load(inst int, slot int32, hashes []uint64, from, end, t int, now int64) error {
	in := h.cfg.Instances[inst]
	nt := &h.nodes[in.Node]
	tr := nt.tiers[t]
	id := h.newOp()
	o := &h.ops[id]
	o.kind, o.tier, o.inst, o.slot, o.node, o.start = opLoad, int8(t), int32(inst), slot, int32(in.Node), now
	for c := from / h.blkPerChk; c < end/h.blkPerChk; c++ {
		sid, ok := tr.BeginRead(h.key(hashes, c))
		if !ok {
			if err := h.endReads(o); err != nil {
				return err
			}
			h.freeOp(id)
			return fmt.Errorf("kvtier: instance %d: chunk %d of a prefix found in the %s tier is not readable", inst, c, TierName(t))
		}
		o.ids = append(o.ids, sid)
	}
	o.bytes = int64(end-from) * h.cfg.BlockBytes
	st := &h.stats[t]
	st.HitBlocks += int64(end - from)
	st.HitTokens += int64((end - from) * h.cfg.BlockSize)
	st.Loads++
	st.BytesRead += o.bytes
	h.from, h.to = h.from[:0], h.to[:0]
	for _, ep := range h.pcie[inst] {
		h.from = append(h.from, nt.read[t])
		h.to = append(h.to, ep)
	}
	if _, err := h.net.StartParallel(now, h.from, h.to, ceilDiv(o.bytes, int64(in.GPUs)), int64(id)); err != nil {
		return fmt.Errorf("kvtier: load: %w", err)
	}
	return nil
}

// Store offers blocks [from, to) of a request on instance inst, just
// computed and full, to its node's host tier. Only whole chunks are
// stored; with SaveDecodeCache off, only chunks within the first
// promptBlocks blocks (the prompt's full blocks). The copy is
// write-behind: it does not delay the engine; the chunks become readable
// when it ends (and are then copied on to the disk tier, if any).
func (h *Hierarchy) Store(inst int, hashes []uint64, from, to, promptBlocks int, now int64) error {
	if !h.cfg.SaveDecodeCache {
		to = min(to, promptBlocks)
	}
	to = min(to, len(hashes))
	k := h.blkPerChk
	// Chunks whose last block is in [from, to).
	c0, c1 := from/k, to/k
	if c0 >= c1 {
		return nil
	}
	in := h.cfg.Instances[inst]
	nt := &h.nodes[in.Node]
	tr := nt.tiers[Host]
	id := int32(-1)
	room := int64(-1) // chunks the write buffer can still take; -1: unbounded
	if h.cfg.WriteBufferBytes > 0 {
		room = (h.cfg.WriteBufferBytes - nt.buffered) / h.chunkBytes
	}
	for c := c0; c < c1; c++ {
		if room == 0 {
			h.bufDropped++
			continue
		}
		sid, ok := tr.BeginWrite(h.key(hashes, c))
		if !ok {
			continue
		}
		if id < 0 {
			id = h.newOp()
		}
		h.ops[id].ids = append(h.ops[id].ids, sid)
		if room > 0 {
			room--
		}
	}
	if id < 0 {
		return nil
	}
	o := &h.ops[id]
	o.kind, o.tier, o.inst, o.slot, o.node, o.start = opStore, Host, int32(inst), -1, int32(in.Node), now
	o.bytes = int64(len(o.ids)) * h.chunkBytes
	nt.buffered += o.bytes
	h.stats[Host].BytesWritten += o.bytes
	h.stats[Host].Stored += int64(len(o.ids))
	h.from, h.to = h.from[:0], h.to[:0]
	for _, ep := range h.pcie[inst] {
		h.from = append(h.from, ep)
		h.to = append(h.to, nt.write[Host])
	}
	if _, err := h.net.StartParallel(now, h.from, h.to, ceilDiv(o.bytes, int64(in.GPUs)), int64(id)); err != nil {
		return fmt.Errorf("kvtier: store: %w", err)
	}
	return nil
}

// spill copies chunks just stored in node n's host tier on to its disk.
func (h *Hierarchy) spill(n int32, hashes []uint64, now int64) error {
	nt := &h.nodes[n]
	disk := nt.tiers[Disk]
	id := int32(-1)
	for _, key := range hashes {
		sid, ok := disk.BeginWrite(key)
		if !ok {
			continue
		}
		if id < 0 {
			id = h.newOp()
		}
		h.ops[id].ids = append(h.ops[id].ids, sid)
	}
	if id < 0 {
		return nil
	}
	o := &h.ops[id]
	o.kind, o.tier, o.inst, o.slot, o.node, o.start = opSpill, Disk, -1, -1, n, now
	o.bytes = int64(len(o.ids)) * h.chunkBytes
	h.stats[Disk].BytesWritten += o.bytes
	h.stats[Disk].Stored += int64(len(o.ids))
	if _, err := h.net.Start(now, nt.read[Host], nt.write[Disk], o.bytes, int64(id)); err != nil {
		return fmt.Errorf("kvtier: spill to disk: %w", err)
	}
	return nil
}

// NextEvent is the next time Advance must be called, if any.
func (h *Hierarchy) NextEvent() (int64, bool) { return h.net.NextEvent() }

// Advance moves the copies to now and returns the loads and offloads that
// finished, in order of completion (valid until the next Advance).
func (h *Hierarchy) Advance(now int64) ([]Done, error) {
	h.loaded = h.loaded[:0]
	var err error
	if h.done, err = h.net.Advance(now, h.done[:0]); err != nil {
		return nil, fmt.Errorf("kvtier: %w", err)
	}
	var keys []uint64
	for _, c := range h.done {
		id := int32(c.Tag)
		o := &h.ops[id]
		nt := &h.nodes[o.node]
		tr := nt.tiers[o.tier]
		switch o.kind {
		case opLoad:
			if err := h.endReads(o); err != nil {
				return nil, err
			}
			h.stats[o.tier].LoadNs += c.At - o.start
			h.loaded = append(h.loaded, Done{Inst: int(o.inst), Slot: o.slot})
		case opOffload:
			h.loaded = append(h.loaded, Done{Inst: int(o.inst), Slot: -1, Offload: true, Tag: o.tag})
		case opSwapOut, opSwapIn:
			h.loaded = append(h.loaded, Done{Inst: int(o.inst), Slot: o.slot, Swap: true, Out: o.kind == opSwapOut})
		case opStore, opSpill:
			if o.kind == opStore {
				nt.buffered -= o.bytes
			}
			for _, sid := range o.ids {
				if err := tr.EndWrite(sid); err != nil {
					return nil, fmt.Errorf("kvtier: invariant violated: %w", err)
				}
				if o.kind == opStore && nt.tiers[Disk] != nil {
					keys = append(keys, tr.slots[sid].hash)
				}
			}
			if len(keys) > 0 {
				// The copy on to disk starts now: the network has been
				// advanced to now, which may be after the store ended.
				if err := h.spill(o.node, keys, now); err != nil {
					return nil, err
				}
				keys = keys[:0]
			}
		}
		h.freeOp(id)
	}
	return h.loaded, nil
}

// endReads ends the reads of load o's chunks.
func (h *Hierarchy) endReads(o *op) error {
	tr := h.nodes[o.node].tiers[o.tier]
	for _, sid := range o.ids {
		if err := tr.EndRead(sid); err != nil {
			return fmt.Errorf("kvtier: invariant violated: %w", err)
		}
	}
	return nil
}

func (h *Hierarchy) newOp() int32 {
	if n := len(h.freeOps); n > 0 {
		id := h.freeOps[n-1]
		h.freeOps = h.freeOps[:n-1]
		h.ops[id].live = true
		return id
	}
	h.ops = append(h.ops, op{live: true})
	return int32(len(h.ops) - 1)
}

func (h *Hierarchy) freeOp(id int32) {
	o := &h.ops[id]
	o.live = false
	o.ids = o.ids[:0]
	h.freeOps = append(h.freeOps, id)
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
