package arch

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	_ "github.com/servesim/servesim/internal/testseed"
	"pgregory.net/rapid"
)

// keptFailFile is the name of a rapid failure file kept on purpose as a
// regression case; .gitignore ignores every other file rapid writes.
var keptFailFile = regexp.MustCompile(`^(.+)-regression-[A-Za-z0-9_.-]+\.fail$`)

// TestRapidRegressionFilesAreReplayed: every kept rapid failure file
// (testdata/rapid/<Test>/<Test>-regression-*.fail) is one rapid replays
// before its random cases: it sits in the directory rapid searches for a
// top-level test of its package, it is named after that test, and it was
// written by the rapid version in use (rapid skips, with only a log line,
// a file of another version).
func TestRapidRegressionFilesAreReplayed(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	version := rapidFileVersion(t)
	n := 0
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !keptFailFile.MatchString(d.Name()) {
			return nil
		}
		n++
		rel, _ := filepath.Rel(root, p)
		if err := checkKeptFailFile(p, version); err != nil {
			t.Errorf("%s: %v", filepath.ToSlash(rel), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d kept rapid failure files, rapid file version %s", n, version)
}

// TestCheckKeptFailFile: the check above accepts a kept file rapid would
// replay and names what is wrong with one it would not.
func TestCheckKeptFailFile(t *testing.T) {
	const testFile = "package p\n\nimport \"testing\"\n\nfunc TestProp(t *testing.T) {}\n\nfunc helper(t *testing.T) {}\n"
	for _, tt := range []struct {
		name, dir, file, version string
		want                     string // "" accepted, else a part of the error
	}{
		{"replayed", "TestProp", "TestProp-regression-stall.fail", "v0.4.8", ""},
		{"no such test", "TestGone", "TestGone-regression-stall.fail", "v0.4.8", "no top-level test TestGone"},
		{"not a test", "helper", "helper-regression-stall.fail", "v0.4.8", "no top-level test helper"},
		{"other test's directory", "TestProp", "TestOther-regression-stall.fail", "v0.4.8", "named after TestOther"},
		{"old version", "TestProp", "TestProp-regression-stall.fail", "v0.4.7", "version v0.4.7"},
		{"not in testdata/rapid", "", "TestProp-regression-stall.fail", "v0.4.8", "testdata/rapid/<Test>/"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pkg := t.TempDir()
			if err := os.WriteFile(filepath.Join(pkg, "p_test.go"), []byte(testFile), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(pkg, "testdata", "rapid", tt.dir)
			if tt.dir == "" {
				dir = filepath.Join(pkg, "testdata")
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, tt.file)
			body := "# a comment rapid writes\n" + tt.version + "#42\n0x1\n0x0\n"
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			err := checkKeptFailFile(p, "v0.4.8")
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && err == nil:
				t.Errorf("accepted, want an error containing %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// checkKeptFailFile reports why rapid would not replay the kept failure
// file p, written by rapid file version version (nil: it would).
func checkKeptFailFile(p, version string) error {
	dir := filepath.Dir(p)
	test := filepath.Base(dir)
	if filepath.Base(filepath.Dir(dir)) != "rapid" || filepath.Base(filepath.Dir(filepath.Dir(dir))) != "testdata" {
		return fmt.Errorf("not in testdata/rapid/<Test>/, where rapid looks for failure files")
	}
	if m := keptFailFile.FindStringSubmatch(filepath.Base(p)); m == nil || m[1] != test {
		named := ""
		if m != nil {
			named = m[1]
		}
		return fmt.Errorf("named after %s but in the directory of %s; rapid replays only %s-*.fail there", named, test, test)
	}
	pkg := filepath.Dir(filepath.Dir(filepath.Dir(dir)))
	ok, err := hasTopLevelTest(pkg, test)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no top-level test %s in %s: nothing replays the file (rename it after the property test, or delete it)", test, pkg)
	}
	got, err := failFileVersion(p)
	if err != nil {
		return err
	}
	if got != version {
		return fmt.Errorf("written by rapid file version %s, but rapid now writes %s and skips other versions: re-record the case or turn it into an explicit test", got, version)
	}
	return nil
}

// hasTopLevelTest reports whether the _test.go files of package directory
// pkg declare func name(*testing.T).
func hasTopLevelTest(pkg, name string) (bool, error) {
	files, err := filepath.Glob(filepath.Join(pkg, "*_test.go"))
	if err != nil {
		return false, err
	}
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return false, err
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if ok && fd.Recv == nil && fd.Name.Name == name && strings.HasPrefix(name, "Test") && fd.Type.Params.NumFields() == 1 {
				return true, nil
			}
		}
	}
	return false, nil
}

// failFileVersion returns the rapid file version of failure file p: the
// part before '#' of its first line that is not a comment.
func failFileVersion(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		v, _, ok := strings.Cut(line, "#")
		if !ok {
			return "", fmt.Errorf("%s: first data line %q is not VERSION#SEED", p, line)
		}
		return v, nil
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s: no data line", p)
}

// rapidFileVersion returns the version rapid writes into failure files,
// learnt by letting a property fail once in a temporary directory.
func rapidFileVersion(t *testing.T) string {
	t.Chdir(t.TempDir())
	tb := &quietTB{name: "TestAlwaysFails"}
	rapid.Check(tb, func(rt *rapid.T) {
		rapid.Int().Draw(rt, "x")
		rt.Fatal("fails on purpose")
	})
	files, err := filepath.Glob(filepath.Join("testdata", "rapid", tb.name, tb.name+"-*.fail"))
	if err != nil || len(files) != 1 {
		t.Skipf("rapid wrote no failure file (run with -rapid.nofailfile?): %v %v", files, err)
	}
	v, err := failFileVersion(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// quietTB is a rapid.TB that records failure instead of failing the
// test that uses it.
type quietTB struct {
	name   string
	failed bool
}

func (q *quietTB) Helper()               {}
func (q *quietTB) Name() string          { return q.name }
func (q *quietTB) Logf(string, ...any)   {}
func (q *quietTB) Log(...any)            {}
func (q *quietTB) Skipf(string, ...any)  {}
func (q *quietTB) Skip(...any)           {}
func (q *quietTB) SkipNow()              {}
func (q *quietTB) Errorf(string, ...any) { q.failed = true }
func (q *quietTB) Error(...any)          { q.failed = true }
func (q *quietTB) Fatalf(string, ...any) { q.failed = true }
func (q *quietTB) Fatal(...any)          { q.failed = true }
func (q *quietTB) FailNow()              { q.failed = true }
func (q *quietTB) Fail()                 { q.failed = true }
func (q *quietTB) Failed() bool          { return q.failed }

// TestRapidSeedFixed: every package whose tests use rapid imports
// internal/testseed in one of its test files, so its property tests draw
// the same cases on every run unless RAPID_SEED or -rapid.seed asks for
// others (docs/testing.md, "Seeds").
func TestRapidSeedFixed(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	uses, seeded := map[string]bool{}, map[string]bool{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			switch imp.Path.Value {
			case `"pgregory.net/rapid"`:
				uses[filepath.ToSlash(rel)] = true
			case `"` + module + `internal/testseed"`:
				seeded[filepath.ToSlash(rel)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(uses) == 0 {
		t.Fatal("no test imports pgregory.net/rapid: the walk is broken")
	}
	for dir := range uses {
		if !seeded[dir] && dir != "internal/testseed" {
			t.Errorf("%s: its tests use rapid but no test file imports %sinternal/testseed (add `_ \"%sinternal/testseed\"` to one), so its cases change every run", dir, module, module)
		}
	}
}
