package des

import (
	"testing"

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
	_ = q.Push(Event{At: 5})
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
