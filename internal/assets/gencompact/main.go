// Command gencompact writes the compact forms of the embedded profile
// bundles' attention and skew tables (perf.CompactTables) beside their
// CSVs. Run it from internal/assets: go generate ./internal/assets.
package main

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/servesim/servesim/internal/perf"
)

func main() {
	if err := run("data"); err != nil {
		fmt.Fprintln(os.Stderr, "gencompact:", err)
		os.Exit(1)
	}
}

// run regenerates the compact files of every tp<N> bundle folder under
// root/profiles.
func run(root string) error {
	fsys := os.DirFS(root)
	return fs.WalkDir(fsys, "profiles", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() || !strings.HasPrefix(path.Base(p), "tp") {
			return nil
		}
		files, err := perf.CompactTables(fsys, p)
		if err != nil {
			return err
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(p), name), b, 0o644); err != nil {
				return err
			}
		}
		return nil
	})
}
