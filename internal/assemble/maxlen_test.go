package assemble

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/engine"
)

func TestMaxLenWarning(t *testing.T) {
	base := Instance{Group: "g0", NumBlocks: 1000, PredictedBlocks: 1000, BlockSize: 16, Engine: engine.Config{MaxModelLen: 16001}}
	tests := []struct {
		name string
		edit func(*Instance)
		want string // "" for no warning
	}{
		{"one token short", func(*Instance) {}, "max_model_len 16001 exceeds the KV cache's 16000 tokens"},
		{"exactly fits", func(in *Instance) { in.Engine.MaxModelLen = 16000 }, ""},
		{"no limit", func(in *Instance) { in.Engine.MaxModelLen = 0 }, ""},
		{"pinned capacity", func(in *Instance) { in.PredictedBlocks = 900 }, ""},
		{"hybrid layout", func(in *Instance) { in.KVLayout = "sliding" }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			tc.edit(&in)
			got := maxLenWarning(in)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("maxLenWarning = %q, want %q", got, tc.want)
			}
			if tc.want != "" && !strings.Contains(got, "engine.max_model_len to at most 16000") {
				t.Errorf("warning does not say what to set: %q", got)
			}
		})
	}
}
