package cluster

import (
	"slices"
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/workload"
)

// TestPromptHashesReuse checks that the hashes carried from one
// sub-request to the next equal those computed from scratch, whether the
// next prompt extends the previous one, diverges from it inside a block,
// or shares nothing, and that nothing is kept once the entries are used.
func TestPromptHashesReuse(t *testing.T) {
	const bs = 4
	seq := func(n int, from int32) []int32 {
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = from + int32(i)
		}
		return ids
	}
	base := seq(22, 0) // 5 full blocks and 2 tokens
	diverge := slices.Clone(base)
	diverge[9] = -1 // block 2 differs
	tests := []struct {
		name string
		next []int32
	}{
		{"extends", append(slices.Clone(base), seq(15, 100)...)},
		{"equal", slices.Clone(base)},
		{"diverges in block 2", append(diverge, seq(7, 100)...)},
		{"unrelated", seq(30, 1000)},
		{"shorter", slices.Clone(base[:9])},
		{"below one block", slices.Clone(base[:3])},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p promptHashes
			first := &workload.Request{ID: 7, InputTokens: len(base), InputIDs: base}
			p.reset()
			if got := p.of(first, bs); len(got) != len(base)/bs {
				t.Fatalf("first: %d hashes, want %d", len(got), len(base)/bs)
			}
			p.placed(first, 8, true)
			second := &workload.Request{ID: 8, InputTokens: len(tc.next), InputIDs: tc.next}
			p.reset()
			got := slices.Clone(p.of(second, bs))
			want := engine.PromptHashes(nil, tc.next, len(tc.next)/bs, bs)
			if len(tc.next) < bs {
				want = nil
			}
			if !slices.Equal(got, want) {
				t.Errorf("hashes %x, want %x", got, want)
			}
			p.placed(second, 0, false)
			if len(p.next) != 0 {
				t.Errorf("%d entries kept after the last sub-request", len(p.next))
			}
		})
	}
}

// TestPromptHashesDrop checks that a session's kept hashes are released
// when its next sub-request will never be routed.
func TestPromptHashesDrop(t *testing.T) {
	var p promptHashes
	ids := make([]int32, 64)
	r := &workload.Request{ID: 1, InputTokens: 64, InputIDs: ids}
	p.reset()
	p.of(r, 16)
	p.placed(r, 2, true)
	if len(p.next) != 1 {
		t.Fatalf("%d entries, want 1", len(p.next))
	}
	p.drop(2)
	if len(p.next) != 0 || len(p.spare) != 1 {
		t.Errorf("after drop: %d entries, %d spare buffers; want 0, 1", len(p.next), len(p.spare))
	}
}
