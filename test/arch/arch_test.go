// Package arch holds tests of the project's structure: the packages'
// dependency direction, the rules the simulation core keeps, and that
// the rapid failure files kept as regression cases are replayed.
package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/servesim/servesim/"

// layers ranks every package: a package may import only packages of a
// strictly lower rank. docs/architecture.md shows the same map.
var layers = map[string]int{
	"internal/csvtable": 0, "internal/testseed": 0,
	"internal/assets": 1, "internal/nearest": 1, "internal/des": 1, "internal/kv": 1,
	"internal/link": 1, "internal/metrics": 1, "internal/perf": 1, "internal/workpool": 1, "internal/quant": 1,
	"internal/hw": 2, "internal/perfdb": 2, "internal/kvtier": 2, "internal/model": 2, "internal/workload": 2, "internal/moe": 2,
	"internal/frontend": 2, "internal/tableview": 2, "internal/assets/gencompact": 2,
	"internal/engine": 3, "internal/calibrate": 3, "internal/config": 3, "internal/report": 3, "internal/dbcheck": 3, "internal/hw/genspecs": 3,
	"internal/cluster":  4,
	"internal/assemble": 5,
	"internal/runner":   6, "internal/convert": 6, "internal/serve": 6,
	"internal/validate": 7, "internal/sweep": 7, "internal/compare": 7,
	"internal/search": 8, "internal/scenario/randgen": 8,
	"cmd/servesim": 9,
}

// core is the simulation core: pure, single-threaded, deterministic.
var core = []string{"internal/des", "internal/kv", "internal/kvtier", "internal/link", "internal/moe", "internal/frontend", "internal/engine", "internal/cluster"}

// forbiddenInCore are imports that would bring files, the wall clock,
// threads or global randomness into the core.
var forbiddenInCore = map[string]string{
	"os": "files", "io/fs": "files", "time": "the wall clock", "sync": "threads",
	"math/rand": "global randomness", "net": "the network", "os/exec": "processes",
}

// packages returns the non-test source files of every package under the
// repository root, keyed by directory relative to it.
func packages(t *testing.T) map[string][]*ast.File {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string][]*ast.File{}
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" || !strings.HasSuffix(f.Name.Name, "_test") {
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil {
				return err
			}
			out[filepath.ToSlash(rel)] = append(out[filepath.ToSlash(rel)], f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportsPointDown: no package imports a package of its own or a
// higher layer, and every package has a layer.
func TestImportsPointDown(t *testing.T) {
	pkgs := packages(t)
	var dirs []string
	for dir := range pkgs {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		if strings.HasPrefix(dir, "test/") || strings.HasPrefix(dir, "examples/") {
			continue
		}
		rank, ok := layers[dir]
		if !ok {
			t.Errorf("package %s has no layer: add it to the table in test/arch and docs/architecture.md", dir)
			continue
		}
		for _, f := range pkgs[dir] {
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				dep, ours := strings.CutPrefix(path, module)
				if !ours {
					continue
				}
				if r, ok := layers[dep]; !ok || r >= rank {
					t.Errorf("%s (layer %d) imports %s (layer %d): imports must point to a lower layer", dir, rank, dep, r)
				}
			}
		}
	}
}

// TestCoreIsPure: the core imports nothing that reads files, the wall
// clock, threads or global randomness, starts no goroutine and never
// panics (its errors are returned).
func TestCoreIsPure(t *testing.T) {
	pkgs := packages(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range core {
		files := pkgs[dir]
		if len(files) == 0 {
			t.Fatalf("core package %s not found", dir)
		}
		for _, f := range files {
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if why, bad := forbiddenInCore[path]; bad {
					t.Errorf("core package %s imports %s, which brings %s into the core", dir, path, why)
				}
			}
		}
		// Goroutines: parse the bodies too.
		fset := token.NewFileSet()
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(root, dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if g, ok := n.(*ast.GoStmt); ok {
					t.Errorf("%s: core package starts a goroutine", fset.Position(g.Pos()))
				}
				if c, ok := n.(*ast.CallExpr); ok {
					if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "panic" {
						t.Errorf("%s: core package panics; return an error (the core has one error path)", fset.Position(c.Pos()))
					}
				}
				return true
			})
		}
	}
}
