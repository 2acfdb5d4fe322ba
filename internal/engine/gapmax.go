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
// The newest kept batch is held in the struct itself and the older ones
// in a ring allocated on first use: while the gaps do not shrink (a
// steady decode run, whose contexts grow) each batch replaces the newest
// and the ring is not touched, so a step reads and writes only the
// struct, which the engine keeps with its other per-step fields.
type gapMax struct {
	last gapEntry // the newest batch's gap (when has)
	ring *[laneWindow]gapEntry
	head int16 // ring index of the oldest entry
	n    int16 // entries in the ring; their gaps strictly decrease from head, all above last's
	has  bool
}

type gapEntry struct {
	tick, gap int64
}

// push records the gap of batch tick (one more than the last pushed).
func (g *gapMax) push(tick, gap int64) {
	if g.has && g.last.gap > gap {
		g.spill(tick)
	} else if g.n > 0 {
		const mask = laneWindow - 1
		for g.n > 0 && g.ring[(g.head+g.n-1)&mask].gap <= gap {
			g.n--
		}
	}
	g.last, g.has = gapEntry{tick: tick, gap: gap}, true
}

// spill moves the newest entry, whose gap is larger than that of batch
// tick (being pushed), to the ring's back, after dropping the ring's
// entries out of every range asked about from then on.
func (g *gapMax) spill(tick int64) {
	const mask = laneWindow - 1
	if g.ring == nil {
		g.ring = new([laneWindow]gapEntry)
	}
	for g.n > 0 && g.ring[g.head].tick <= tick-laneWindow {
		g.head = (g.head + 1) & mask
		g.n--
	}
	g.ring[(g.head+g.n)&mask] = g.last
	g.n++
}

// since is the largest gap of the batches after t up to the last pushed,
// -1 when there are none; t must be at least the last tick - laneWindow + 1.
func (g *gapMax) since(t int64) int64 {
	const mask = laneWindow - 1
	for i := int16(0); i < g.n; i++ {
		if en := &g.ring[(g.head+i)&mask]; en.tick > t {
			return en.gap
		}
	}
	if g.has && g.last.tick > t {
		return g.last.gap
	}
	return -1
}
