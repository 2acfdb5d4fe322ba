package arch

import (
	"fmt"
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

// configDir is the package that parses the scenario's choices.
const configDir = "internal/config"

// choiceAllowed are the files outside configDir that may compare a
// string with a choice name, each with why the string is not a choice of
// the scenario.
var choiceAllowed = map[string]string{
	// The random-scenario generator writes scenario files as YAML text:
	// it compares the names it drew before writing them, nothing parsed.
	"internal/scenario/randgen/gen.go": "writes scenario text",
	// The converter reads other simulators' and benchmarks' files, whose
	// own vocabularies happen to share some names (a role "prefill").
	"internal/convert/llmservingsim.go": "reads LLMServingSim's cluster files",
	// quant parses a checkpoint's quantization_config, where "none" is
	// an HF method name.
	"internal/quant/quant.go": "parses HF quantization_config",
	// The roofline names its MoE gate op "router" (an op, not the
	// scenario's router).
	"internal/perf/roofline.go": "names the MoE gate op",
}

// choiceNames returns the scenario's choice names: the values of the
// typed string constants of configDir (constants whose type is a named
// string type declared there).
func choiceNames(t *testing.T, root string) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	files, err := goFiles(filepath.Join(root, configDir))
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]bool{}
	var consts []*ast.ValueSpec
	for _, p := range files {
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if id, ok := s.Type.(*ast.Ident); ok && id.Name == "string" {
						types[s.Name.Name] = true
					}
				case *ast.ValueSpec:
					if g.Tok == token.CONST {
						consts = append(consts, s)
					}
				}
			}
		}
	}
	names := map[string]bool{}
	for _, s := range consts {
		id, ok := s.Type.(*ast.Ident)
		if !ok || !types[id.Name] {
			continue
		}
		for _, v := range s.Values {
			if v, ok := stringLit(v); ok {
				names[v] = true
			}
		}
	}
	return names
}

// goFiles lists the non-test Go files of dir.
func goFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out, nil
}

// stringLit returns the value of a string literal expression.
func stringLit(e ast.Expr) (string, bool) {
	lit, ok := ast.Unparen(e).(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil
}

// choiceComparisons returns "file:line: ..." for every ==, != or switch
// case of the Go source src (named file) against a literal in names.
func choiceComparisons(fset *token.FileSet, file string, src any, names map[string]bool) ([]string, error) {
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	flag := func(e ast.Expr, how string) {
		if v, ok := stringLit(e); ok && names[v] {
			out = append(out, fmt.Sprintf("%s:%d: %s %q", file, fset.Position(e.Pos()).Line, how, v))
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				flag(n.X, "compares with")
				flag(n.Y, "compares with")
			}
		case *ast.SwitchStmt:
			for _, c := range n.Body.List {
				for _, e := range c.(*ast.CaseClause).List {
					flag(e, "switches on")
				}
			}
		}
		return true
	})
	return out, nil
}

// TestChoiceComparisonsFound: the scan flags ==, != and switch cases on a
// choice name, and nothing else.
func TestChoiceComparisonsFound(t *testing.T) {
	names := map[string]bool{"pull": true}
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"equal", `if p == "pull" {}`, 1},
		{"not equal, reversed", `if "pull" != p {}`, 1},
		{"switch case", "switch p {\ncase \"push\", \"pull\":\n}", 1},
		{"parenthesised", `if p == ("pull") {}`, 1},
		{"other name", `if p == "push" {}`, 0},
		{"assignment", `p = "pull"; _ = p`, 0},
		{"call argument", `_ = len("pull")`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "package p\n\nfunc f(p string) {\n" + tc.body + "\n}\n"
			got, err := choiceComparisons(token.NewFileSet(), "p.go", src, names)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.want {
				t.Errorf("flagged %v, want %d", got, tc.want)
			}
		})
	}
}

// TestNoChoiceStrings: config parses every choice name once into a typed
// value, so outside internal/config no non-test code compares a string
// with a choice name (it compares the typed constants); choiceAllowed
// lists the files whose matching strings are not scenario choices.
func TestNoChoiceStrings(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	names := choiceNames(t, root)
	for _, want := range []string{"pull", "prefill", "roofline", "round-robin", "most-free-kv", "swap"} {
		if !names[want] {
			t.Fatalf("choice name %q not found among the typed constants of %s (found %d names)", want, configDir, len(names))
		}
	}
	var bad []string
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || (strings.HasPrefix(n, ".") && rel != ".") || rel == configDir {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || choiceAllowed[rel] != "" {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		found, err := choiceComparisons(fset, rel, src, names)
		bad = append(bad, found...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s: a scenario choice compared as a string; compare the typed constant of package config (or the value it was mapped to) instead", b)
	}
	for f := range choiceAllowed {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("choiceAllowed lists %s, which does not exist: remove it", f)
		}
	}
}
