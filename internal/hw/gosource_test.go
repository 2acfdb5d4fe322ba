package hw

import (
	"bytes"
	"os"
	"reflect"
	"testing"
)

// TestEmbeddedSpecsAreCurrent: specs_gen.go is what go generate makes from
// catalog.yaml now (an edited catalog needs go generate ./internal/hw).
func TestEmbeddedSpecsAreCurrent(t *testing.T) {
	want, err := EmbeddedSpecsSource(embedded)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("specs_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("specs_gen.go is stale: run go generate ./internal/hw")
	}
}

// TestDefaultMatchesParse: the built-in catalog made from the generated
// entries is the one parsing catalog.yaml gives, and the generated entries
// are the decoded ones, field for field.
func TestDefaultMatchesParse(t *testing.T) {
	f, err := decode(embedded, EmbeddedSource)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(embeddedSpecs, f.Accelerators) {
		t.Fatal("the generated entries differ from catalog.yaml's")
	}
	if len(embedded) != specsLen || crc32Sum(embedded) != specsSum {
		t.Fatal("the generated entries were made from another catalog.yaml")
	}
	parsed, err := Parse(bytes.NewReader(embedded), EmbeddedSource)
	if err != nil {
		t.Fatal(err)
	}
	def, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(def, parsed) {
		t.Fatal("Default differs from parsing catalog.yaml")
	}
}
