package engine

// tickLists holds, for each batch number within the lane's window (mod
// laneWindow), a list of slots: the decode lane's registrations of
// members for a future batch (due for an explicit visit, or allocating a
// named block). The lists are singly linked through one array of nodes
// with a free list, and a batch's list is its head's index, four bytes:
// with many engines a ring of per-batch slices (24 bytes of header a
// batch, and a backing array each) left the CPU cache between visits,
// while the heads and the recently freed nodes stay in it.
type tickLists struct {
	head  [laneWindow]int32 // first node of each batch's list; 0: empty
	nodes []tickNode        // nodes[0] is unused
	free  int32             // first free node; 0: none
}

type tickNode struct {
	slot, next int32
}

// push adds slot to the list of batch n.
func (l *tickLists) push(n int64, slot int32) {
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
	h := &l.head[n&(laneWindow-1)]
	l.nodes[i] = tickNode{slot: slot, next: *h}
	*h = i
}

// empty reports whether the list of batch n is empty.
func (l *tickLists) empty(n int64) bool { return l.head[n&(laneWindow-1)] == 0 }

// take empties the list of batch n and appends its slots to buf, the
// most recently pushed first.
func (l *tickLists) take(n int64, buf []int32) []int32 {
	h := &l.head[n&(laneWindow-1)]
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

// each calls f with every slot in the list of batch n.
func (l *tickLists) each(n int64, f func(slot int32)) {
	for i := l.head[n&(laneWindow-1)]; i != 0; i = l.nodes[i].next {
		f(l.nodes[i].slot)
	}
}
