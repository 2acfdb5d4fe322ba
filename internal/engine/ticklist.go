package engine

// laneTick is the decode lane's record of one batch number (mod
// laneWindow): the heads of its two lists of slots, the members due for
// an explicit visit in that batch (they leave the lane before it is
// formed) and the members with named blocks whose next block that batch's
// forming allocates (lanefill.go). The counted members' block events are
// in a ring of their own (Engine.laneCounts), which every batch writes
// only a block's worth of batches ahead: in these records it wrote a line
// last touched a whole window of batches before, which with many engines
// had left the cache.
type laneTick struct {
	due, named int32 // first nodes of the lists (tickLists); 0: empty
}

// laneTick is the record of batch n.
func (e *Engine) laneTick(n int64) *laneTick { return &e.laneTicks[n&(laneWindow-1)] }

// tickLists holds the lists of slots whose heads are in the lane's batch
// records (laneTick). The lists are singly linked through one array of
// nodes with a free list, and a list is its head's index, four bytes:
// with many engines a ring of per-batch slices (24 bytes of header a
// batch, and a backing array each) left the CPU cache between visits,
// while the heads and the recently freed nodes stay in it.
type tickLists struct {
	nodes []tickNode // nodes[0] is unused
	free  int32      // first free node; 0: none
}

type tickNode struct {
	slot, next int32
}

// push adds slot to the list whose head is *h.
func (l *tickLists) push(h *int32, slot int32) {
	i := l.free
	if i != 0 {
		l.free = l.nodes[i].next
	} else {
		if len(l.nodes) == 0 {
			l.nodes = append(l.nodes, tickNode{}) // index 0 means none
		}
		i = int32(len(l.nodes))
		l.nodes = append(l.nodes, tickNode{})
	}
	l.nodes[i] = tickNode{slot: slot, next: *h}
	*h = i
}

// take empties the list whose head is *h and appends its slots to buf,
// the most recently pushed first.
func (l *tickLists) take(h *int32, buf []int32) []int32 {
	first := *h
	if first == 0 {
		return buf
	}
	*h = 0
	for i := first; ; {
		nd := &l.nodes[i]
		buf = append(buf, nd.slot)
		if nd.next == 0 {
			nd.next = l.free // the whole list joins the free list
			l.free = first
			return buf
		}
		i = nd.next
	}
}

// each calls f with every slot in the list whose head is h.
func (l *tickLists) each(h int32, f func(slot int32)) {
	for i := h; i != 0; i = l.nodes[i].next {
		f(l.nodes[i].slot)
	}
}
