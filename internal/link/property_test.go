package link

import (
	"math"
	"slices"
	"testing"

	_ "github.com/servesim/servesim/internal/testseed"
	"pgregory.net/rapid"
)

type propEP struct {
	bw  float64
	lat int64
}

type propOp struct {
	gap      int64 // ns after the previous start
	from, to []EndpointID
	bytes    int64   // per flow
	rateCap  float64 // per flow, bytes/s; 0: uncapped
	spurious int64   // if > 0 and before this start, an extra Advance this long after the previous start
}

func genScenario(t *rapid.T) ([]propEP, []propOp) {
	bws := []float64{1e9, 2e9, 3e9, 12.5e9, 25e9, 7.3e8, Unlimited}
	neps := rapid.IntRange(1, 6).Draw(t, "endpoints")
	eps := make([]propEP, neps)
	for i := range eps {
		bw := rapid.SampledFrom(bws).Draw(t, "bw")
		if rapid.Bool().Draw(t, "oddbw") {
			bw = rapid.Float64Range(1e6, 1e11).Draw(t, "rawbw")
		}
		eps[i] = propEP{bw: bw, lat: rapid.SampledFrom([]int64{0, 0, 1, 1000, 5000, 1_000_000}).Draw(t, "lat")}
	}
	nops := rapid.IntRange(1, 30).Draw(t, "transfers")
	ops := make([]propOp, nops)
	epGen := rapid.Custom(func(t *rapid.T) EndpointID { return EndpointID(rapid.IntRange(0, neps-1).Draw(t, "ep")) })
	for i := range ops {
		k := 1
		if rapid.Bool().Draw(t, "parallel") {
			k = rapid.IntRange(1, 4).Draw(t, "tp")
		}
		op := propOp{
			gap:   rapid.SampledFrom([]int64{0, 0, 1, 999, 1_000_000, rapid.Int64Range(0, 5_000_000).Draw(t, "rawgap")}).Draw(t, "gap"),
			from:  rapid.SliceOfN(epGen, k, k).Draw(t, "from"),
			to:    rapid.SliceOfN(epGen, k, k).Draw(t, "to"),
			bytes: rapid.SampledFrom([]int64{0, 1, 1000, 1_000_000, rapid.Int64Range(0, 1e8).Draw(t, "rawbytes")}).Draw(t, "bytes"),
		}
		if rapid.IntRange(0, 2).Draw(t, "cappedp") == 0 {
			op.rateCap = rapid.SampledFrom([]float64{1e8, 5e8, 1e9, 4e9, rapid.Float64Range(1e6, 1e11).Draw(t, "rawcap")}).Draw(t, "cap")
		}
		if rapid.IntRange(0, 3).Draw(t, "spuriousp") == 0 {
			op.spurious = rapid.Int64Range(1, 5_000_000).Draw(t, "spurious")
		}
		ops[i] = op
	}
	return eps, ops
}

// checkInvariants verifies, after a recomputation, that rates are finite
// and positive, no resource is over-subscribed, and the allocation is
// max-min fair: every active flow has a saturated bottleneck on which no
// flow is faster.
func checkInvariants(t *rapid.T, n *Network) {
	sum := make([]float64, len(n.capacity))
	maxRate := make([]float64, len(n.capacity))
	for _, f := range n.active {
		if math.IsNaN(f.rate) || math.IsInf(f.rate, 0) || !(f.rate > 0) {
			t.Fatalf("bad rate %v", f.rate)
		}
		if f.rate > f.rateCap*(1+1e-9) {
			t.Fatalf("rate %v above the flow's cap %v", f.rate, f.rateCap)
		}
		if math.IsNaN(f.anchorRem) || f.anchorRem < 0 {
			t.Fatalf("bad remaining %v", f.anchorRem)
		}
		if f.finishAt < n.now {
			t.Fatalf("finish time %d before now %d", f.finishAt, n.now)
		}
		for _, r := range [2]int32{f.eg, f.in} {
			sum[r] += f.rate
			maxRate[r] = max(maxRate[r], f.rate)
		}
	}
	for r := range n.capacity {
		if math.Abs(sum[r]-n.used[r]) > 1e-9*max(1, sum[r]) {
			t.Fatalf("resource %d: used %v, flows sum to %v", r, n.used[r], sum[r])
		}
	}
	for i := range n.eps {
		eg, in, err := n.Utilisation(EndpointID(i))
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range []float64{eg, in} {
			if math.IsNaN(u) || u < 0 || u > 1+1e-9 {
				t.Fatalf("endpoint %d utilisation %v, %v", i, eg, in)
			}
		}
	}
	for _, f := range n.active {
		ok := f.rate >= f.rateCap*(1-1e-9) // at its cap: its own bottleneck
		for _, r := range [2]int32{f.eg, f.in} {
			c := n.capacity[r]
			if math.IsInf(c, 1) {
				continue
			}
			if sum[r] >= c*(1-1e-9) && f.rate >= maxRate[r]*(1-1e-9) {
				ok = true
			}
		}
		if !ok {
			t.Fatalf("flow %d->%d at rate %v has no bottleneck (egress %v/%v, ingress %v/%v)",
				f.eg/2, f.in/2, f.rate, sum[f.eg], n.capacity[f.eg], sum[f.in], n.capacity[f.in])
		}
	}
}

// simulate drives a network through ops and returns all completions.
func simulate(t *rapid.T, eps []propEP, ops []propOp, spurious, check bool) []Completion {
	return simulateLog(t, eps, ops, spurious, check, false, nil)
}

// simulateLog is simulate on a network whose every recomputation goes
// through progressive filling when filling is set, appending every active
// flow's rate and its resources' use to *log after each recomputation
// when log is not nil.
func simulateLog(t *rapid.T, eps []propEP, ops []propOp, spurious, check, filling bool, log *[]float64) []Completion {
	n := New()
	n.noDisjoint = filling
	for _, e := range eps {
		must(n.AddEndpoint(e.bw, e.lat))
	}
	if log != nil {
		n.onRecompute = func() {
			for _, f := range n.active {
				*log = append(*log, f.rate, n.used[f.eg], n.used[f.in], float64(f.finishAt))
			}
			if check {
				checkInvariants(t, n)
			}
		}
	} else if check {
		n.onRecompute = func() { checkInvariants(t, n) }
		n.onFlowDone = func(f *flow, residual float64) {
			if math.IsNaN(residual) || residual > doneEpsilon+1e-9*f.bytes {
				t.Fatalf("flow of %v bytes completed with %v bytes left", f.bytes, residual)
			}
		}
	}
	var all []Completion
	var last int64
	advance := func(now int64) {
		if now < last {
			t.Fatalf("time went backwards: %d after %d", now, last)
		}
		last = now
		before := len(all)
		all = must(n.Advance(now, all))
		for i, c := range all[before:] {
			if c.At > now {
				t.Fatalf("completion at %d returned by Advance(%d)", c.At, now)
			}
			if i > 0 {
				p := all[before+i-1]
				if c.At < p.At || (c.At == p.At && c.Transfer <= p.Transfer) {
					t.Fatalf("Advance order: %+v after %+v", c, p)
				}
			}
		}
	}
	upto := func(limit int64) {
		for range 1_000_000 {
			at, ok := n.NextEvent()
			if !ok || at > limit {
				return
			}
			if at < n.Now() {
				t.Fatalf("NextEvent %d before Now %d", at, n.Now())
			}
			advance(at)
		}
		t.Fatalf("network does not settle")
	}
	now := int64(0)
	for i, op := range ops {
		next := now + op.gap
		if s := now + op.spurious; spurious && op.spurious > 0 && s <= next {
			upto(s)
			advance(s)
		}
		now = next
		upto(now)
		switch {
		case op.rateCap > 0:
			must(n.StartParallelCapped(now, op.from, op.to, op.bytes, op.rateCap, int64(i)))
		case len(op.from) == 1:
			must(n.Start(now, op.from[0], op.to[0], op.bytes, int64(i)))
		default:
			must(n.StartParallel(now, op.from, op.to, op.bytes, int64(i)))
		}
	}
	upto(math.MaxInt64)
	if n.Active() != 0 || n.ActiveFlows() != 0 {
		t.Fatalf("drained network has %d transfers, %d flows", n.Active(), n.ActiveFlows())
	}
	return all
}

func TestPropertyFlows(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		eps, ops := genScenario(t)
		all := simulate(t, eps, ops, true, true)

		if len(all) != len(ops) {
			t.Fatalf("%d completions for %d transfers", len(all), len(ops))
		}
		seen := make([]bool, len(ops))
		var totalIn, totalOut int64
		for i, c := range all {
			if c.Tag < 0 || int(c.Tag) >= len(ops) || seen[c.Tag] {
				t.Fatalf("bad or repeated completion %+v", c)
			}
			seen[c.Tag] = true
			if i > 0 && c.At < all[i-1].At {
				t.Fatalf("completions out of time order: %+v after %+v", c, all[i-1])
			}
			op := ops[c.Tag]
			if c.Flows != len(op.from) || c.Bytes != op.bytes*int64(len(op.from)) {
				t.Fatalf("completion %+v for op %+v", c, op)
			}
			totalOut += c.Bytes
			// Lower bound: latency plus the bytes at the fastest rate the
			// path allows, for the slowest flow of the transfer.
			var lower float64
			for k := range op.from {
				a, b := eps[op.from[k]], eps[op.to[k]]
				bw := min(a.bw, b.bw)
				if op.rateCap > 0 {
					bw = min(bw, op.rateCap)
				}
				l := float64(max(a.lat, b.lat)) + float64(op.bytes)*1e9/bw
				lower = max(lower, l)
			}
			if float64(c.At-c.Start) < lower*(1-1e-12)-1e-6 {
				t.Fatalf("completion %+v faster than possible (%v ns)", c, lower)
			}
		}
		for _, op := range ops {
			totalIn += op.bytes * int64(len(op.from))
		}
		if totalIn != totalOut {
			t.Fatalf("bytes in %d, out %d", totalIn, totalOut)
		}

		// Determinism, and spurious Advance calls change nothing.
		again := simulate(t, eps, ops, false, false)
		if !slices.Equal(all, again) {
			t.Fatalf("results depend on spurious Advance calls:\n%+v\n%+v", all, again)
		}
	})
}

// must returns v, panicking on err (a call the test expects to succeed).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestDisjointMatchesFilling runs random networks with the disjoint-flow
// shortcut (rateDisjoint) and with progressive filling only, and requires
// the same rates, resource use and completion times after every
// recomputation and the same completions.
func TestDisjointMatchesFilling(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		eps, ops := genScenario(t)
		var fast, ref []float64
		a := simulateLog(t, eps, ops, true, true, false, &fast)
		b := simulateLog(t, eps, ops, true, true, true, &ref)
		if !slices.Equal(a, b) {
			t.Fatalf("completions %+v, with filling only %+v", a, b)
		}
		if len(fast) != len(ref) {
			t.Fatalf("%d logged values, with filling only %d", len(fast), len(ref))
		}
		for i := range fast {
			if math.Float64bits(fast[i]) != math.Float64bits(ref[i]) {
				t.Fatalf("value %d of the recomputation log: %v, with filling only %v", i, fast[i], ref[i])
			}
		}
	})
}
