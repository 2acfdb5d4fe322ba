package arch

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a non-test function of the packages in
// shortFuncs may be, counted as the line of its closing brace minus the
// line of its func keyword (its doc comment not included).
const maxFuncLines = 100

// shortFuncs are the packages whose functions must stay within
// maxFuncLines: the simulation's hot paths and the scenario's assembly,
// kept readable in parts that each do one thing.
var shortFuncs = []string{"internal/assemble", "internal/cluster", "internal/engine"}

// longFuncs returns "file:line name (n lines)" for each function of the
// Go source src (named file) longer than limit lines.
func longFuncs(fset *token.FileSet, file string, src any, limit int) ([]string, error) {
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		start := fset.Position(fd.Pos())
		if n := fset.Position(fd.End()).Line - start.Line; n > limit {
			out = append(out, fmt.Sprintf("%s:%d %s (%d lines)", file, start.Line, fd.Name.Name, n))
		}
	}
	return out, nil
}

// TestLongFuncsCounted: the measure flags a function one line over the
// limit and not one at it, and does not count the doc comment.
func TestLongFuncsCounted(t *testing.T) {
	body := func(lines int) string { return strings.Repeat("\t_ = 0\n", lines) }
	for _, tc := range []struct {
		name string
		src  string
		want int
	}{
		{"at the limit", "package p\n\nfunc f() {\n" + body(maxFuncLines-1) + "}\n", 0},
		{"one over", "package p\n\nfunc f() {\n" + body(maxFuncLines) + "}\n", 1},
		{"doc not counted", "package p\n\n" + strings.Repeat("// doc\n", 10) + "func f() {\n" + body(maxFuncLines-1) + "}\n", 0},
		{"methods too", "package p\n\ntype T int\n\nfunc (T) m() {\n" + body(maxFuncLines) + "}\n\nfunc g() {}\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := longFuncs(token.NewFileSet(), "p.go", tc.src, maxFuncLines)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.want {
				t.Errorf("flagged %v, want %d", got, tc.want)
			}
		})
	}
}

// TestFuncsShort: no non-test function of the packages in shortFuncs
// exceeds maxFuncLines.
func TestFuncsShort(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range shortFuncs {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		seen := 0
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			seen++
			src, err := os.ReadFile(filepath.Join(root, dir, name))
			if err != nil {
				t.Fatal(err)
			}
			long, err := longFuncs(fset, dir+"/"+name, src, maxFuncLines)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range long {
				t.Errorf("%s: over %d lines: split it into helpers that each do one thing", l, maxFuncLines)
			}
		}
		if seen == 0 {
			t.Errorf("package %s has no Go files", dir)
		}
	}
}
