package main

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// figure matches a number as docs write figures: 1,442.0, 125.8, 954.
var figure = regexp.MustCompile(`\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d+`)

// scenarioArg matches the files a command reads its inputs from.
var scenarioArg = regexp.MustCompile(`(?:-c|--config|--grid|--accelerators|--workload)[ =](\S+)`)

// figuresIn returns the figures of s: numbers with a decimal point or
// thousands separators, and plain integers of 100 or more, skipping
// numbers inside words and names (Llama-3.1, H100, RTX 4090, #34102) and
// inline code.
func figuresIn(s string) []string {
	var out []string
	for _, loc := range figure.FindAllStringIndex(s, -1) {
		i, j := loc[0], loc[1]
		if i > 0 {
			prev := rune(s[i-1])
			if unicode.IsLetter(prev) || prev == '.' || prev == '_' || prev == '#' || prev == '/' || prev == '@' {
				continue
			}
			if prev == '-' && i > 1 && (unicode.IsLetter(rune(s[i-2])) || unicode.IsDigit(rune(s[i-2]))) {
				continue
			}
		}
		if j < len(s) && (unicode.IsLetter(rune(s[j])) || s[j] == '_' || s[j] == '-' && j+1 < len(s) && unicode.IsLetter(rune(s[j+1]))) {
			continue
		}
		f := s[i:j]
		if !strings.ContainsAny(f, ".,") {
			if n, _ := strconv.Atoi(f); n < 100 {
				continue
			}
			if w := strings.Fields(s[max(0, i-8):i]); len(w) > 0 && (w[len(w)-1] == "RTX" || w[len(w)-1] == "PRO") {
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

// shows reports whether the figure f appears among the numbers nums of an
// output, as written or rounded to f's decimals (2.3 for 2.267).
func shows(f string, nums []string) bool {
	want := strings.ReplaceAll(f, ",", "")
	dec := 0
	if _, frac, ok := strings.Cut(want, "."); ok {
		dec = len(frac)
	}
	w, err := strconv.ParseFloat(want, 64)
	if err != nil {
		return false
	}
	p := math.Pow(10, float64(dec))
	for _, n := range nums {
		v, err := strconv.ParseFloat(strings.ReplaceAll(n, ",", ""), 64)
		if err != nil {
			continue
		}
		if v == w || math.Round(v*p) == math.Round(w*p) {
			return true
		}
	}
	return false
}

var inlineCode = regexp.MustCompile("`[^`]*`")

// TestDocsProseRepeatsOnlyShownFigures: the paragraph right after a
// generated block or a shown command output may quote a figure (a number
// with a decimal point or thousands separator, or an integer from 100 up)
// only if the block shows it, as written or rounded, or it is an input of
// the commands (their arguments and the scenario and grid files they
// read). A figure derived from the output (a ratio, a difference) must be
// shown by the block or not quoted, so that prose cannot go stale
// silently when the outputs change.
func TestDocsProseRepeatsOnlyShownFigures(t *testing.T) {
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
		doc := string(data)
		for _, rx := range []*regexp.Regexp{genBlock, docBlock} {
			for _, loc := range rx.FindAllStringSubmatchIndex(doc, -1) {
				cmds, out := doc[loc[2]:loc[3]], doc[loc[4]:loc[5]]
				shown := figure.FindAllString(out+"\n"+cmds, -1)
				for _, m := range scenarioArg.FindAllStringSubmatch(cmds, -1) {
					if in, err := os.ReadFile(strings.Trim(m[1], "'")); err == nil {
						shown = append(shown, figure.FindAllString(string(in), -1)...)
					}
				}
				for _, f := range figuresIn(inlineCode.ReplaceAllString(paragraphAfter(doc[loc[1]:]), "")) {
					if !shows(f, shown) {
						line := strings.Count(doc[:loc[1]], "\n") + 1
						t.Errorf("%s:%d: the paragraph after the block quotes %s, which the block does not show; refer to the table instead, or show it", page, line, f)
					}
				}
			}
		}
	}
}

// paragraphAfter returns the first paragraph of s (after blank lines),
// "" when s continues with a code block, a heading or a comment.
func paragraphAfter(s string) string {
	s = strings.TrimLeft(s, "\n")
	if strings.HasPrefix(s, "```") || strings.HasPrefix(s, "#") || strings.HasPrefix(s, "<!--") || strings.HasPrefix(s, "|") {
		return ""
	}
	end := len(s)
	for _, stop := range []string{"\n\n", "\n```", "\n#", "\n<!--", "\n|"} {
		if k := strings.Index(s, stop); k >= 0 && k < end {
			end = k
		}
	}
	return s[:end]
}
