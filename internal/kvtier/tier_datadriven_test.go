package kvtier

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestTierDataDriven runs the scenario files in testdata/tier. Regenerate
// the expected output with
//
//	go test ./internal/kvtier -run TestTierDataDriven -rewrite
//
// Commands (chunks are named by decimal keys):
//
//	new capacity=N          fresh tier
//	write key=K             BeginWrite
//	end-write key=K         EndWrite of K's slot
//	read key=K              BeginRead
//	end-read key=K          EndRead of K's slot
//	state                   slots in id order (key and state), LRU order, counters
//
// After every command the harness runs Check.
func TestTierDataDriven(t *testing.T) {
	datadriven.Walk(t, filepath.Join("testdata", "tier"), func(t *testing.T, path string) {
		var tr *Tier
		slots := map[uint64]SlotID{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := runTierCmd(t, d, &tr, slots)
			if tr != nil {
				if err := tr.Check(); err != nil {
					t.Fatalf("%s: invariant violated after %q: %v", d.Pos, d.Cmd, err)
				}
			}
			return out
		})
	})
}

func runTierCmd(t *testing.T, d *datadriven.TestData, tr **Tier, slots map[uint64]SlotID) string {
	key := func() uint64 {
		var s string
		d.ScanArgs(t, "key", &s)
		k, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: key %q: %v", d.Pos, s, err)
		}
		return k
	}
	switch d.Cmd {
	case "new":
		var n int
		d.ScanArgs(t, "capacity", &n)
		var err error
		if *tr, err = NewTier(n); err != nil {
			return err.Error()
		}
		for k := range slots {
			delete(slots, k)
		}
		return "ok"
	case "write":
		k := key()
		id, ok := (*tr).BeginWrite(k)
		if !ok {
			return fmt.Sprintf("refused (dropped %d)", (*tr).Dropped())
		}
		slots[k] = id
		return fmt.Sprintf("slot %d (evictions %d)", id, (*tr).Evictions())
	case "end-write", "end-read":
		k := key()
		id, ok := slots[k]
		if !ok {
			id = -1
		}
		var err error
		if d.Cmd == "end-write" {
			err = (*tr).EndWrite(id)
		} else {
			err = (*tr).EndRead(id)
		}
		if err != nil {
			return err.Error()
		}
		return "ok"
	case "read":
		k := key()
		id, ok := (*tr).BeginRead(k)
		if !ok {
			return "not readable"
		}
		return fmt.Sprintf("slot %d", id)
	case "state":
		var b strings.Builder
		t0 := *tr
		for i := range t0.slots {
			s := &t0.slots[i]
			if s.state == Free {
				fmt.Fprintf(&b, "slot %d: free\n", i)
				continue
			}
			fmt.Fprintf(&b, "slot %d: key %d %s", i, s.hash, s.state)
			if s.readers > 0 {
				fmt.Fprintf(&b, " (%d readers)", s.readers)
			}
			b.WriteString("\n")
		}
		b.WriteString("lru:")
		for id := t0.lruHead; id >= 0; id = t0.slots[id].next {
			fmt.Fprintf(&b, " %d", t0.slots[id].hash)
		}
		fmt.Fprintf(&b, "\noccupied %d evictions %d dropped %d\n", t0.Occupied(), t0.Evictions(), t0.Dropped())
		return b.String()
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return ""
}
