package kv

import "math/bits"

// idSet is a set of block ids below a pool's capacity that finds its
// lowest member in a few word reads: a bitmap of the ids (level 0) under
// summaries in which a bit marks a non-zero word of the level below, up
// to a level of one word, and the index of the lowest non-zero word of
// the bitmap, so that finding the lowest member, adding or removing one
// reads and writes one bitmap word unless that word empties or fills. A
// pool of 35,651 blocks has three levels of 558, 9 and 1 words; the
// largest pool (MaxCapacity) five.
type idSet struct {
	leaf []uint64   // level 0: one bit per id
	sum  [][]uint64 // levels 1 and up: one bit per non-zero word below
	low  int        // the lowest non-zero word of leaf (len(leaf): none)
}

func newIDSet(capacity int) idSet {
	s := idSet{leaf: make([]uint64, (capacity+63)/64)}
	s.low = len(s.leaf)
	for n := len(s.leaf); n > 1; {
		n = (n + 63) / 64
		s.sum = append(s.sum, make([]uint64, n))
	}
	return s
}

// fill puts every id below n, the set's capacity, in the empty set,
// a word at a time.
func (s *idSet) fill(n int) {
	for w := range s.leaf {
		s.leaf[w] = ^uint64(0)
	}
	if r := n % 64; r != 0 {
		s.leaf[len(s.leaf)-1] = 1<<r - 1
	}
	below := s.leaf
	for _, l := range s.sum {
		for w, v := range below {
			if v != 0 {
				l[w>>6] |= 1 << (w & 63)
			}
		}
		below = l
	}
	if n > 0 {
		s.low = 0
	}
}

// add puts id b in the set; b must not be in it.
func (s *idSet) add(b int32) {
	w := uint(b) >> 6
	old := s.leaf[w]
	s.leaf[w] = old | 1<<(uint(b)&63)
	if old == 0 {
		s.wordSet(w)
	}
}

// wordSet records that leaf word w is no longer zero.
//
//go:noinline
func (s *idSet) wordSet(w uint) {
	if int(w) < s.low {
		s.low = int(w)
	}
	for _, l := range s.sum {
		i := w >> 6
		old := l[i]
		l[i] = old | 1<<(w&63)
		if old != 0 {
			return
		}
		w = i
	}
}

// remove takes id b out of the set; b must be in it.
func (s *idSet) remove(b int32) {
	w := uint(b) >> 6
	v := s.leaf[w] &^ (1 << (uint(b) & 63))
	s.leaf[w] = v
	if v == 0 {
		s.wordCleared(w)
	}
}

// wordCleared records that leaf word w became zero.
//
//go:noinline
func (s *idSet) wordCleared(w uint) {
	if len(s.sum) == 0 { // one leaf word
		s.low = len(s.leaf)
		return
	}
	l1 := s.sum[0]
	i := w >> 6
	v := l1[i] &^ (1 << (w & 63))
	l1[i] = v
	if v == 0 {
		for _, l := range s.sum[1:] { // the summaries above
			j := i >> 6
			u := l[j] &^ (1 << (i & 63))
			l[j] = u
			if u != 0 {
				break
			}
			i = j
		}
	}
	if int(w) != s.low {
		return
	}
	// The lowest word emptied: the next non-zero one is marked in the
	// same summary word, or found from the top summary down.
	if v != 0 {
		s.low = int(w&^63) + bits.TrailingZeros64(v)
		return
	}
	s.low = len(s.leaf)
	i = 0
	for k := len(s.sum) - 1; k >= 0; k-- {
		u := s.sum[k][i]
		if u == 0 {
			return // empty
		}
		i = i<<6 + uint(bits.TrailingZeros64(u))
	}
	s.low = int(i)
}

// has reports whether id b, 0 <= b < capacity, is in the set.
func (s *idSet) has(b int32) bool {
	return s.leaf[uint(b)>>6]&(1<<(uint(b)&63)) != 0
}

// min is the lowest id in the set, which must not be empty.
func (s *idSet) min() int32 {
	return int32(s.low<<6 + bits.TrailingZeros64(s.leaf[s.low]))
}

// count is the number of ids in the set (O(capacity / 64)).
func (s *idSet) count() int {
	n := 0
	for _, w := range s.leaf {
		n += bits.OnesCount64(w)
	}
	return n
}

// check verifies that every summary bit marks exactly the non-zero words
// of the level below, and the lowest non-zero leaf word.
func (s *idSet) check() bool {
	low := len(s.leaf)
	for w, v := range s.leaf {
		if v != 0 {
			low = w
			break
		}
	}
	if low != s.low {
		return false
	}
	below := s.leaf
	for _, l := range s.sum {
		for w, v := range below {
			if (v != 0) != (l[w>>6]&(1<<(w&63)) != 0) {
				return false
			}
		}
		below = l
	}
	return true
}
