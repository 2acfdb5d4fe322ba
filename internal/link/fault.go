package link

// Cancel removes the flows of every transfer with tag at time now, as a
// transfer whose sender or receiver failed ends: it is never reported as
// completed, and the bandwidth it held goes to the other flows from now
// on. It reports whether some transfer was removed. A transfer that
// completed at or before now but was not collected yet is removed too.
// A time before Now() is an error.
func (n *Network) Cancel(now int64, tag int64) (bool, error) {
	if err := n.advanceTo(now); err != nil {
		return false, err
	}
	found := false
	k := 0
	for _, c := range n.ready {
		if c.Tag == tag {
			found = true
			n.live--
			continue
		}
		n.ready[k] = c
		k++
	}
	n.ready = n.ready[:k]
	drop := func(fs []*flow) []*flow {
		k := 0
		for _, f := range fs {
			if f.tr.tag != tag {
				fs[k] = f
				k++
				continue
			}
			found = true
			tr := f.tr
			tr.pending--
			if tr.pending == 0 {
				n.live--
				*tr = transfer{}
				n.free = append(n.free, tr)
			}
			*f = flow{}
			n.freeF = append(n.freeF, f)
		}
		clear(fs[k:])
		return fs[:k]
	}
	n.pending = drop(n.pending)
	n.active = drop(n.active)
	if found {
		if err := n.reschedule(now); err != nil {
			return found, err
		}
	}
	return found, nil
}

// SetBandwidth changes endpoint ep's bandwidth (both directions) to bw
// bytes per second (> 0) from time now on, as a degraded or restored link
// does; the flows in flight are re-shared at once. An unknown endpoint,
// a bandwidth not > 0 or a time before Now() is an error.
func (n *Network) SetBandwidth(now int64, ep EndpointID, bw float64) error {
	if err := n.checkEndpoint(ep); err != nil {
		return err
	}
	if !(bw > 0) {
		return invalid("endpoint bandwidth must be > 0, got %v", bw)
	}
	if err := n.advanceTo(now); err != nil {
		return err
	}
	n.eps[ep].bw = bw
	n.capacity[2*ep], n.capacity[2*ep+1] = bw, bw
	return n.reschedule(now)
}

// Bandwidth returns endpoint ep's current bandwidth, bytes per second;
// an unknown endpoint is an error.
func (n *Network) Bandwidth(ep EndpointID) (float64, error) {
	if err := n.checkEndpoint(ep); err != nil {
		return 0, err
	}
	return n.eps[ep].bw, nil
}

// reschedule recomputes the rates at now and the next event time after
// the set of flows or the capacities changed.
func (n *Network) reschedule(now int64) error {
	if err := n.recompute(now); err != nil {
		return err
	}
	next := never
	for _, f := range n.pending {
		next = min(next, f.activeAt)
	}
	for _, f := range n.active {
		next = min(next, f.finishAt)
	}
	n.nextAt = next
	return nil
}
