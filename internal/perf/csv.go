package perf

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// table reads one profile CSV with a header row. Columns are found by name,
// so extra columns (provenance fields of newer profilers) are ignored. Every
// error names the file and line.
type table struct {
	name string // file name used in messages, e.g. "…/tp1/dense.csv"
	r    *csv.Reader
	col  map[string]int
	rec  []string
	line int
}

// newTable reads the header and checks that every required column exists.
func newTable(name string, r io.Reader, required ...string) (*table, error) {
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	cr.Comment = '#'
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty file, want a header with columns %s",
			name, strings.Join(required, ","))
	}
	if err != nil {
		return nil, csvErr(name, err)
	}
	t := &table{name: name, r: cr, col: make(map[string]int, len(header))}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := t.col[h]; dup {
			return nil, fmt.Errorf("%s:1: column %q appears twice in the header", name, h)
		}
		t.col[h] = i
	}
	var missing []string
	for _, c := range required {
		if _, ok := t.col[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s:1: header %q lacks column(s) %s",
			name, strings.Join(header, ","), strings.Join(missing, ","))
	}
	return t, nil
}

// next advances to the next record; it returns false at the end of the file.
func (t *table) next() (bool, error) {
	rec, err := t.r.Read()
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, csvErr(t.name, err)
	}
	t.rec = rec
	t.line, _ = t.r.FieldPos(0)
	return true, nil
}

// csvErr turns an encoding/csv error into "file:line: what".
func csvErr(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d: %w", name, pe.Line, pe.Err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// str returns the named column of the current record.
func (t *table) str(c string) string { return strings.TrimSpace(t.rec[t.col[c]]) }

// errorf formats an error located at the current line.
func (t *table) errorf(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", t.name, t.line, fmt.Sprintf(format, args...))
}

// key parses a non-negative integer grid coordinate.
func (t *table) key(c string) (float64, error) {
	s := t.str(c)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > 1<<40 {
		return 0, t.errorf("column %s: %q is not a non-negative integer", c, s)
	}
	return float64(v), nil
}

// num parses a finite float. nonNeg additionally rejects negative values.
func (t *table) num(c string, nonNeg bool) (float64, error) {
	s := t.str(c)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, t.errorf("column %s: %q is not a finite number", c, s)
	}
	if nonNeg && v < 0 {
		return 0, t.errorf("column %s: %q is negative", c, s)
	}
	return v, nil
}

// MaxTimeUs bounds a profiled time (one op of one layer, or one sampler
// call): 10 s. Larger values are data errors, and they would overflow the
// nanosecond clock once summed over layers and steps.
const MaxTimeUs = 1e7

// timeUs parses a profiled time in microseconds: finite, >= 0 and at most
// MaxTimeUs.
func (t *table) timeUs(c string) (float64, error) {
	v, err := t.num(c, true)
	if err != nil {
		return 0, err
	}
	if v > MaxTimeUs {
		return 0, t.errorf("column %s: %q exceeds %g us (10 s for one op of one layer); check the profile's units", c, t.str(c), float64(MaxTimeUs))
	}
	return v, nil
}

// usToNs converts a table time in microseconds to nanoseconds.
const usToNs = 1000.0

// readLayerCSV parses dense.csv or per_sequence.csv ("layer,<axis>,time_us")
// into one function per layer, in nanoseconds.
func readLayerCSV(name string, r io.Reader, axis string) (map[string]*pwl, error) {
	t, err := newTable(name, r, "layer", axis, "time_us")
	if err != nil {
		return nil, err
	}
	raw := map[string][]point{}
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		layer := t.str("layer")
		if layer == "" {
			return nil, t.errorf("column layer is empty")
		}
		x, err := t.key(axis)
		if err != nil {
			return nil, err
		}
		y, err := t.timeUs("time_us")
		if err != nil {
			return nil, err
		}
		raw[layer] = append(raw[layer], point{x: x, y: y * usToNs, line: t.line})
	}
	out := make(map[string]*pwl, len(raw))
	for layer, pts := range raw {
		f, err := newPWL(name, axis+" of layer "+layer, pts)
		if err != nil {
			return nil, err
		}
		out[layer] = &f
	}
	return out, nil
}
