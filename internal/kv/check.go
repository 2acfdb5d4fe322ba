package kv

import "fmt"

// eachFree calls f for every free block in queue order (oldest first)
// with its ring index, its id (-1 for an anonymous block: one call per
// block of a run) and entry kind, until f returns false.
func (p *Pool) eachFree(f func(pos int, b int32, kind uint32) bool) {
	mask := len(p.ring) - 1
	for i := 0; i < p.qlen; i++ {
		pos := (int(p.qhead) + i) & mask
		e := p.ring[pos]
		if e == hole {
			continue
		}
		if e&3 > kindPrivate {
			if !f(pos, int32(e>>2), e&3) {
				return
			}
			continue
		}
		for range e >> 2 {
			if !f(pos, -1, e&3) {
				return
			}
		}
	}
}

// checkAnon verifies the set of anonymous ids: as many ids as anonymous
// queue entries and blocks held in tails, its summaries consistent, and
// exactly the blocks neither named nor free with content in it, each with
// hot word 0.
func (p *Pool) checkAnon(queued int) error {
	if n := p.anon.count(); n != queued+int(p.tail) {
		return fmt.Errorf("kv: %d anonymous ids but %d anonymous queue entries and %d blocks in tails", n, queued, p.tail)
	}
	if p.tail < 0 || p.tailPriv < 0 || p.tailPriv > p.tail {
		return fmt.Errorf("kv: tails hold %d blocks, %d of them private", p.tail, p.tailPriv)
	}
	if !p.anon.check() {
		return fmt.Errorf("kv: the set of anonymous ids has a summary bit that does not match its words")
	}
	for b, w := range p.hot {
		in := p.anon.has(int32(b))
		switch {
		case in && w != 0:
			return fmt.Errorf("kv: anonymous free block %d records state %#x", b, w)
		case !in && w&(heldBit|kindMask) == 0:
			return fmt.Errorf("kv: block %d is free without content but not among the anonymous ids", b)
		}
	}
	return nil
}

// Check verifies the pool's invariants: reference counts are never
// negative, the free queue holds exactly the unreferenced blocks, and
// free + referenced = capacity (blocks held in anonymous tails counted
// as referenced once). It costs O(capacity).
func (p *Pool) Check() error {
	for i, mask := 0, len(p.ring)-1; i < p.qlen; i++ {
		if e := p.ring[(int(p.qhead)+i)&mask]; e != hole && e&kindMask <= kindPrivate && e>>2 == 0 {
			return fmt.Errorf("kv: free queue entry %d is an empty run of anonymous blocks", i)
		}
	}
	inQueue, cachedFree, anonQueued, anonPriv := 0, 0, 0, 0
	var bad error
	p.eachFree(func(pos int, b int32, kind uint32) bool {
		switch {
		case b < 0:
			anonQueued++
			if kind == kindPrivate {
				anonPriv++
			}
		case int(b) >= p.capacity:
			bad = fmt.Errorf("kv: free queue holds block %d outside the pool", b)
		case p.hot[b]&heldBit != 0:
			bad = fmt.Errorf("kv: block %d is in the free queue with %d references", b, p.Refs(b))
		case int(p.hot[b]>>countShift) != pos:
			bad = fmt.Errorf("kv: free block %d sits at queue position %d but records %d", b, pos, p.hot[b]>>countShift)
		case kind != p.kindOf(b):
			bad = fmt.Errorf("kv: free block %d is queued with content kind %d but records kind %d", b, kind, p.kindOf(b))
		}
		inQueue++
		if kind != kindNone {
			cachedFree++
		}
		return bad == nil
	})
	if bad != nil {
		return bad
	}
	if cachedFree != int(p.cachedFree) {
		return fmt.Errorf("kv: %d free blocks hold cached content but the count is %d", cachedFree, p.cachedFree)
	}
	if inQueue != p.numFree {
		return fmt.Errorf("kv: free queue holds %d blocks but the free count is %d", inQueue, p.numFree)
	}
	if err := p.checkAnon(anonQueued); err != nil {
		return err
	}
	referenced, total, priv, shared := int(p.tail), int64(p.tail), anonPriv+int(p.tailPriv), 0
	for b := range p.hot {
		switch p.kindOf(int32(b)) {
		case kindPrivate:
			priv++
		case kindTagged:
			priv++
			if p.hash[b] == 0 {
				return fmt.Errorf("kv: block %d is tagged private but holds no tag", b)
			}
		case kindShared:
			shared++
			if ib, ok := p.index.get(p.hash[b]); !ok || ib != int32(b) {
				return fmt.Errorf("kv: block %d records shared content %x that the cache index does not map to it", b, p.hash[b])
			}
		}
		r := p.Refs(int32(b))
		total += int64(r)
		if p.hot[b]&heldBit != 0 && r == 0 {
			return fmt.Errorf("kv: block %d is held with 0 references", b)
		}
		if r > 0 {
			referenced++
		}
	}
	if total != p.refs {
		return fmt.Errorf("kv: blocks hold %d references but the total is %d", total, p.refs)
	}
	if referenced+p.numFree != p.capacity {
		return fmt.Errorf("kv: %d referenced + %d free != capacity %d", referenced, p.numFree, p.capacity)
	}
	indexed := 0
	p.index.each(func(h uint64, b BlockID) bool {
		indexed++
		if p.kindOf(b) != kindShared || p.hash[b] != h {
			bad = fmt.Errorf("kv: cache index maps %x to block %d holding %x (content kind %d)", h, b, p.content(b), p.kindOf(b))
			return false
		}
		return true
	})
	if bad != nil {
		return bad
	}
	if indexed != p.index.len() {
		return fmt.Errorf("kv: cache index holds %d entries but counts %d", indexed, p.index.len())
	}
	if priv != int(p.numPriv) {
		return fmt.Errorf("kv: %d blocks hold private content but the count is %d", priv, p.numPriv)
	}
	if shared != indexed {
		return fmt.Errorf("kv: %d blocks hold shared content but %d are indexed", shared, indexed)
	}
	return nil
}
