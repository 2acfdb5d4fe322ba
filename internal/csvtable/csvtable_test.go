package csvtable

import (
	"bytes"
	"encoding/csv"
	"errors"
	"strconv"
	"strings"
	"testing"

	_ "github.com/servesim/servesim/internal/testseed"
	"pgregory.net/rapid"
)

// Header problems are reported at line 1 (or as an empty file), naming
// the file and what is wrong.
func TestNewErrors(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"empty", "", "t.csv: empty file, want a header with columns a,b"},
		{"only a comment", "# nothing\n", "t.csv: empty file"},
		{"missing", "a,c\n1,2\n", `t.csv:1: header "a,c" lacks column(s) b`},
		{"duplicate", "a,b,a\n", `t.csv:1: column "a" appears twice in the header`},
		{"bare quote", "a,b\"x\n", `t.csv:1: bare " in non-quoted-field`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New("t.csv", strings.NewReader(c.in), "a", "b")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
	if _, err := New("t.csv", strings.NewReader(""), "a"); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty file: %v is not ErrEmpty", err)
	}
}

// Columns are found by name whatever their order, extra columns, a byte
// order mark, comments and leading spaces are ignored, and Line counts
// physical lines (a quoted field spanning two lines moves the next row's
// line by two).
func TestRowsByName(t *testing.T) {
	in := "\ufeffextra, b ,a\n# a comment\nx, 2, 1.5\n\"two\nlines\",4,-3\n"
	tb, err := New("t.csv", strings.NewReader(in), "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	if !tb.Has("extra") || tb.Has("c") || tb.Name() != "t.csv" {
		t.Fatalf("Has/Name: %v %v %q", tb.Has("extra"), tb.Has("c"), tb.Name())
	}
	type row struct {
		line int
		a    float64
		b    int64
	}
	var got []row
	for {
		ok, err := tb.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		a, err := tb.Float("a")
		if err != nil {
			t.Fatal(err)
		}
		b, err := tb.Count("b")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, row{tb.Line(), a, b})
	}
	want := []row{{3, 1.5, 2}, {4, -3, 4}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("rows %v, want %v", got, want)
	}
}

// Field parsers reject what their range excludes, at file:line.
func TestFieldErrors(t *testing.T) {
	tooBig := strconv.FormatInt(MaxCount+1, 10)
	for _, c := range []struct {
		name, field string
		parse       func(*Table) error
		want        string
	}{
		{"count text", "x", count, `t.csv:2: column v: "x" is not a non-negative integer`},
		{"count negative", "-1", count, `t.csv:2: column v: "-1" is not a non-negative integer`},
		{"count fraction", "1.5", count, `is not a non-negative integer`},
		{"count too big", tooBig, count, `"` + tooBig + `" is not a non-negative integer`},
		{"float NaN", "NaN", float, `t.csv:2: column v: "NaN" is not a finite number`},
		{"float Inf", "-Inf", float, `is not a finite number`},
		{"float empty", "", float, `column v: "" is not a finite number`},
		{"nonneg negative", "-0.5", nonNeg, `t.csv:2: column v: "-0.5" is negative`},
		{"nonneg NaN", "NaN", nonNeg, `is not a finite number`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb, err := New("t.csv", strings.NewReader("v,w\n"+c.field+",0\n"), "v")
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := tb.Next(); !ok || err != nil {
				t.Fatalf("Next: %v %v", ok, err)
			}
			if err := c.parse(tb); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
	tb, err := New("t.csv", strings.NewReader("a,b\n1,2\n3\n"), "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Next(); err == nil || !strings.Contains(err.Error(), "t.csv:3: wrong number of fields: 1, want 2 (a,b)") {
		t.Fatalf("short row: %v", err)
	}
}

func count(t *Table) error  { _, err := t.Count("v"); return err }
func float(t *Table) error  { _, err := t.Float("v"); return err }
func nonNeg(t *Table) error { _, err := t.NonNeg("v"); return err }

// Any table encoding/csv writes reads back: every count and number
// exactly, in order, each row at its line.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 20).Draw(rt, "rows")
		counts := make([]int64, n)
		nums := make([]float64, n)
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		if err := w.Write([]string{"num", "count"}); err != nil {
			rt.Fatal(err)
		}
		for i := range n {
			counts[i] = rapid.Int64Range(0, MaxCount).Draw(rt, "count")
			nums[i] = rapid.Float64Range(-1e12, 1e12).Draw(rt, "num")
			if err := w.Write([]string{strconv.FormatFloat(nums[i], 'g', -1, 64), strconv.FormatInt(counts[i], 10)}); err != nil {
				rt.Fatal(err)
			}
		}
		w.Flush()
		tb, err := New("r.csv", &buf, "count", "num")
		if err != nil {
			rt.Fatal(err)
		}
		for i := 0; ; i++ {
			ok, err := tb.Next()
			if err != nil {
				rt.Fatal(err)
			}
			if !ok {
				if i != n {
					rt.Fatalf("%d rows read, %d written", i, n)
				}
				return
			}
			c, err := tb.Count("count")
			if err != nil {
				rt.Fatal(err)
			}
			v, err := tb.Float("num")
			if err != nil {
				rt.Fatal(err)
			}
			if c != counts[i] || v != nums[i] || tb.Line() != i+2 {
				rt.Fatalf("row %d: %d %g at line %d, want %d %g at %d", i, c, v, tb.Line(), counts[i], nums[i], i+2)
			}
		}
	})
}

// Rows yields every row, then a read error once, and nothing after it.
func TestRowsStopsAtError(t *testing.T) {
	tb, err := New("t.csv", strings.NewReader("a\n1\n2\n3,4\n5\n"), "a")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for err := range tb.Rows() {
		if err != nil {
			got = append(got, err.Error())
			continue
		}
		got = append(got, tb.Str("a"))
	}
	want := []string{"1", "2", "t.csv:4: wrong number of fields: 2, want 1 (a)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("yielded %q, want %q", got, want)
	}
	// Breaking out early stops the reading: the next row is still there.
	tb, err = New("t.csv", strings.NewReader("a\n1\n2\n"), "a")
	if err != nil {
		t.Fatal(err)
	}
	for err := range tb.Rows() {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	if ok, err := tb.Next(); !ok || err != nil || tb.Str("a") != "2" || tb.Line() != 3 {
		t.Fatalf("after break: %v %v %q line %d", ok, err, tb.Str("a"), tb.Line())
	}
}
