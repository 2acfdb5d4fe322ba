package kv

import (
	"fmt"
	"hash/fnv"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestPoolDataDriven runs the scenario files in testdata/pool. Regenerate
// the expected output with
//
//	go test ./internal/kv -run TestPoolDataDriven -rewrite
//
// Commands (owners are names, each holding one block table as a request
// does; hashes are symbolic names, or decimal numbers such as 0 taken
// literally):
//
//	new capacity=N [caching=true|false]   fresh pool (caching defaults to true)
//	alloc owner=A n=N                     Allocate n blocks onto A's table
//	commit owner=A block=I hash=H         Commit A's I-th block (table index) as H
//	commit owner=A hashes=H1,H2,...       Commit A's blocks 0,1,... as H1,H2,...
//	match hashes=H1,H2,...                Match and EvictableHits
//	acquire owner=A hashes=H1,... [n=N]   Acquire n hits (default: Match) onto A
//	release owner=A [keep]                Release A's table; forget it unless keep
//	state                                 counts, free queue head->tail, refs, tables
//
// After every command the harness runs Check and a stricter white-box
// check and fails the test if either reports a violation.
func TestPoolDataDriven(t *testing.T) {
	datadriven.Walk(t, filepath.Join("testdata", "pool"), func(t *testing.T, path string) {
		h := &ddHarness{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := h.run(t, d)
			if h.p != nil {
				if err := deepCheck(h.p); err != nil {
					t.Fatalf("%s: invariant violated after %q: %v", d.Pos, d.Cmd, err)
				}
			}
			return out
		})
	})
}

type ddHarness struct {
	p      *Pool
	tables map[string][]BlockID
	names  map[uint64]string
}

// hashOf maps a symbolic name to a stable nonzero uint64 (FNV-1a of the
// name); a decimal literal maps to itself so that 0 can be written.
func (h *ddHarness) hashOf(name string) uint64 {
	v, err := strconv.ParseUint(name, 10, 64)
	if err != nil {
		f := fnv.New64a()
		f.Write([]byte(name))
		v = f.Sum64()
	}
	if old, ok := h.names[v]; ok && old != name {
		panic(fmt.Sprintf("hash names %q and %q collide", old, name))
	}
	h.names[v] = name
	return v
}

func (h *ddHarness) hashList(t *testing.T, d *datadriven.TestData) []uint64 {
	arg, ok := d.Arg("hashes")
	if !ok {
		d.Fatalf(t, "missing hashes=")
	}
	var hs []uint64
	for _, v := range arg.Vals {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				hs = append(hs, h.hashOf(name))
			}
		}
	}
	return hs
}

func (h *ddHarness) hashName(v uint64) string {
	if name, ok := h.names[v]; ok {
		return name
	}
	return fmt.Sprintf("%#x", v)
}

func (h *ddHarness) run(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "new" && h.p == nil {
		d.Fatalf(t, "%s before new", d.Cmd)
	}
	switch d.Cmd {
	case "new":
		var capacity int
		caching := true
		d.ScanArgs(t, "capacity", &capacity)
		d.MaybeScanArgs(t, "caching", &caching)
		p, err := NewPool(capacity, caching)
		if err != nil {
			h.p = nil
			return "error: " + err.Error()
		}
		h.p = p
		h.tables = map[string][]BlockID{}
		h.names = map[uint64]string{}
		return h.state()

	case "alloc":
		var owner string
		var n int
		d.ScanArgs(t, "owner", &owner)
		d.ScanArgs(t, "n", &n)
		before := h.state()
		old := h.tables[owner]
		table, ok := h.p.Allocate(old, n)
		if !ok {
			if after := h.state(); after != before || !slices.Equal(table, old) {
				d.Fatalf(t, "failed Allocate changed the pool:\n%s\nbecame\n%s", before, after)
			}
			return fmt.Sprintf("allocation of %d blocks failed with %d free; state unchanged", n, h.p.Free())
		}
		h.tables[owner] = table
		return fmt.Sprintf("%s += %s", owner, blockList(table[len(old):]))

	case "commit":
		var owner string
		d.ScanArgs(t, "owner", &owner)
		table := h.tables[owner]
		var idx []int
		var hs []uint64
		if d.HasArg("hashes") {
			hs = h.hashList(t, d)
			for i := range hs {
				idx = append(idx, i)
			}
		} else {
			var i int
			var name string
			d.ScanArgs(t, "block", &i)
			d.ScanArgs(t, "hash", &name)
			idx, hs = []int{i}, []uint64{h.hashOf(name)}
		}
		var out strings.Builder
		for k, i := range idx {
			if i >= len(table) {
				d.Fatalf(t, "%s has %d blocks, no block %d", owner, len(table), i)
			}
			b, hv := table[i], hs[k]
			prev := h.p.content(b)
			h.p.Commit(b, hv)
			switch {
			case h.p.content(b) == hv && indexed(h.p, hv) == b && prev == 0:
				fmt.Fprintf(&out, "block %d: indexed as %s\n", b, h.hashName(hv))
			case prev != 0:
				fmt.Fprintf(&out, "block %d: ignored, already holds %s\n", b, h.hashName(prev))
			default:
				if cur, ok := h.p.index.get(hv); ok {
					fmt.Fprintf(&out, "block %d: ignored, %s already cached in block %d\n", b, h.hashName(hv), cur)
				} else {
					fmt.Fprintf(&out, "block %d: ignored\n", b)
				}
			}
		}
		return out.String()

	case "match":
		hs := h.hashList(t, d)
		n := h.p.Match(hs)
		return fmt.Sprintf("match=%d evictable=%d", n, h.p.EvictableHits(hs, n))

	case "acquire":
		var owner string
		d.ScanArgs(t, "owner", &owner)
		hs := h.hashList(t, d)
		n := h.p.Match(hs)
		if d.HasArg("n") {
			d.ScanArgs(t, "n", &n)
			if m := h.p.Match(hs); n > m {
				d.Fatalf(t, "acquire n=%d exceeds Match=%d (contract violation)", n, m)
			}
		}
		old := h.tables[owner]
		table := h.p.Acquire(old, hs, n)
		h.tables[owner] = table
		return fmt.Sprintf("%s += %s", owner, blockList(table[len(old):]))

	case "release":
		var owner string
		d.ScanArgs(t, "owner", &owner)
		table := h.tables[owner]
		if err := h.p.Release(table); err != nil {
			return "error: " + err.Error()
		}
		if !d.HasArg("keep") {
			delete(h.tables, owner)
		}
		return fmt.Sprintf("released %s %s", owner, blockList(table))

	case "state":
		return h.state()

	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
		return ""
	}
}

func blockList(bs []BlockID) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = strconv.Itoa(int(b))
	}
	return "[" + strings.Join(s, " ") + "]"
}

// block renders a block id with its cached hash name, e.g. "3:h1"; an
// anonymous free queue entry (no content, or private content without a
// tag: its block has no identity, see Pool.anon) is "_".
func (h *ddHarness) block(b BlockID) string {
	if b < 0 {
		return "_"
	}
	if v := h.p.content(b); v != 0 {
		return fmt.Sprintf("%d:%s", b, h.hashName(v))
	}
	return strconv.Itoa(int(b))
}

// state prints the counts, the free queue from head (next to be
// allocated) to tail, each referenced block with its refcount, and every
// owner's block table.
func (h *ddHarness) state() string {
	p := h.p
	var out strings.Builder
	fmt.Fprintf(&out, "capacity=%d caching=%v free=%d used=%d cached=%d hits=%d/%d\n",
		p.Capacity(), p.caching, p.Free(), p.Used(), p.Cached(), p.hits, p.queries)
	var q []string
	for _, b := range freeQueue(p) {
		q = append(q, h.block(b))
	}
	fmt.Fprintf(&out, "free queue: %s\n", orNone(q))
	var refs []string
	for b := range p.capacity {
		if r := p.Refs(BlockID(b)); r != 0 {
			refs = append(refs, fmt.Sprintf("%s(x%d)", h.block(BlockID(b)), r))
		}
	}
	fmt.Fprintf(&out, "referenced: %s\n", orNone(refs))
	owners := make([]string, 0, len(h.tables))
	for o := range h.tables {
		owners = append(owners, o)
	}
	slices.Sort(owners)
	for _, o := range owners {
		fmt.Fprintf(&out, "table %s: %s\n", o, blockList(h.tables[o]))
	}
	return out.String()
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, " ")
}

func indexed(p *Pool, h uint64) BlockID {
	b, _ := p.index.get(h)
	return b
}
