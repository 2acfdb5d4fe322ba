package kv

import "testing"

// byteReader hands out the fuzz input one byte at a time, then zeros.
type byteReader struct {
	b []byte
	i int
}

func (r *byteReader) next() int {
	if r.i >= len(r.b) {
		return 0
	}
	r.i++
	return int(r.b[r.i-1])
}

func (r *byteReader) done() bool { return r.i >= len(r.b) }

// FuzzPoolOps interprets a byte string as a pool and a sequence of
// operations on it. The first byte picks the capacity (1..16) and whether
// prefix caching is on. Each following op byte selects, by its value
// modulo 7, alloc / commit / acquire / release / double release (of
// an already released table) / commit as a hash chain / acquire a chain
// prefix, and in bits 3-4 one of four owners; the arguments follow as
// further bytes. Raw hashes come from a universe of 8 values including the
// reserved 0, chains from chainHash. Acquire takes at most Match hits, as
// its contract demands.
//
// The pool must never panic, Check (and deepCheck) must hold after every
// op, it must agree with the reference model, and releasing everything at
// the end must free every block.
func FuzzPoolOps(f *testing.F) {
	f.Add([]byte{0x07})
	f.Add([]byte{0x87, 0x00, 0x03, 0x01, 0x00, 0x05, 0x03, 0x09, 0x03, 0x05, 0x02})
	f.Add([]byte{0x83, 0x00, 0x04, 0x01, 0x00, 0x01, 0x01, 0x01, 0x02, 0x03, 0x02, 0x03, 0x04, 0x03})
	f.Add([]byte{0x8f, 0x08, 0x05, 0x09, 0x00, 0x06, 0x09, 0x01, 0x07, 0x0a, 0x04, 0x01, 0x02, 0x06, 0x03, 0x0b, 0x04, 0x00, 0x10})
	f.Add([]byte{0x01, 0x00, 0x01, 0x00, 0x01, 0x03, 0x04, 0x03, 0x04})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &byteReader{b: data}
		h := r.next()
		capacity := h%16 + 1
		caching := h&0x80 != 0
		d, err := newDriver(capacity, caching, 4)
		if err != nil {
			t.Fatal(err)
		}
		for step := 0; !r.done(); step++ {
			op := r.next()
			owner := (op >> 3) % 4
			switch op % 7 {
			case 0:
				err = d.alloc(owner, r.next()%(capacity+2))
			case 1:
				err = d.commit(owner, r.next(), uint64(r.next()%8))
			case 2:
				n := r.next() % 6
				hs := make([]uint64, n)
				for i := range hs {
					hs[i] = uint64(r.next() % 8)
				}
				err = d.acquire(owner, hs, r.next()%7)
			case 3:
				err = d.release(owner)
			case 4:
				err = d.releaseStale(owner)
			case 5: // commit the owner's table as chain c
				c := r.next() % 3
				for i := range d.tables[owner] {
					if err = d.commit(owner, i, chainHash(c, i)); err != nil {
						break
					}
				}
			case 6: // look up a prefix of chain c, diverging at block k
				c, n, k := r.next()%3, r.next()%(chainLen+1), r.next()
				hs := make([]uint64, n)
				for i := range hs {
					hs[i] = chainHash(c, i)
				}
				if k < n {
					hs[k] = uint64(r.next() % 8)
				}
				err = d.acquire(owner, hs, r.next()%(chainLen+1))
			}
			if err == nil {
				err = d.verify()
			}
			if err != nil {
				t.Fatalf("step %d (op %d, owner %d): %v", step, op%7, owner, err)
			}
		}
		if err := d.releaseAll(); err != nil {
			t.Fatal(err)
		}
	})
}
