package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docBlock matches a text block in the docs that shows a command and its
// output: "```text\n$ servesim ARGS\nOUTPUT```".
var docBlock = regexp.MustCompile("(?s)```text\n\\$ servesim ([^\n]*)\n(.*?)```")

// TestDocsShowRealOutput runs every command shown with its output in
// README.md and docs/*.md and compares the output with what the page
// shows, so the docs cannot drift from the program. After a deliberate
// change, rewrite the pages with
//
//	SERVESIM_UPDATE_DOCS=1 go test ./cmd/servesim -run TestDocsShowRealOutput
//
// The slower searches and comparisons are skipped under -short.
func TestDocsShowRealOutput(t *testing.T) {
	t.Chdir("../..")
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"README.md"}, pages...)
	update := os.Getenv("SERVESIM_UPDATE_DOCS") != ""
	n := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		changed := false
		out := docBlock.ReplaceAllFunc(data, func(block []byte) []byte {
			m := docBlock.FindSubmatch(block)
			args := shellFields(string(m[1]))
			name := page + ": servesim " + string(m[1])
			if testing.Short() && (args[0] == "search" || args[0] == "compare") {
				t.Logf("%s: skipped under -short", name)
				return block
			}
			n++
			var stdout, stderr bytes.Buffer
			code := execute(args, &stdout, &stderr)
			if code != 0 && !(args[0] == "compare" && code == 3) {
				t.Errorf("%s: exit %d: %s", name, code, stderr.String())
				return block
			}
			if bytes.Equal(stdout.Bytes(), m[2]) {
				return block
			}
			if update {
				changed = true
				return []byte("```text\n$ servesim " + string(m[1]) + "\n" + stdout.String() + "```")
			}
			t.Errorf("%s: the output shown differs from the program's; rerun with SERVESIM_UPDATE_DOCS=1 after a deliberate change.\nshown:\n%s\nprogram:\n%s", name, m[2], stdout.String())
			return block
		})
		if changed {
			if err := os.WriteFile(page, out, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s rewritten", page)
		}
	}
	if n == 0 {
		t.Fatal("no command blocks found in the docs")
	}
}

// genBlock matches a generated block: a sh block of servesim commands
// directly followed by "<!-- gen -->", the commands' output (a table,
// usually) and "<!-- end gen -->".
var genBlock = regexp.MustCompile("(?s)```sh\n([^`]*?)```\n<!-- gen -->\n(.*?)<!-- end gen -->")

// TestDocsGeneratedBlocks regenerates every generated block of README.md
// and docs/*.md: the servesim commands of the sh block above it run in
// order, in a scratch directory per page that sees the repository's files
// (so a command may read the CSV an earlier block of the page wrote), and
// their standard output must equal the block's content. The docs' tables
// derived from runs are made so (servesim table --format markdown), never
// typed. After a deliberate change, rewrite them with
//
//	SERVESIM_UPDATE_DOCS=1 go test ./cmd/servesim -run TestDocs
//
// which also rewrites the outputs TestDocsShowRealOutput checks.
func TestDocsGeneratedBlocks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	update := os.Getenv("SERVESIM_UPDATE_DOCS") != ""
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if !genBlock.Match(data) {
			continue
		}
		scratch := t.TempDir()
		for _, e := range entries {
			if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(scratch, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
		t.Chdir(scratch)
		rel, _ := filepath.Rel(root, page)
		changed := false
		out := genBlock.ReplaceAllFunc(data, func(block []byte) []byte {
			m := genBlock.FindSubmatch(block)
			n++
			got, err := runGenCommands(string(m[1]))
			if err != nil {
				t.Errorf("%s: %v", rel, err)
				return block
			}
			if got == string(m[2]) {
				return block
			}
			if update {
				changed = true
				return []byte("```sh\n" + string(m[1]) + "```\n<!-- gen -->\n" + got + "<!-- end gen -->")
			}
			t.Errorf("%s: the generated block after\n%sdiffers from the commands' output; rerun with SERVESIM_UPDATE_DOCS=1 after a deliberate change.\nshown:\n%s\nprogram:\n%s", rel, m[1], m[2], got)
			return block
		})
		if changed {
			if err := os.WriteFile(page, out, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s rewritten", rel)
		}
	}
	if n == 0 {
		t.Fatal("no generated blocks found in the docs")
	}
}

// runGenCommands runs the servesim command lines of a sh block and
// returns their standard output, concatenated.
func runGenCommands(script string) (string, error) {
	var all strings.Builder
	for line := range strings.SplitSeq(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rest, ok := strings.CutPrefix(line, "servesim ")
		if !ok {
			return "", fmt.Errorf("%q: a generated block's commands must each be one servesim command line", line)
		}
		var stdout, stderr bytes.Buffer
		if code := execute(shellFields(rest), &stdout, &stderr); code != 0 {
			return "", fmt.Errorf("%s: exit %d: %s", line, code, stderr.String())
		}
		all.Write(stdout.Bytes())
	}
	return all.String(), nil
}

// shellFields splits a command line at spaces outside single quotes, as a
// shell does for the commands shown in the docs.
func shellFields(line string) []string {
	var out []string
	var cur strings.Builder
	quoted, have := false, false
	for _, c := range line {
		switch {
		case c == '\'':
			quoted, have = !quoted, true
		case c == ' ' && !quoted:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(c)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

// simulatedWord finds "measured" used of a figure: "the measured mean
// accepted length, 2.699".
var simulatedWord = regexp.MustCompile(`(?i)\bmeasured\b[^.;:]*?\b\d[\d,.]*`)

// measuredContext are words that make "measured" refer to real data: a
// vLLM run, a kernel database, a measured profile or trace.
var measuredContext = regexp.MustCompile(`(?i)vllm|database|profile|measured run|trace|latencies measured|kernel|cachegrind|wall`)

// TestDocsCallSimulatedFiguresSimulated: the paragraph after the output of
// a simulation (run, compare, sweep, search) does not call its figures
// "measured" unless it speaks of measured data (a vLLM run, a database):
// a reader must not take a simulated value for a measurement.
func TestDocsCallSimulatedFiguresSimulated(t *testing.T) {
	t.Chdir("../..")
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range append([]string{"README.md"}, pages...) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, loc := range docBlock.FindAllSubmatchIndex(data, -1) {
			args := shellFields(string(data[loc[2]:loc[3]]))
			switch args[0] {
			case "run", "compare", "sweep", "search":
			default:
				continue
			}
			after := string(data[loc[1]:])
			para, _, _ := strings.Cut(strings.TrimLeft(after, "\n"), "\n\n")
			for _, m := range simulatedWord.FindAllString(para, -1) {
				if !measuredContext.MatchString(para) {
					t.Errorf("%s: after \"servesim %s\": %q calls a simulated figure measured; say simulated", page, data[loc[2]:loc[3]], m)
				}
			}
		}
	}
}
