package workload

import (
	"errors"
	"io"
	"testing"
)

// TestRemainingCountsWhatNextWouldReturn: after reading a few entries,
// Remaining counts exactly the requests a twin source (same config and
// seed) still returns, for every generated workload, under Take and Scale
// too, and leaves the source exhausted. A chat workload under max_context
// cuts conversations short, so its count depends on the drawn lengths.
func TestRemainingCountsWhatNextWouldReturn(t *testing.T) {
	capped := chatConfig()
	capped.MaxContext = 400
	syn := Synthetic{Requests: 300, Arrival: ArrivalProcess{Kind: Poisson, Rate: 5},
		Input: LengthDist{Kind: Fixed, Mean: 100}, Output: LengthDist{Kind: Fixed, Mean: 10}}
	sp := SharedPrefix{Requests: 200, Arrival: ArrivalProcess{Kind: Constant, Rate: 10}, Prefixes: 2,
		Prefix: LengthDist{Kind: Fixed, Mean: 64}, Question: LengthDist{Kind: Fixed, Mean: 8}, Output: LengthDist{Kind: Fixed, Mean: 8}}
	tests := []struct {
		name string
		src  func() Source
		read int
	}{
		{"synthetic", func() Source { return must(NewSynthetic(syn, 4)) }, 7},
		{"shared prefix", func() Source { return must(NewSharedPrefix(sp, 4)) }, 3},
		{"chat", func() Source { return must(NewChat(chatConfig(), 4)) }, 5},
		{"chat under max_context", func() Source { return must(NewChat(capped, 4)) }, 5},
		{"take of chat", func() Source { return Take(must(NewChat(chatConfig(), 4)), 61) }, 2},
		{"take beyond the end", func() Source { return Take(must(NewSynthetic(syn, 4)), 1000) }, 2},
		{"scaled synthetic", func() Source { return Scale(must(NewSynthetic(syn, 4)), 0.5) }, 9},
		{"all read", func() Source { return must(NewSynthetic(syn, 4)) }, 300},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.src(), tc.src()
			for range tc.read {
				if _, err := a.Next(); err != nil {
					t.Fatal(err)
				}
				if _, err := b.Next(); err != nil {
					t.Fatal(err)
				}
			}
			want := int64(0)
			for _, e := range readAll(t, b) {
				want += int64(len(e.Requests))
			}
			got, ok := Remaining(a)
			if !ok || got != want {
				t.Errorf("Remaining = %d, %v; the twin source returned %d more requests", got, ok, want)
			}
			if _, err := a.Next(); !errors.Is(err, io.EOF) {
				t.Errorf("after Remaining, Next returned %v, want io.EOF", err)
			}
		})
	}
	if _, ok := Remaining(&sliceSource{}); ok {
		t.Error("a source that is no Counter counted its requests")
	}
}
