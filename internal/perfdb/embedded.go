package perfdb

import (
	"io/fs"
	"slices"
	"strings"

	"github.com/servesim/servesim/internal/assets"
)

// embeddedRoot is the database's systems folder inside the assets.
const embeddedRoot = "aiconfigurator/systems"

// Embedded returns the copy of the database compiled into servesim,
// rooted at its systems folder.
func Embedded() fs.FS {
	sub, err := fs.Sub(assets.FS(), embeddedRoot)
	if err != nil {
		// fs.Sub fails only on an invalid path literal.
		panic(err)
	}
	return sub
}

// Systems lists the systems of fsys that have tables: the names of its
// <system>.yaml files with a data/<system> folder, sorted.
func Systems(fsys fs.FS) ([]string, error) {
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".yaml")
		if !ok || e.IsDir() {
			continue
		}
		if st, err := fs.Stat(fsys, "data/"+name); err == nil && st.IsDir() {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// EmbeddedSystems lists the systems of the embedded copy.
func EmbeddedSystems() []string {
	s, err := Systems(Embedded())
	if err != nil {
		// The embedded tree is fixed at build time and readable.
		panic(err)
	}
	return s
}
