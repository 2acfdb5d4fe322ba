// Package csvtable reads CSV tables whose first row is a header: columns
// are found by name (extra columns are ignored), fields are parsed with
// range checks, and every error names the file and line ("file:line:
// what"). The profile readers of perf and calibrate share it.
package csvtable

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"strconv"
	"strings"
)

// ErrEmpty is returned (wrapped) by New for a file without a header row.
var ErrEmpty = errors.New("empty file")

// MaxCount bounds the integers Count accepts (2^40): grid coordinates and
// token counts beyond it are data errors.
const MaxCount = 1 << 40

// Table is a CSV file being read row by row. Leading spaces of fields are
// trimmed, lines starting with '#' are comments, and a UTF-8 byte order
// mark before the header is ignored.
type Table struct {
	name   string
	r      *csv.Reader
	col    map[string]int
	header []string
	rec    []string
	line   int
}

// New reads the header of the CSV in r, named name in messages, and checks
// that every required column exists. A header naming one column twice is
// an error.
func New(name string, r io.Reader, required ...string) (*Table, error) {
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	cr.Comment = '#'
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w, want a header with columns %s", name, ErrEmpty, strings.Join(required, ","))
	}
	if err != nil {
		return nil, wrap(name, err)
	}
	t := &Table{name: name, r: cr, col: make(map[string]int, len(header)), header: make([]string, len(header))}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := t.col[h]; dup {
			return nil, fmt.Errorf("%s:1: column %q appears twice in the header", name, h)
		}
		t.col[h] = i
		t.header[i] = h
	}
	var missing []string
	for _, c := range required {
		if _, ok := t.col[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s:1: header %q lacks column(s) %s", name, strings.Join(header, ","), strings.Join(missing, ","))
	}
	return t, nil
}

// Next advances to the next row; it returns false at the end of the file.
func (t *Table) Next() (bool, error) {
	rec, err := t.r.Read()
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) && errors.Is(err, csv.ErrFieldCount) {
			return false, fmt.Errorf("%s:%d: %w: %d, want %d (%s)", t.name, pe.Line, csv.ErrFieldCount, len(rec), len(t.header), strings.Join(t.header, ","))
		}
		return false, wrap(t.name, err)
	}
	t.rec = rec
	t.line, _ = t.r.FieldPos(0)
	return true, nil
}

// Rows iterates over the remaining rows: it yields nil with each row
// current, or a read error once and stops. A loop over it returns on the
// error:
//
//	for err := range t.Rows() {
//		if err != nil {
//			return err
//		}
//		... t.Str(c), t.Count(c) ...
//	}
func (t *Table) Rows() iter.Seq[error] {
	return func(yield func(error) bool) {
		for {
			ok, err := t.Next()
			if err != nil {
				yield(err)
				return
			}
			if !ok || !yield(nil) {
				return
			}
		}
	}
}

// wrap turns an encoding/csv error into "file:line: what".
func wrap(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d: %w", name, pe.Line, pe.Err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// Name is the file name used in messages.
func (t *Table) Name() string { return t.name }

// Line is the line number of the current row.
func (t *Table) Line() int { return t.line }

// Header returns the column names of the header in file order, spaces
// trimmed, for readers that accept only an exact set of columns.
func (t *Table) Header() []string { return append([]string(nil), t.header...) }

// Has reports whether the header has column c.
func (t *Table) Has(c string) bool {
	_, ok := t.col[c]
	return ok
}

// Str returns column c of the current row, spaces trimmed. c must be a
// required column or one Has reported.
func (t *Table) Str(c string) string { return strings.TrimSpace(t.rec[t.col[c]]) }

// Errorf formats an error located at the current row: "file:line: what".
func (t *Table) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", t.name, t.line, fmt.Sprintf(format, args...))
}

// Count parses column c as an integer in [0, MaxCount].
func (t *Table) Count(c string) (int64, error) {
	s := t.Str(c)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > MaxCount {
		return 0, t.Errorf("column %s: %q is not a non-negative integer", c, s)
	}
	return v, nil
}

// Float parses column c as a finite number.
func (t *Table) Float(c string) (float64, error) {
	s := t.Str(c)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, t.Errorf("column %s: %q is not a finite number", c, s)
	}
	return v, nil
}

// NonNeg parses column c as a finite number >= 0.
func (t *Table) NonNeg(c string) (float64, error) {
	v, err := t.Float(c)
	if err != nil {
		return 0, err
	}
	if v < 0 {
		return 0, t.Errorf("column %s: %q is negative", c, t.Str(c))
	}
	return v, nil
}
