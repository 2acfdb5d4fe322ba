package kv

import "fmt"

// Anonymous tails.
//
// A free anonymous block (see Pool.anon) is distinguished from another
// such block only by its queue entry's kind; a block that a table holds
// alone, and whose content nobody can ever look up, is likewise
// distinguished from another such block only by whether its content is
// private (committed) or none. Such blocks need no ids while held: a table
// may end in an anonymous tail, blocks the pool counts but does not name,
// each held once, the first of them holding private content (committed
// with CommitTail) and the rest none. Allocating, committing and releasing
// a tail then costs a few counter updates whatever its length, where named
// blocks cost a hot word and an id each; a tail that must be named after
// all (its owner is preempted and will look its private blocks up again)
// is given ids by NameTail.
//
// The ids of the tails' blocks are nobody's: the set anon holds them with
// the free anonymous ids, and an allocation of named blocks may take any
// of them. The pool keeps only the count of blocks held in tails and how
// many of them hold private content.

// AllocateTail takes n free blocks, evicting their cached content, for a
// table's anonymous tail. It returns false and changes nothing when fewer
// than n blocks are free. The queue's order, the evictions and every count
// but the ids handed out are those of Allocate(table, n).
func (p *Pool) AllocateTail(n int) bool {
	if n > p.numFree {
		return false
	}
	ring, mask := p.ring, len(p.ring)-1
	if e := ring[p.qhead]; e&kindMask <= kindPrivate && int(e>>2) > n {
		// Fewer blocks than the head run holds, the commonest call (the
		// decode lane's blocks of a batch): the loop below, once.
		ring[p.qhead] = e - uint32(n)<<2
		if e&kindMask == kindPrivate {
			p.numPriv -= int32(n)
			p.cachedFree -= int32(n)
		}
		p.numFree -= n
		p.refs += int64(n)
		p.tail += int32(n)
		return true
	}
	for left := n; left > 0; {
		e := ring[p.qhead]
		if e&kindMask <= kindPrivate {
			// An anonymous run: its blocks move to the tail with their ids
			// left in anon.
			left -= p.takeRun(e, left)
			continue
		}
		p.qhead = (p.qhead + 1) & int32(mask)
		p.qlen--
		if e == hole {
			continue
		}
		// A named block's content is evicted and its id becomes nobody's.
		p.setAnon(p.evict(e))
		left--
	}
	p.numFree -= n
	p.refs += int64(n)
	p.tail += int32(n)
	return true
}

// CommitTail records that n blocks of a tail, the first blocks of it that
// held no content, now hold private content (CommitPrivate for named
// blocks). With caching off it does nothing.
func (p *Pool) CommitTail(n int) {
	if !p.caching {
		return
	}
	p.numPriv += int32(n)
	p.tailPriv += int32(n)
}

// ReleaseTail releases a table's anonymous tail of priv blocks holding
// private content followed by none blocks holding none, last block first
// as Release does: the blocks join the back of the free queue, none
// first. Release the table's named blocks after it.
func (p *Pool) ReleaseTail(priv, none int) error {
	if priv < 0 || none < 0 || priv+none > int(p.tail) || priv > int(p.tailPriv) {
		return fmt.Errorf("kv: release of a tail of %d private and %d empty blocks, but tails hold %d blocks, %d private (double release)",
			priv, none, p.tail, p.tailPriv)
	}
	if none > 0 {
		p.pushAnon(kindNone, none)
	}
	if priv > 0 {
		p.pushAnon(kindPrivate, priv)
	}
	p.tail -= int32(priv + none)
	p.tailPriv -= int32(priv)
	p.refs -= int64(priv + none)
	return nil
}

// NameTail gives the n blocks of a tail ids, the first priv of them
// holding private content, and appends them to table: the table then
// holds them as named blocks, each with one reference.
func (p *Pool) NameTail(table []BlockID, priv, n int) ([]BlockID, error) {
	if priv < 0 || priv > n || n > int(p.tail) || priv > int(p.tailPriv) {
		return table, fmt.Errorf("kv: naming a tail of %d blocks, %d private, but tails hold %d blocks, %d private", n, priv, p.tail, p.tailPriv)
	}
	for i := 0; i < n; i++ {
		b := p.anon.min()
		p.anon.remove(b)
		kind := uint32(kindNone)
		if i < priv {
			kind = kindPrivate
		}
		p.hot[b] = heldBit | oneRef | kind
		table = append(table, b)
	}
	p.tail -= int32(n)
	p.tailPriv -= int32(priv)
	return table, nil
}

// TailBlocks is the number of blocks held in anonymous tails.
func (p *Pool) TailBlocks() int { return int(p.tail) }
