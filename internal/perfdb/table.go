package perfdb

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"

	"github.com/parquet-go/parquet-go"
)

// colKind is the type a column must have.
type colKind int

const (
	colInt colKind = iota
	colFloat
	colString
)

func (k colKind) String() string {
	switch k {
	case colInt:
		return "an integer"
	case colFloat:
		return "a floating-point number"
	}
	return "a string"
}

// column names one column a table must have and its kind.
type column struct {
	name string
	kind colKind
	// optional columns read as 0 (or "") when the file lacks them (older
	// tables have no window_size).
	optional bool
}

// record is one row's values of the requested columns, in request order:
// ints and floats in num (ints converted exactly up to 2^53), strings in
// str.
type record struct {
	num []float64
	str []string
}

// readTable reads the named columns of the parquet file at path and calls
// row for every row. A missing column, a column of the wrong type, a null
// or a non-finite value is an error naming the file, the column and the
// row.
func readTable(fsys fs.FS, path string, cols []column, row func(r *record) error) (int, error) {
	data, err := fs.ReadFile(fsys, path)
	if err != nil {
		return 0, err
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return 0, fmt.Errorf("%s: not a readable parquet file: %w", path, err)
	}
	leaves := f.Schema().Fields()
	idx := make([]int, len(cols))
	for i, c := range cols {
		idx[i] = -1
		for j, l := range leaves {
			if l.Name() != c.name {
				continue
			}
			if !l.Leaf() {
				return 0, fmt.Errorf("%s: column %q is not a plain column", path, c.name)
			}
			if !kindMatches(l.Type().Kind(), c.kind) {
				return 0, fmt.Errorf("%s: column %q has parquet type %s, want %s", path, c.name, l.Type().Kind(), c.kind)
			}
			idx[i] = j
		}
		if idx[i] < 0 && !c.optional {
			return 0, fmt.Errorf("%s: missing column %q", path, c.name)
		}
	}
	rd := parquet.NewReader(f)
	defer rd.Close()
	buf := make([]parquet.Row, 256)
	rec := &record{num: make([]float64, len(cols)), str: make([]string, len(cols))}
	n := 0
	for {
		k, rerr := rd.ReadRows(buf)
		for _, r := range buf[:k] {
			n++
			for i, c := range cols {
				j := idx[i]
				if j < 0 {
					rec.num[i], rec.str[i] = 0, ""
					continue
				}
				if j >= len(r) || r[j].IsNull() {
					return n, fmt.Errorf("%s: row %d: column %q is empty", path, n, c.name)
				}
				v := r[j]
				switch c.kind {
				case colInt:
					rec.num[i] = float64(v.Int64())
				case colFloat:
					x := v.Double()
					if v.Kind() == parquet.Float {
						x = float64(v.Float())
					}
					if math.IsNaN(x) || math.IsInf(x, 0) {
						return n, fmt.Errorf("%s: row %d: column %q is %g, want a finite number", path, n, c.name, x)
					}
					rec.num[i] = x
				case colString:
					rec.str[i] = string(v.ByteArray())
				}
			}
			if err := row(rec); err != nil {
				return n, fmt.Errorf("%s: row %d: %w", path, n, err)
			}
		}
		if errors.Is(rerr, io.EOF) {
			return n, nil
		}
		if rerr != nil {
			return n, fmt.Errorf("%s: reading rows: %w", path, rerr)
		}
	}
}

func kindMatches(k parquet.Kind, want colKind) bool {
	switch want {
	case colInt:
		return k == parquet.Int32 || k == parquet.Int64
	case colFloat:
		return k == parquet.Double || k == parquet.Float
	}
	return k == parquet.ByteArray
}
