package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCatalogModelsDir: catalog --models DIR lists the directory's configs
// after the embedded models; a missing directory is bad input.
func TestCatalogModelsDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "acme"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `{"model_type": "mistral", "hidden_size": 512, "intermediate_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 4096, "torch_dtype": "bfloat16"}`
	if err := os.WriteFile(filepath.Join(dir, "acme", "tiny.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	if code := execute([]string{"catalog", "--models", dir}, &out, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	_, after, ok := strings.Cut(out.String(), "MODELS ("+dir)
	if !ok || !strings.Contains(after, "  acme/tiny\n") {
		t.Errorf("output lacks the directory's models:\n%s", out.String())
	}
	out.Reset()
	if code := execute([]string{"catalog", "--models", filepath.Join(dir, "nope")}, &out, &stderr); code != 2 || out.Len() != 0 {
		t.Errorf("missing directory: exit %d, output %q; want 2 and nothing", code, out.String())
	}
}
