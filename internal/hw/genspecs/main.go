// Command genspecs writes specs_gen.go, the entries of the embedded
// accelerator catalog as Go values (hw.EmbeddedSpecsSource). Run it from
// internal/hw: go generate ./internal/hw.
package main

import (
	"fmt"
	"os"

	"github.com/servesim/servesim/internal/hw"
)

func main() {
	data, err := os.ReadFile("catalog.yaml")
	if err == nil {
		var src []byte
		if src, err = hw.EmbeddedSpecsSource(data); err == nil {
			err = os.WriteFile("specs_gen.go", src, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genspecs:", err)
		os.Exit(1)
	}
}
