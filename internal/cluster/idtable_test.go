package cluster

import (
	"maps"
	"testing"

	"pgregory.net/rapid"
)

// TestIDTableMatchesMap runs random puts, gets and deletions on an
// idTable and on a Go map: every lookup, the length and the entries must
// agree. The ids are drawn from a window of consecutive ids as in a run,
// from sets spaced by table sizes, and from the whole range.
func TestIDTableMatchesMap(t *testing.T) {
	tests := []struct {
		name string
		id   *rapid.Generator[int64]
	}{
		{"a window of consecutive ids", rapid.Int64Range(1000, 1100)},
		{"colliding ids", rapid.Custom(func(t *rapid.T) int64 {
			return rapid.Int64Range(0, 3).Draw(t, "base") + 64*rapid.Int64Range(0, 40).Draw(t, "k")
		})},
		{"wrapping ids", rapid.Custom(func(t *rapid.T) int64 {
			return 60 + 128*rapid.Int64Range(0, 3).Draw(t, "k") + rapid.Int64Range(0, 8).Draw(t, "off")
		})},
		{"any ids", rapid.Int64()},
		{"the id kept aside", rapid.SampledFrom([]int64{minID, minID + 1, -1, 0, 1, 1 << 62})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				var tab idTable[int]
				model := map[int64]int{}
				for i := range rapid.IntRange(1, 400).Draw(t, "ops") {
					id := tc.id.Draw(t, "id")
					switch rapid.IntRange(0, 2).Draw(t, "op") {
					case 0:
						tab.put(id, i)
						model[id] = i
					case 1:
						tab.del(id)
						delete(model, id)
					}
					v, ok := tab.lookup(id)
					if w, wok := model[id]; v != w || ok != wok {
						t.Fatalf("op %d: lookup(%d) = %d, %v; want %d, %v", i, id, v, ok, w, wok)
					}
					if tab.len() != len(model) {
						t.Fatalf("op %d: len %d, want %d", i, tab.len(), len(model))
					}
				}
				got := maps.Collect(tab.all)
				if !maps.Equal(got, model) {
					t.Fatalf("entries %v, want %v", got, model)
				}
				for id, w := range model {
					if v := tab.get(id); v != w {
						t.Fatalf("get(%d) = %d, want %d", id, v, w)
					}
				}
			})
		})
	}
}

// TestLiveTableMatchesMap runs random puts, lookups and deletions on a
// liveTable and on a Go map of records: every lookup, the length and the
// entries must agree, while the table reuses the entries of the requests
// it dropped.
func TestLiveTableMatchesMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var tab liveTable
		model := map[int64]liveReq{}
		for i := range rapid.IntRange(1, 400).Draw(t, "ops") {
			id := rapid.Int64Range(0, 60).Draw(t, "id")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				r := liveReq{arrival: int64(i), input: i, output: 2 * i, priority: int32(i % 3)}
				tab.put(id, r)
				model[id] = r
			case 1:
				tab.del(id)
				delete(model, id)
			}
			r, ok := tab.lookup(id)
			if w, wok := model[id]; r != w || ok != wok {
				t.Fatalf("op %d: lookup(%d) = %+v, %v; want %+v, %v", i, id, r, ok, w, wok)
			}
			if tab.len() != len(model) || len(tab.recs) != len(model)+len(tab.free) {
				t.Fatalf("op %d: len %d with %d records, %d free; want %d", i, tab.len(), len(tab.recs), len(tab.free), len(model))
			}
		}
		if got := maps.Collect(tab.all); !maps.Equal(got, model) {
			t.Fatalf("entries %v, want %v", got, model)
		}
		for id, w := range model {
			if r := tab.get(id); r != w {
				t.Fatalf("get(%d) = %+v, want %+v", id, r, w)
			}
		}
	})
}
