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

// vllmVersion matches the text before a version number: "vLLM 0.19", "vLLM
// 0.19–0.23".
var vllmVersion = regexp.MustCompile(`vLLM (\d+\.\d+(\.\d+)?[–-])?$`)

// figuresIn returns the figures of s: numbers with a decimal point or
// thousands separators, and plain integers of 100 or more, skipping
// numbers inside words and names (Llama-3.1, H100, RTX 4090, #34102) and
// vLLM versions. The caller removes inline code first.
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
		if vllmVersion.MatchString(s[max(0, i-16):i]) {
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

// TestDocsProseRepeatsOnlyShownFigures: the paragraphs right before and
// after a generated block or a shown command output may quote a figure (a number
// with a decimal point or thousands separator, or an integer from 100 up)
// only if it is shown, as written or rounded to the figure's decimals, by
// that block, by the block right after the paragraph, by another block of
// the same section, or, for figures of three significant digits or more,
// by any block of the page; inputs of the commands (their arguments, the
// scenario and grid files they read, and files the paragraph names in
// inline code) count as shown. A figure derived
// from outputs (a ratio, a difference) must be shown or not quoted, so
// that prose cannot go stale silently when the outputs change. A hand
// computation from inputs is written as inline code
// (`2 ms + 33.5 MB / 0.5 GB/s = 69 ms`), which the check skips.
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
		// Every figure the page's blocks show, and where each block starts
		// with its figures.
		var pageFigs []string
		starts := map[int][]string{}
		sections := map[int][]string{} // figures by the offset of their section's heading
		for _, rx := range []*regexp.Regexp{genBlock, docBlock} {
			for _, loc := range rx.FindAllStringSubmatchIndex(doc, -1) {
				figs := outputFigures(doc[loc[4]:loc[5]])
				pageFigs = append(pageFigs, figs...)
				starts[loc[0]] = figs
				sec := sectionOf(doc, loc[0])
				sections[sec] = append(sections[sec], figs...)
			}
		}
		for _, rx := range []*regexp.Regexp{genBlock, docBlock} {
			for _, loc := range rx.FindAllStringSubmatchIndex(doc, -1) {
				cmds, out := doc[loc[2]:loc[3]], doc[loc[4]:loc[5]]
				shown := outputFigures(out + "\n" + cmds)
				for _, m := range scenarioArg.FindAllStringSubmatch(cmds, -1) {
					if in, err := os.ReadFile(strings.Trim(m[1], "'")); err == nil {
						shown = append(shown, figure.FindAllString(string(in), -1)...)
					}
				}
				para := paragraphAfter(doc[loc[1]:])
				rest := strings.TrimLeft(doc[loc[1]:], "\n")
				next := loc[1] + len(doc[loc[1]:]) - len(rest) + len(para)
				next += len(doc[next:]) - len(strings.TrimLeft(doc[next:], "\n"))
				shown = append(shown, starts[next]...)
				shown = append(shown, sections[sectionOf(doc, loc[0])]...)
				// The paragraph that introduces the block is held to the same
				// rule.
				if b := paragraphBefore(doc[:loc[0]]); b != "" {
					para += "\n" + b
				}
				// Files the prose names in inline code (a scenario, an
				// accelerator file) are inputs too.
				for _, code := range inlineCode.FindAllString(para, -1) {
					if in, err := os.ReadFile(strings.Trim(code, "`")); err == nil {
						shown = append(shown, outputFigures(string(in))...)
					}
				}
				for _, f := range figuresIn(inlineCode.ReplaceAllString(para, "")) {
					if !shows(f, shown) && (sigDigits(f) < 3 || !shows(f, pageFigs)) {
						line := strings.Count(doc[:loc[1]], "\n") + 1
						t.Errorf("%s:%d: a paragraph next to the block quotes %s, which no block beside it shows; refer to the table instead, or show it (a hand computation from inputs goes in inline code)", page, line, f)
					}
				}
			}
		}
	}
}

// paragraphBefore returns the last paragraph of s, "" when s ends with a
// code block, a table, a heading or a generated block.
func paragraphBefore(s string) string {
	s = strings.TrimRight(s, "\n")
	b := s[strings.LastIndex(s, "\n\n")+1:]
	b = strings.TrimLeft(b, "\n")
	if strings.HasPrefix(b, "```") || strings.HasPrefix(b, "|") || strings.HasPrefix(b, "#") || strings.Contains(b, "<!--") || strings.HasSuffix(b, "```") {
		return ""
	}
	return b
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

// sigDigits counts the significant digits of a figure as written.
func sigDigits(f string) int {
	d := strings.TrimLeft(strings.NewReplacer(",", "", ".", "").Replace(f), "0")
	return len(d)
}

// plainNumber matches a number without thousands separators.
var plainNumber = regexp.MustCompile(`\d+(?:\.\d+)?`)

// outputFigures returns the numbers an output shows, read both with
// thousands separators (a table's 1,442.0) and without (a CSV's 1,64128).
func outputFigures(s string) []string {
	return append(figure.FindAllString(s, -1), plainNumber.FindAllString(s, -1)...)
}

// heading matches a Markdown heading line.
var heading = regexp.MustCompile(`(?m)^#+ `)

// sectionOf returns the offset of the last heading at or before i (0
// before the first).
func sectionOf(doc string, i int) int {
	sec := 0
	for _, loc := range heading.FindAllStringIndex(doc[:i], -1) {
		sec = loc[0]
	}
	return sec
}

// TestProseFigureCheck: the checker finds a stale figure and accepts the
// forms the docs write shown ones in.
func TestProseFigureCheck(t *testing.T) {
	out := outputFigures("| 954 | 959,888 | 125.81 | 2.267 |\nrow,1,64128,0.645")
	for _, c := range []struct {
		fig  string
		want bool
	}{
		{"954", true}, {"959,888", true}, {"125.8", true}, {"2.3", true}, {"64,128", true}, {"0.6", true},
		{"0.7", false}, {"955", false}, {"125.9", false}, {"2.27", true}, {"2.26", false},
	} {
		if got := shows(c.fig, out); got != c.want {
			t.Errorf("shows(%s) = %v, want %v", c.fig, got, c.want)
		}
	}
	got := figuresIn("With the host tier, 954 requests loaded 959,888 tokens (2.3 ms) on an RTX 4090 " +
		"and H100 with Llama-3.1-8B, vLLM 0.19–0.23, PR #34102, 16 GB, 1,000 blocks.")
	if want := "954 959,888 2.3 1,000"; strings.Join(got, " ") != want {
		t.Errorf("figuresIn = %q, want %q", got, want)
	}
}
