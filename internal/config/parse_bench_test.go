package config

import (
	"os"
	"testing"
)

// BenchmarkParse parses the richest example scenario (every error check
// included). Run: go test ./internal/config -run '^$' -bench Parse
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("../../examples/chat-multiturn.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Parse(data, "chat-multiturn.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}
