package link_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/link"
)

type ep struct {
	bw  float64
	lat int64
}

// start is one transfer: len(from) parallel flows of bytes each.
type start struct {
	at       int64
	from, to []link.EndpointID
	bytes    int64
	rateCap  float64 // bytes/s per flow; 0: uncapped
}

// capped is one flow whose rate is capped at rateCap bytes/s.
func capped(at int64, from, to link.EndpointID, bytes int64, rateCap float64) start {
	s := one(at, from, to, bytes)
	s.rateCap = rateCap
	return s
}

func one(at int64, from, to link.EndpointID, bytes int64) start {
	return start{at: at, from: []link.EndpointID{from}, to: []link.EndpointID{to}, bytes: bytes}
}

// run drives a network through starts (sorted by time) with the
// NextEvent/Advance protocol and returns each transfer's completion time,
// indexed by start.
func run(t *testing.T, eps []ep, starts []start) []int64 {
	t.Helper()
	n := link.New()
	for _, e := range eps {
		must(n.AddEndpoint(e.bw, e.lat))
	}
	got := make([]int64, len(starts))
	for i := range got {
		got[i] = -1
	}
	ids := map[link.TransferID]int{}
	var done []link.Completion
	collect := func(upto int64) {
		for {
			at, ok := n.NextEvent()
			if !ok || at > upto {
				return
			}
			done = must(n.Advance(at, done[:0]))
			for _, c := range done {
				i := ids[c.Transfer]
				if got[i] != -1 {
					t.Fatalf("transfer %d completed twice: %+v", i, c)
				}
				if c.At > at || c.At < c.Start {
					t.Fatalf("transfer %d: completion at %d, start %d, advanced to %d", i, c.At, c.Start, at)
				}
				got[i] = c.At
			}
		}
	}
	for i, s := range starts {
		collect(s.at)
		var id link.TransferID
		switch {
		case s.rateCap > 0:
			id = must(n.StartParallelCapped(s.at, s.from, s.to, s.bytes, s.rateCap, int64(i)))
		case len(s.from) == 1:
			id = must(n.Start(s.at, s.from[0], s.to[0], s.bytes, int64(i)))
		default:
			id = must(n.StartParallel(s.at, s.from, s.to, s.bytes, int64(i)))
		}
		ids[id] = i
	}
	collect(math.MaxInt64)
	if n.Active() != 0 || n.ActiveFlows() != 0 {
		t.Fatalf("after draining: Active()=%d ActiveFlows()=%d", n.Active(), n.ActiveFlows())
	}
	return got
}

const (
	gbps = 1e9  // bytes/s: 1 GB/s moves 1 byte per ns
	lat  = 1000 // ns
	mb   = 1e6  // bytes: 1e6 ns at 1 GB/s
)

func TestExactTimes(t *testing.T) {
	u := link.Unlimited
	ids := func(xs ...link.EndpointID) []link.EndpointID { return xs }
	cases := []struct {
		name   string
		eps    []ep
		starts []start
		want   []int64
	}{
		{
			name:   "a capped flow alone takes L + B/cap",
			eps:    []ep{{gbps, lat}, {gbps, lat}},
			starts: []start{capped(0, 0, 1, mb, gbps/4)},
			want:   []int64{lat + 4_000_000},
		},
		{
			name:   "a capped flow between unlimited NICs takes B/cap",
			eps:    []ep{{u, 0}, {u, 0}},
			starts: []start{capped(0, 0, 1, mb, gbps/2)},
			want:   []int64{2_000_000},
		},
		{
			// The capped flow takes 0.25 B/ns, the other the remaining
			// 0.75: 1 MB in 1,333,333.3 ns, rounded up. The capped one
			// stays at its cap throughout: 1 MB / 0.25 = 4 ms.
			name:   "a capped flow sharing a NIC leaves the rest to the other",
			eps:    []ep{{gbps, lat}, {gbps, lat}},
			starts: []start{capped(0, 0, 1, mb, gbps/4), one(0, 0, 1, mb)},
			want:   []int64{lat + 4_000_000, lat + 1_333_334},
		},
		{
			name:   "a cap above the fair share does not bind",
			eps:    []ep{{gbps, lat}, {gbps, lat}},
			starts: []start{capped(0, 0, 1, mb, 0.8*gbps), one(0, 0, 1, mb)},
			want:   []int64{lat + 2_000_000, lat + 2_000_000},
		},
		{
			// Three flows into one 1 GB/s receiver, caps 0.1 and 0.2: they
			// take their caps, the uncapped one the remaining 0.7 B/ns.
			// At L+5 ms the 0.2 flow ends; the uncapped one has moved
			// 3.5 MB and takes 0.9 B/ns for the other 3.5 MB: 3,888,889 ns.
			name:   "several caps below the fair share are all taken",
			eps:    []ep{{gbps, lat}, {gbps, lat}, {gbps, lat}, {gbps, lat}},
			starts: []start{capped(0, 0, 3, mb, 0.1*gbps), capped(0, 1, 3, mb, 0.2*gbps), one(0, 2, 3, 7*mb)},
			want:   []int64{lat + 10_000_000, lat + 5_000_000, lat + 5_000_000 + 3_888_889},
		},
		{
			name:   "one flow on idle NICs takes L + B/bw",
			eps:    []ep{{gbps, lat}, {gbps, lat}},
			starts: []start{one(0, 0, 1, mb)},
			want:   []int64{lat + 1_000_000},
		},
		{
			name:   "started later",
			eps:    []ep{{gbps, lat}, {gbps, lat}},
			starts: []start{one(7_777, 0, 1, mb)},
			want:   []int64{7_777 + lat + 1_000_000},
		},
		{
			name:   "two equal flows same sender same receiver take L + 2B/bw",
			eps:    []ep{{gbps, lat}, {gbps, lat}},
			starts: []start{one(0, 0, 1, mb), one(0, 0, 1, mb)},
			want:   []int64{lat + 2_000_000, lat + 2_000_000},
		},
		{
			name:   "two senders into one receiver share its ingress",
			eps:    []ep{{gbps, lat}, {gbps, lat}, {gbps, lat}},
			starts: []start{one(0, 0, 2, mb), one(0, 1, 2, mb)},
			want:   []int64{lat + 2_000_000, lat + 2_000_000},
		},
		{
			name:   "one sender to two receivers shares its egress",
			eps:    []ep{{gbps, lat}, {gbps, lat}, {gbps, lat}},
			starts: []start{one(0, 0, 1, mb), one(0, 0, 2, mb)},
			want:   []int64{lat + 2_000_000, lat + 2_000_000},
		},
		{
			name:   "egress and ingress are independent: A->B and B->A do not share",
			eps:    []ep{{gbps, lat}, {gbps, lat}},
			starts: []start{one(0, 0, 1, mb), one(0, 1, 0, mb)},
			want:   []int64{lat + 1_000_000, lat + 1_000_000},
		},
		{
			// Both at 0.5 B/ns until the short one ends at L+2ms having
			// moved 1 MB; the long one has 2 MB left at 1 B/ns.
			name:   "a flow finishing early frees bandwidth",
			eps:    []ep{{gbps, lat}, {gbps, lat}},
			starts: []start{one(0, 0, 1, mb), one(0, 0, 1, 3*mb)},
			want:   []int64{lat + 2_000_000, lat + 4_000_000},
		},
		{
			// Receiver 3 GB/s; sender 0 is 1 GB/s, sender 1 4 GB/s. Max-min:
			// flow 0->2 is capped by its egress at 1, flow 1->2 gets the
			// remaining 2 GB/s of the ingress (not an equal split of 1.5).
			name:   "max-min: a slow sender leaves the rest to a fast one",
			eps:    []ep{{gbps, lat}, {4 * gbps, lat}, {3 * gbps, lat}},
			starts: []start{one(0, 0, 2, 2*mb), one(0, 1, 2, 2*mb)},
			want:   []int64{lat + 2_000_000, lat + 1_000_000},
		},
		{
			// A alone at 1 B/ns from 1000 to 1_001_000 (1 MB moved, 1 MB
			// left); then both at 0.5 until A ends at 3_001_000; B has moved
			// 1 MB and moves its last 1 MB alone.
			name:   "staggered starts",
			eps:    []ep{{gbps, lat}, {gbps, lat}},
			starts: []start{one(0, 0, 1, 2*mb), one(1_000_000, 0, 1, 2*mb)},
			want:   []int64{3_001_000, 4_001_000},
		},
		{
			// Path latency is the max of the two ends. B (0->2) is in its
			// latency phase until 1_000_000 and uses no bandwidth: A moves
			// 999_000 bytes alone, then 1_001_000 at 0.5 (2_002_000 ns).
			// B moves 1_001_000 bytes by then and 999_000 alone.
			name:   "the latency phase consumes no bandwidth",
			eps:    []ep{{gbps, lat}, {gbps, lat}, {gbps, 1_000_000}},
			starts: []start{one(0, 0, 1, 2*mb), one(0, 0, 2, 2*mb)},
			want:   []int64{3_002_000, 4_001_000},
		},
		{
			name:   "zero-cost link completes instantly",
			eps:    []ep{{u, 0}, {u, 0}},
			starts: []start{one(5, 0, 1, 1<<40), one(9, 1, 0, 1)},
			want:   []int64{5, 9},
		},
		{
			name:   "zero bytes take the latency only",
			eps:    []ep{{gbps, lat}, {gbps, 3 * lat}},
			starts: []start{one(10, 0, 1, 0)},
			want:   []int64{10 + 3*lat},
		},
		{
			name:   "unlimited bandwidth with latency takes the latency",
			eps:    []ep{{u, lat}, {u, lat}},
			starts: []start{one(0, 0, 1, 1<<40)},
			want:   []int64{lat},
		},
		{
			name:   "unlimited sender, finite receiver: the receiver limits",
			eps:    []ep{{u, 0}, {2 * gbps, 0}},
			starts: []start{one(0, 0, 1, mb), one(0, 0, 1, mb)},
			want:   []int64{1_000_000, 1_000_000},
		},
		{
			name:   "rounded up to whole ns",
			eps:    []ep{{3 * gbps, 0}, {3 * gbps, 0}},
			starts: []start{one(0, 0, 1, 1_000_000_000)},
			want:   []int64{333_333_334},
		},
		{
			name:   "fractional rates land exactly on the ns",
			eps:    []ep{{12.5 * gbps, 0}, {25 * gbps, 0}, {25 * gbps, 0}},
			starts: []start{one(0, 0, 1, 5_000_000), one(0, 1, 2, 100_000_000)},
			want:   []int64{400_000, 4_000_000},
		},
		{
			name: "tp=2 transfer: parallel streams rank to rank",
			eps:  []ep{{gbps, lat}, {gbps, lat}, {gbps, lat}, {gbps, lat}},
			starts: []start{
				{at: 0, from: ids(0, 1), to: ids(2, 3), bytes: mb},
			},
			want: []int64{lat + 1_000_000},
		},
		{
			// Prefill instances {0,1} and {2,3} both send to decode {4,5}:
			// each decode rank's ingress is shared by two streams.
			name: "two tp=2 transfers into one decode instance",
			eps:  []ep{{gbps, lat}, {gbps, lat}, {gbps, lat}, {gbps, lat}, {gbps, lat}, {gbps, lat}},
			starts: []start{
				{at: 0, from: ids(0, 1), to: ids(4, 5), bytes: mb},
				{at: 0, from: ids(2, 3), to: ids(4, 5), bytes: mb},
			},
			want: []int64{lat + 2_000_000, lat + 2_000_000},
		},
		{
			// One stream of the transfer is slowed by another flow into
			// rank 1: the transfer completes with its slowest stream.
			name: "a transfer completes with its slowest stream",
			eps:  []ep{{gbps, lat}, {gbps, lat}, {gbps, lat}, {gbps, lat}, {gbps, lat}},
			starts: []start{
				{at: 0, from: ids(0, 1), to: ids(2, 3), bytes: mb},
				one(0, 4, 3, mb),
			},
			want: []int64{lat + 2_000_000, lat + 2_000_000},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := run(t, tc.eps, tc.starts)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("completion times %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOrderAndTags(t *testing.T) {
	n := link.New()
	a := must(n.AddEndpoint(gbps, 0))
	b := must(n.AddEndpoint(gbps, 0))
	// Started in reverse order of completion; two complete at the same time.
	t0 := must(n.Start(0, a, b, 3*mb, 100))
	t1 := must(n.Start(0, b, a, 1*mb, 101))
	t2 := must(n.Start(0, b, a, 1*mb, 102))
	at, ok := n.NextEvent()
	if !ok || at != 2_000_000 {
		t.Fatalf("NextEvent = %d, %v; want 2000000, true", at, ok)
	}
	// Advance past everything in one call: order by time, then ID.
	got := must(n.Advance(10_000_000, nil))
	want := []link.Completion{
		{Transfer: t1, Tag: 101, At: 2_000_000, Bytes: mb, Flows: 1},
		{Transfer: t2, Tag: 102, At: 2_000_000, Bytes: mb, Flows: 1},
		{Transfer: t0, Tag: 100, At: 3_000_000, Bytes: 3 * mb, Flows: 1},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if _, ok := n.NextEvent(); ok {
		t.Fatal("NextEvent reports an event on an idle network")
	}
	if got := must(n.Advance(20_000_000, nil)); len(got) != 0 {
		t.Fatalf("idle Advance returned %v", got)
	}
}

func TestZeroCostNextEventIsNow(t *testing.T) {
	n := link.New()
	a := must(n.AddEndpoint(link.Unlimited, 0))
	b := must(n.AddEndpoint(link.Unlimited, 0))
	must(n.Advance(42, nil))
	id := must(n.Start(42, a, b, 1<<30, 7))
	if at, ok := n.NextEvent(); !ok || at != 42 {
		t.Fatalf("NextEvent = %d, %v; want 42, true", at, ok)
	}
	got := must(n.Advance(42, nil))
	if len(got) != 1 || got[0].Transfer != id || got[0].At != 42 || got[0].Tag != 7 {
		t.Fatalf("got %+v", got)
	}
}

func TestCompletionsBufferedByStart(t *testing.T) {
	// A Start later than a due completion processes it; the completion keeps
	// its own time and is returned by the next Advance, and NextEvent never
	// reports a time before Now().
	n := link.New()
	a := must(n.AddEndpoint(gbps, 0))
	b := must(n.AddEndpoint(gbps, 0))
	first := must(n.Start(0, a, b, mb, 0))
	must(n.Start(5_000_000, a, b, mb, 1))
	if at, ok := n.NextEvent(); !ok || at != 5_000_000 {
		t.Fatalf("NextEvent = %d, %v; want 5000000, true", at, ok)
	}
	got := must(n.Advance(5_000_000, nil))
	if len(got) != 1 || got[0].Transfer != first || got[0].At != 1_000_000 {
		t.Fatalf("got %+v", got)
	}
	if n.Active() != 1 {
		t.Fatalf("Active() = %d, want 1", n.Active())
	}
}

func TestUtilisation(t *testing.T) {
	n := link.New()
	s0 := must(n.AddEndpoint(gbps, 0))
	s1 := must(n.AddEndpoint(4*gbps, 0))
	r := must(n.AddEndpoint(3*gbps, lat))
	check := func(ep link.EndpointID, eg, in float64) {
		t.Helper()
		ge, gi := util(n, ep)
		if math.Abs(ge-eg) > 1e-12 || math.Abs(gi-in) > 1e-12 {
			t.Fatalf("Utilisation(%d) = %v, %v; want %v, %v", ep, ge, gi, eg, in)
		}
	}
	must(n.Start(0, s0, r, 2*mb, 0))
	must(n.Start(0, s1, r, 2*mb, 1))
	check(s0, 0, 0) // latency phase: nothing in use yet
	check(r, 0, 0)
	must(n.Advance(lat, nil))
	check(s0, 1, 0)
	check(s1, 0.5, 0)
	check(r, 0, 1)
	must(n.Advance(lat+1_000_000, nil)) // s1's flow is done
	check(s0, 1, 0)
	check(s1, 0, 0)
	check(r, 0, 1.0/3)
	must(n.Advance(lat+2_000_000, nil))
	check(s0, 0, 0)
	check(r, 0, 0)

	u := link.New()
	x := must(u.AddEndpoint(link.Unlimited, 0))
	y := must(u.AddEndpoint(gbps, 0))
	must(u.Start(0, x, y, mb, 0))
	if eg, in := util(u, x); eg != 0 || in != 0 {
		t.Fatalf("unlimited endpoint utilisation %v, %v; want 0, 0", eg, in)
	}
	if _, in := util(u, y); in != 1 {
		t.Fatalf("receiver ingress utilisation %v; want 1", in)
	}
}

// TestInvalidInput: every call with invalid arguments returns an error
// wrapping ErrInvalid, naming what was wrong, and changes nothing.
func TestInvalidInput(t *testing.T) {
	n := link.New()
	a := must(n.AddEndpoint(gbps, 0))
	must(n.Advance(10, nil))
	for _, tc := range []struct {
		name, want string
		call       func() error
	}{
		{"zero bandwidth", "bandwidth must be > 0", func() error { _, err := n.AddEndpoint(0, 0); return err }},
		{"NaN bandwidth", "bandwidth must be > 0", func() error { _, err := n.AddEndpoint(math.NaN(), 0); return err }},
		{"negative latency", "latency must be >= 0", func() error { _, err := n.AddEndpoint(1, -1); return err }},
		{"unknown sender", "unknown endpoint 5", func() error { _, err := n.Start(10, 5, a, 1, 0); return err }},
		{"unknown receiver", "unknown endpoint -1", func() error { _, err := n.Start(10, a, -1, 1, 0); return err }},
		{"negative bytes", "negative transfer size", func() error { _, err := n.Start(10, a, a, -1, 0); return err }},
		{"mismatched parallel", "equal, non-zero numbers", func() error {
			_, err := n.StartParallel(10, []link.EndpointID{a}, nil, 1, 0)
			return err
		}},
		{"no parallel flows", "equal, non-zero numbers", func() error { _, err := n.StartParallel(10, nil, nil, 1, 0); return err }},
		{"unknown parallel endpoint", "unknown endpoint 7", func() error {
			_, err := n.StartParallel(10, []link.EndpointID{a}, []link.EndpointID{7}, 1, 0)
			return err
		}},
		{"parallel size overflow", "overflows int64", func() error {
			_, err := n.StartParallel(10, []link.EndpointID{a, a}, []link.EndpointID{a, a}, math.MaxInt64/2+1, 0)
			return err
		}},
		{"zero rate cap", "rate cap must be > 0", func() error {
			_, err := n.StartParallelCapped(10, []link.EndpointID{a}, []link.EndpointID{a}, 1, 0, 0)
			return err
		}},
		{"NaN rate cap", "rate cap must be > 0", func() error {
			_, err := n.StartParallelCapped(10, []link.EndpointID{a}, []link.EndpointID{a}, 1, math.NaN(), 0)
			return err
		}},
		{"time backwards (Advance)", "time went backwards: 9 after 10", func() error { _, err := n.Advance(9, nil); return err }},
		{"time backwards (Start)", "time went backwards: 9 after 10", func() error { _, err := n.Start(9, a, a, 1, 0); return err }},
		{"unknown endpoint (Utilisation)", "unknown endpoint 3", func() error { _, _, err := n.Utilisation(3); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, link.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want one wrapping link.ErrInvalid containing %q", err, tc.want)
			}
			if n.Endpoints() != 1 || n.Now() != 10 || n.Active() != 0 || n.ActiveFlows() != 0 {
				t.Errorf("refused call changed the network: %d endpoints, now %d, %d transfers, %d flows", n.Endpoints(), n.Now(), n.Active(), n.ActiveFlows())
			}
		})
	}
}

// must returns v, panicking on err (a call the test expects to succeed).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// util is n.Utilisation of an endpoint the test knows exists.
func util(n *link.Network, ep link.EndpointID) (egress, ingress float64) {
	return must2(n.Utilisation(ep))
}

func must2(a, b float64, err error) (float64, float64) {
	if err != nil {
		panic(err)
	}
	return a, b
}

func TestAdvanceDoesNotAllocate(t *testing.T) {
	n := link.New()
	var eps []link.EndpointID
	for range 8 {
		eps = append(eps, must(n.AddEndpoint(gbps, lat)))
	}
	done := make([]link.Completion, 0, 64)
	now := int64(0)
	// Warm up the pools.
	for i := range 32 {
		must(n.Start(now, eps[i%8], eps[(i*3+1)%8], int64(1000+i*97), int64(i)))
	}
	for n.Active() > 0 {
		at, _ := n.NextEvent()
		now = at
		done = must(n.Advance(now, done[:0]))
	}
	allocs := testing.AllocsPerRun(20, func() {
		for i := range 32 {
			must(n.Start(now, eps[i%8], eps[(i*3+1)%8], int64(1000+i*97), int64(i)))
		}
		for n.Active() > 0 {
			at, _ := n.NextEvent()
			now = at
			done = must(n.Advance(now, done[:0]))
		}
	})
	if allocs > 0 {
		t.Fatalf("steady state allocates %v times per run", allocs)
	}
}

func TestSaturatedTimes(t *testing.T) {
	// A transfer too slow to finish within int64 ns saturates at
	// math.MaxInt64 instead of overflowing, and is still reported.
	n := link.New()
	a := must(n.AddEndpoint(1, 0))
	b := must(n.AddEndpoint(1, math.MaxInt64-10))
	id := must(n.Start(100, a, b, math.MaxInt64, 3))
	at, ok := n.NextEvent()
	if !ok || at != math.MaxInt64 {
		t.Fatalf("NextEvent = %d, %v; want MaxInt64, true", at, ok)
	}
	got := must(n.Advance(math.MaxInt64, nil))
	if len(got) != 1 || got[0].Transfer != id || got[0].At != math.MaxInt64 {
		t.Fatalf("got %+v", got)
	}
	if _, ok := n.NextEvent(); ok {
		t.Fatal("network not drained")
	}
}
