package model

import (
	"errors"
	"fmt"
	"github.com/servesim/servesim/internal/nearest"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/servesim/servesim/internal/assets"
)

// ErrUnknownModel is wrapped by the error [Load] returns when no config
// file matches the requested name.
var ErrUnknownModel = errors.New("unknown model")

// maxSuggestions bounds the "did you mean" list of an unknown-model error.
const maxSuggestions = 3

// Builtin returns the embedded model catalog, rooted so that configs are at
// "<org>/<name>.json".
func Builtin() fs.FS {
	fsys := assets.FS()
	if sub, err := fs.Sub(fsys, "models"); err == nil {
		return sub
	}
	return fsys // unreachable: "models" is a valid path; Load copes anyway.
}

// root returns the directory of fsys holding <org>/<name>.json files: the
// "models" folder when fsys has one (as the embedded assets do), else fsys.
func root(fsys fs.FS) fs.FS {
	if st, err := fs.Stat(fsys, "models"); err == nil && st.IsDir() {
		if sub, err := fs.Sub(fsys, "models"); err == nil {
			return sub
		}
	}
	return fsys
}

// Load reads and parses the config of model name ("org/name") from fsys,
// which holds "<org>/<name>.json" files (see [Builtin]; a user directory
// works through os.DirFS). An exact file name wins; otherwise a unique
// case-insensitive match is accepted. The returned Config's Name is the
// canonical "org/name". An unknown name yields an error wrapping
// [ErrUnknownModel] that lists the closest known names and how to add a
// model.
func Load(fsys fs.FS, name string) (*Config, error) {
	if fsys == nil {
		return nil, fmt.Errorf("load model %q: nil file system", name)
	}
	dir := root(fsys)
	org, base, ok := strings.Cut(name, "/")
	if !ok || org == "" || base == "" || strings.Contains(base, "/") || !fs.ValidPath(name) {
		return nil, fmt.Errorf("load model %q: name must have the form \"org/name\"%s", name, hint(dir, name))
	}
	canonical := name
	data, err := fs.ReadFile(dir, name+".json")
	if errors.Is(err, fs.ErrNotExist) {
		if alt, found := caseInsensitive(List(dir), name); found {
			canonical = alt
			data, err = fs.ReadFile(dir, alt+".json")
		} else {
			return nil, fmt.Errorf("load model %q: %w%s", name, ErrUnknownModel, hint(dir, name))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("load model %q: %w", name, err)
	}
	c, err := Parse(data, canonical+".json")
	if err != nil {
		return nil, fmt.Errorf("load model %q: %w", name, err)
	}
	c.Name = canonical
	return c, nil
}

// List returns the sorted "org/name" of every config in fsys (laid out as
// for [Load]). Unreadable directories are skipped.
func List(fsys fs.FS) []string {
	if fsys == nil {
		return nil
	}
	dir := root(fsys)
	orgs, err := fs.ReadDir(dir, ".")
	if err != nil {
		return nil
	}
	var names []string
	for _, org := range orgs {
		if !org.IsDir() {
			continue
		}
		files, err := fs.ReadDir(dir, org.Name())
		if err != nil {
			continue
		}
		for _, f := range files {
			if f.IsDir() || path.Ext(f.Name()) != ".json" {
				continue
			}
			names = append(names, org.Name()+"/"+strings.TrimSuffix(f.Name(), ".json"))
		}
	}
	slices.Sort(names)
	return names
}

// caseInsensitive returns the single name equal to want ignoring case.
func caseInsensitive(names []string, want string) (string, bool) {
	var match string
	n := 0
	for _, s := range names {
		if strings.EqualFold(s, want) {
			match = s
			n++
		}
	}
	return match, n == 1
}

// hint is the tail of an unknown-model error: the closest known names and
// how to add a model.
func hint(dir fs.FS, name string) string {
	known := List(dir)
	var b strings.Builder
	if close := Closest(known, name, maxSuggestions); len(close) > 0 {
		fmt.Fprintf(&b, "; closest known: %s", strings.Join(close, ", "))
	} else {
		b.WriteString("; no model configs found")
	}
	b.WriteString(`; to add a model, save its HuggingFace config.json as DIR/<org>/<name>.json and pass --models DIR`)
	return b.String()
}

// Closest returns up to n names from candidates nearest to want by edit
// distance, ignoring case; a name also matches on its part after "org/",
// so "Llama-3.1-8B" finds "meta-llama/Llama-3.1-8B". Ties keep sorted
// order.
func Closest(candidates []string, want string, n int) []string {
	w := strings.ToLower(want)
	return nearest.Closest(candidates, func(c string) int {
		lc := strings.ToLower(c)
		d := nearest.Distance(lc, w)
		if _, base, ok := strings.Cut(lc, "/"); ok {
			d = min(d, nearest.Distance(base, w))
		}
		return d
	}, n)
}
