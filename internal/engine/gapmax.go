package engine

// gapMax answers the lane's question "what is the largest gap between
// consecutive batch ends among the batches finished after batch t?" for
// any t within the last laneWindow-1 batches, in O(1) amortised per batch
// and per question. The ranges asked about are suffixes of the batch
// history (t, tick], so a gap followed by a later gap at least as large
// can never be the answer: it keeps only the batches whose gap is larger
// than every later one, oldest (largest) first, and the answer for t is
// the first of them after t. That is the maximum a scan of every gap in
// the range gives, exactly (TestGapMaxMatchesScan).
//
// The newest kept batch's gap is held in the struct itself, with the gap
// of the newest entry of the ring, allocated on first use, that holds the
// older ones: pushing a gap compares it with those two and reads the ring
// only to drop an entry or to spill the newest into it, so a step mostly
// reads and writes only the struct, which the engine keeps with its other
// per-step fields (TestEngineLayout).
type gapMax struct {
	last    int64 // the gap of the newest batch pushed (when has)
	tailGap int64 // the gap of the ring's newest entry (when n > 0)
	ring    *[laneWindow]gapEntry
	head    int16 // ring index of the oldest entry
	n       int16 // entries in the ring; their gaps strictly decrease from head, all above last
	has     bool
}

type gapEntry struct {
	tick, gap int64
}

// push records the gap of batch tick (one more than the last pushed).
func (g *gapMax) push(tick, gap int64) {
	if g.has && g.last > gap {
		g.spill(tick)
	} else {
		const mask = laneWindow - 1
		for g.n > 0 && g.tailGap <= gap {
			g.n--
			if g.n > 0 {
				g.tailGap = g.ring[(g.head+g.n-1)&mask].gap
			}
		}
	}
	g.last, g.has = gap, true
}

// spill moves the newest entry (batch tick-1's), whose gap is larger than
// that of batch tick (being pushed), to the ring's back, after dropping
// the ring's entries out of every range asked about from then on.
func (g *gapMax) spill(tick int64) {
	const mask = laneWindow - 1
	if g.ring == nil {
		g.ring = new([laneWindow]gapEntry)
	}
	for g.n > 0 && g.ring[g.head].tick <= tick-laneWindow {
		g.head = (g.head + 1) & mask
		g.n--
	}
	g.ring[(g.head+g.n)&mask] = gapEntry{tick: tick - 1, gap: g.last}
	g.n++
	g.tailGap = g.last
}

// since is the largest gap of the batches after t up to tick, the last
// pushed, -1 when there are none; t must be at least tick - laneWindow + 1.
func (g *gapMax) since(t, tick int64) int64 {
	const mask = laneWindow - 1
	for i := int16(0); i < g.n; i++ {
		if en := &g.ring[(g.head+i)&mask]; en.tick > t {
			return en.gap
		}
	}
	if g.has && tick > t {
		return g.last
	}
	return -1
}
