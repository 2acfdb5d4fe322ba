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
type gapMax struct {
	head int
	n    int
	e    [laneWindow]gapEntry // ring; gaps strictly decreasing from head
}

type gapEntry struct {
	tick, gap int64
}

// push records the gap of batch tick (one more than the last pushed).
func (g *gapMax) push(tick, gap int64) {
	const mask = laneWindow - 1
	for g.n > 0 && g.e[g.head].tick <= tick-laneWindow {
		g.head = (g.head + 1) & mask // out of every range asked about
		g.n--
	}
	for g.n > 0 && g.e[(g.head+g.n-1)&mask].gap <= gap {
		g.n--
	}
	g.e[(g.head+g.n)&mask] = gapEntry{tick: tick, gap: gap}
	g.n++
}

// since is the largest gap of the batches after t up to the last pushed,
// -1 when there are none; t must be at least the last tick - laneWindow + 1.
func (g *gapMax) since(t int64) int64 {
	const mask = laneWindow - 1
	for i := 0; i < g.n; i++ {
		if en := &g.e[(g.head+i)&mask]; en.tick > t {
			return en.gap
		}
	}
	return -1
}
