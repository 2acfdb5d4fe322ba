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
