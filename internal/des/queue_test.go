package des

import (
	"slices"
	"testing"

	_ "github.com/servesim/servesim/internal/testseed"
	"pgregory.net/rapid"
)

func TestQueueOrdersByTimeThenSeq(t *testing.T) {
	var q Queue
	for i, at := range []Time{30, 10, 20, 10, 30} {
		if err := q.Push(Event{At: at, Arg: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []int64
	for q.Len() > 0 {
		e, _ := q.Pop()
		got = append(got, e.Arg)
	}
	want := []int64{1, 3, 2, 0, 4}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pop order %v, want %v", got, want)
		}
	}
}

func TestQueueRejectsPast(t *testing.T) {
	var q Queue
	if err := q.Push(Event{At: 5}); err != nil {
		t.Fatal(err)
	}
	q.Pop()
	if err := q.Push(Event{At: 4}); err == nil {
		t.Fatal("pushing an event into the past must fail")
	}
}

func TestQueueMonotoneProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var q Queue
		ops := rapid.SliceOfN(rapid.Int64Range(0, 1000), 1, 200).Draw(t, "delays")
		last := Time(-1)
		for i, d := range ops {
			if err := q.Push(Event{At: q.Now() + d, Arg: int64(i)}); err != nil {
				t.Fatal(err)
			}
			if i%3 == 0 {
				e, _ := q.Pop()
				if e.At < last {
					t.Fatalf("time went backwards: %d after %d", e.At, last)
				}
				last = e.At
			}
		}
		for q.Len() > 0 {
			e, _ := q.Pop()
			if e.At < last {
				t.Fatalf("time went backwards: %d after %d", e.At, last)
			}
			last = e.At
		}
	})
}

func TestStreamsIndependentAndDeterministic(t *testing.T) {
	a1, a2 := Stream(7, "arrivals"), Stream(7, "arrivals")
	b := Stream(7, "lengths")
	same, diff := true, false
	for i := 0; i < 10; i++ {
		x, y, z := a1.Uint64(), a2.Uint64(), b.Uint64()
		same = same && x == y
		diff = diff || x != z
	}
	if !same || !diff {
		t.Fatalf("streams: same seed+purpose equal=%v, different purposes differ=%v", same, diff)
	}
}

// TestQueueMatchesSortedModel: under any interleaving of pushes, peeks and
// pops, events come out exactly in (At, Seq) order, each once: the model
// is a slice kept sorted by time, then by order of scheduling.
func TestQueueMatchesSortedModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var q Queue
		var model []Event // pending, sorted by (At, Seq)
		n := rapid.IntRange(1, 300).Draw(t, "ops")
		next := int64(0)
		for range n {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1: // push, often at the same time as others
				e := Event{At: q.Now() + rapid.Int64Range(0, 20).Draw(t, "delay"), Arg: next}
				next++
				if err := q.Push(e); err != nil {
					t.Fatal(err)
				}
				k := len(model)
				for k > 0 && model[k-1].At > e.At {
					k--
				}
				model = append(model[:k], append([]Event{e}, model[k:]...)...)
			case 2:
				got, ok := q.Peek()
				if ok != (len(model) > 0) || ok && got.Arg != model[0].Arg {
					t.Fatalf("peek %v %v, want the event of arg %v", got, ok, model)
				}
			case 3:
				got, ok := q.Pop()
				if ok != (len(model) > 0) {
					t.Fatalf("pop ok=%v with %d pending", ok, len(model))
				}
				if ok {
					if got.Arg != model[0].Arg || got.At != model[0].At {
						t.Fatalf("popped (at %d, arg %d), want (at %d, arg %d)", got.At, got.Arg, model[0].At, model[0].Arg)
					}
					model = model[1:]
				}
			}
			if q.Len() != len(model) {
				t.Fatalf("Len %d, want %d", q.Len(), len(model))
			}
		}
	})
}

// TestQueueHole walks the vacant-root states a pop leaves behind: a push
// into the hole, a peek or pop that closes it with the last event, and a
// pop of the only event (no hole).
func TestQueueHole(t *testing.T) {
	type op struct {
		push bool
		at   Time
		want int64 // popped or peeked Arg (push: the Arg given)
		peek bool
		len  int // Len after the op
	}
	tests := []struct {
		name string
		ops  []op
	}{
		{"push into the hole goes first", []op{
			{push: true, at: 5, want: 0, len: 1}, {push: true, at: 7, want: 1, len: 2}, {push: true, at: 9, want: 2, len: 3},
			{want: 0, len: 2}, {push: true, at: 6, want: 3, len: 3},
			{want: 3, len: 2}, {want: 1, len: 1}, {want: 2, len: 0},
		}},
		{"push into the hole goes last", []op{
			{push: true, at: 5, want: 0, len: 1}, {push: true, at: 7, want: 1, len: 2}, {push: true, at: 9, want: 2, len: 3},
			{want: 0, len: 2}, {push: true, at: 20, want: 3, len: 3},
			{want: 1, len: 2}, {want: 2, len: 1}, {want: 3, len: 0},
		}},
		{"tie in the hole keeps scheduling order", []op{
			{push: true, at: 5, want: 0, len: 1}, {push: true, at: 7, want: 1, len: 2},
			{want: 0, len: 1}, {push: true, at: 7, want: 2, len: 2},
			{want: 1, len: 1}, {want: 2, len: 0},
		}},
		{"peek closes the hole", []op{
			{push: true, at: 5, want: 0, len: 1}, {push: true, at: 7, want: 1, len: 2}, {push: true, at: 6, want: 2, len: 3},
			{want: 0, len: 2}, {peek: true, want: 2, len: 2}, {push: true, at: 6, want: 3, len: 3},
			{want: 2, len: 2}, {want: 3, len: 1}, {want: 1, len: 0},
		}},
		{"push into the hole beside one event goes first", []op{
			{push: true, at: 5, want: 0, len: 1}, {push: true, at: 7, want: 1, len: 2},
			{want: 0, len: 1}, {push: true, at: 6, want: 2, len: 2},
			{want: 2, len: 1}, {want: 1, len: 0},
		}},
		{"push into the hole beside one event goes last, a tie too", []op{
			{push: true, at: 5, want: 0, len: 1}, {push: true, at: 7, want: 1, len: 2},
			{want: 0, len: 1}, {push: true, at: 7, want: 2, len: 2},
			{want: 1, len: 1}, {push: true, at: 9, want: 3, len: 2},
			{want: 2, len: 1}, {want: 3, len: 0},
		}},
		{"the only event leaves no hole", []op{
			{push: true, at: 5, want: 0, len: 1}, {want: 0, len: 0}, {push: true, at: 8, want: 1, len: 1}, {want: 1, len: 0},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var q Queue
			for i, o := range tc.ops {
				switch {
				case o.push:
					if err := q.Push(Event{At: o.at, Arg: o.want}); err != nil {
						t.Fatal(err)
					}
				case o.peek:
					if e, ok := q.Peek(); !ok || e.Arg != o.want {
						t.Fatalf("op %d: peek %v %v, want arg %d", i, e, ok, o.want)
					}
				default:
					if e, ok := q.Pop(); !ok || e.Arg != o.want {
						t.Fatalf("op %d: pop %v %v, want arg %d", i, e, ok, o.want)
					}
				}
				if q.Len() != o.len {
					t.Fatalf("op %d: Len %d, want %d", i, q.Len(), o.len)
				}
			}
			if _, ok := q.Pop(); ok {
				t.Fatal("pop of an empty queue succeeded")
			}
			if _, ok := q.Peek(); ok {
				t.Fatal("peek of an empty queue succeeded")
			}
		})
	}
}

// TestDropMatchesPop runs one sequence of pushes and removals on two
// queues, one removing with Pop, the other with Peek then Drop (the event
// loop's way): the events removed, the clock and the lengths must agree.
func TestDropMatchesPop(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var popQ, dropQ Queue
		n := rapid.IntRange(1, 300).Draw(t, "ops")
		for i := range n {
			if rapid.Bool().Draw(t, "push") {
				e := Event{At: popQ.Now() + rapid.Int64Range(0, 20).Draw(t, "delay"), Arg: int64(i)}
				if err := popQ.Push(e); err != nil {
					t.Fatal(err)
				}
				if err := dropQ.Push(e); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, wok := popQ.Pop()
			got, gok := dropQ.Peek()
			if gok {
				dropQ.Drop()
			}
			if gok != wok || got != want {
				t.Fatalf("op %d: Peek then Drop removed %v %v, Pop %v %v", i, got, gok, want, wok)
			}
			checkRing(t, &popQ)
			checkRing(t, &dropQ)
			if dropQ.Now() != popQ.Now() || dropQ.Len() != popQ.Len() {
				t.Fatalf("op %d: after Drop now %d len %d, after Pop now %d len %d", i, dropQ.Now(), dropQ.Len(), popQ.Now(), popQ.Len())
			}
		}
	})
}

// TestNextAtIsPeek: NextAt gives Peek's time, whether or not a Pop left
// the root vacant, and leaves the events' order alone.
func TestNextAtIsPeek(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var q, ref Queue
		for i := range rapid.IntRange(1, 300).Draw(rt, "ops") {
			if q.Len() > 0 && rapid.IntRange(0, 2).Draw(rt, "pop") == 0 {
				a, _ := q.Pop()
				b, _ := ref.Pop()
				if a != b {
					rt.Fatalf("op %d: popped %+v, reference %+v", i, a, b)
				}
			} else {
				e := Event{At: q.Now() + rapid.Int64Range(0, 20).Draw(rt, "delay"), Arg: int64(i)}
				if err := q.Push(e); err != nil {
					rt.Fatal(err)
				}
				if err := ref.Push(e); err != nil {
					rt.Fatal(err)
				}
			}
			at, ok := q.NextAt()
			next, ok2 := ref.Peek()
			if ok != ok2 || ok && at != next.At {
				rt.Fatalf("op %d: NextAt %d %v, Peek %+v %v", i, at, ok, next, ok2)
			}
		}
	})
}

// refQueue is the reference order: pending events in a slice kept sorted
// by (At, Seq), a new event after every event of its time.
type refQueue struct{ evs []Event }

func (r *refQueue) push(e Event) {
	k := len(r.evs)
	for k > 0 && r.evs[k-1].At > e.At {
		k--
	}
	r.evs = slices.Insert(r.evs, k, e)
}

// TestQueueMatchesReferenceAtAnySize runs bursts of pushes and removals
// that take the queue from empty past the ring's capacity into the heap
// and back, with times drawn from a narrow range (many ties) or a wide
// one, removing through Pop, Peek then Drop, or Front then Drop: every
// event comes out in the reference's order with the Seq Push gave it, and
// Len (and, in some bursts, NextAt and Front) agree with the reference
// throughout.
func TestQueueMatchesReferenceAtAnySize(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var q Queue
		var ref refQueue
		seq, arg := int64(0), int64(0)
		for b := range rapid.IntRange(1, 12).Draw(rt, "bursts") {
			spread := rapid.SampledFrom([]int64{0, 3, 1000, 1 << 40}).Draw(rt, "spread")
			// Without the look at the next event a push drops into the
			// heap's hole a removal left.
			look := rapid.Bool().Draw(rt, "look")
			for range rapid.IntRange(0, 3*ringCap).Draw(rt, "pushes") {
				e := Event{At: q.Now() + rapid.Int64Range(0, spread).Draw(rt, "delay"), Kind: int32(b), Arg: arg}
				arg++
				if err := q.Push(e); err != nil {
					rt.Fatal(err)
				}
				seq++
				e.Seq = seq
				ref.push(e)
				checkQueue(rt, &q, &ref, look)
			}
			for range rapid.IntRange(0, 3*ringCap).Draw(rt, "removals") {
				if len(ref.evs) == 0 {
					break
				}
				want := ref.evs[0]
				ref.evs = ref.evs[1:]
				var got Event
				switch rapid.IntRange(0, 2).Draw(rt, "how") {
				case 0:
					got, _ = q.Pop()
				case 1:
					got, _ = q.Peek()
					q.Drop()
				default:
					got = *q.Front()
					q.Drop()
				}
				if got != want || q.Now() != want.At {
					rt.Fatalf("removed %+v (now %d), want %+v", got, q.Now(), want)
				}
				checkQueue(rt, &q, &ref, look)
			}
		}
	})
}

// checkQueue compares q's length and, with look, its next event with the
// reference's, and checks the ring's keys (checkRing).
func checkQueue(rt *rapid.T, q *Queue, ref *refQueue, look bool) {
	if q.Len() != len(ref.evs) {
		rt.Fatalf("Len %d, want %d", q.Len(), len(ref.evs))
	}
	checkRing(rt, q)
	if !look {
		return
	}
	at, ok := q.NextAt()
	front := q.Front()
	if len(ref.evs) == 0 {
		if ok || front != nil {
			rt.Fatalf("empty queue: NextAt %d %v, Front %v", at, ok, front)
		}
		return
	}
	if !ok || at != ref.evs[0].At || front == nil || *front != ref.evs[0] {
		rt.Fatalf("NextAt %d %v, Front %+v, want %+v", at, ok, front, ref.evs[0])
	}
}

// checkRing checks the ring's structure while the events are in it: the
// slots are a permutation of the pool's (each slot at one position), and
// each pending position's time is that of the event in its slot, in
// order.
func checkRing(t interface{ Fatalf(string, ...any) }, q *Queue) {
	if q.heaped || !q.ready {
		return
	}
	var seen [ringCap]bool
	for _, s := range q.slots {
		if int(s) >= ringCap || seen[s] {
			t.Fatalf("slots %v: not a permutation", q.slots)
		}
		seen[s] = true
	}
	for i := q.head; i != q.tail; i++ {
		at := q.times[i%ringCap]
		if e := q.pool[q.slots[i%ringCap]]; e.At != at {
			t.Fatalf("position %d: time %d, its slot's event %+v", i, at, e)
		}
		if i != q.head && q.times[(i-1)%ringCap] > at {
			t.Fatalf("position %d: time %d after %d", i, at, q.times[(i-1)%ringCap])
		}
	}
}
