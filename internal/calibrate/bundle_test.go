package calibrate

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/servesim/servesim/internal/assets"
)

func TestSplitTP(t *testing.T) {
	for _, c := range []struct {
		in     string
		bundle string
		tp     int
	}{
		{"builtin:RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/tp1", "builtin:RTXPRO6000/meta-llama/Llama-3.1-8B/bf16", 1},
		{"profiles/H100/Qwen/Qwen3-32B/bf16/tp4/", "profiles/H100/Qwen/Qwen3-32B/bf16", 4},
		{"profiles/H100/Qwen/Qwen3-32B/bf16", "profiles/H100/Qwen/Qwen3-32B/bf16", 0},
		{"tp2", "tp2", 0},
		{"x/tp0", "x/tp0", 0},
		{"x/tp02", "x/tp02", 0},
	} {
		b, tp := SplitTP(strings.TrimSuffix(c.in, "/"))
		if b != c.bundle || tp != c.tp {
			t.Errorf("SplitTP(%q) = %q, %d; want %q, %d", c.in, b, tp, c.bundle, c.tp)
		}
	}
}

func TestFitBundleFolderErrors(t *testing.T) {
	emb, err := fs.Sub(assets.FS(), "profiles/RTXPRO6000/meta-llama/Llama-3.1-8B/bf16")
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		fsys fs.FS
		tp   int
		want string
	}{
		"no meta":         {fstest.MapFS{}, 1, "holds meta.yaml"},
		"bad meta":        {fstest.MapFS{"meta.yaml": {Data: []byte("hardware: [\n")}}, 1, "meta.yaml"},
		"unknown gpu":     {fstest.MapFS{"meta.yaml": {Data: []byte("hardware: TPU9\nmodel: meta-llama/Llama-3.1-8B\n")}}, 1, "hardware"},
		"unknown model":   {fstest.MapFS{"meta.yaml": {Data: []byte("hardware: H100\nmodel: acme/none\n")}}, 1, "model"},
		"tp not measured": {emb, 8, "no tp8/ tables"},
	} {
		_, _, _, err := FitBundleFolder(c.fsys, "b", c.tp, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, c.want)
		}
	}
}
