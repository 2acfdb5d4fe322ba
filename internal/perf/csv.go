package perf

import (
	"io"

	"github.com/servesim/servesim/internal/csvtable"
)

// table reads one profile CSV (csvtable: columns by name, so extra
// provenance columns of newer profilers are ignored; errors name the file
// and line) with the profile's own field rules on top.
type table struct{ *csvtable.Table }

// newTable reads the header and checks that every required column exists.
func newTable(name string, r io.Reader, required ...string) (table, error) {
	t, err := csvtable.New(name, r, required...)
	return table{t}, err
}

// key parses a non-negative integer grid coordinate.
func (t table) key(c string) (float64, error) {
	v, err := t.Count(c)
	return float64(v), err
}

// num parses a finite float. nonNeg additionally rejects negative values.
func (t table) num(c string, nonNeg bool) (float64, error) {
	if nonNeg {
		return t.NonNeg(c)
	}
	return t.Float(c)
}

// MaxTimeUs bounds a profiled time (one op of one layer, or one sampler
// call): 10 s. Larger values are data errors, and they would overflow the
// nanosecond clock once summed over layers and steps.
const MaxTimeUs = 1e7

// timeUs parses a profiled time in microseconds: finite, >= 0 and at most
// MaxTimeUs.
func (t table) timeUs(c string) (float64, error) {
	v, err := t.num(c, true)
	if err != nil {
		return 0, err
	}
	if v > MaxTimeUs {
		return 0, t.Errorf("column %s: %q exceeds %g us (10 s for one op of one layer); check the profile's units", c, t.Str(c), float64(MaxTimeUs))
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
	for err := range t.Rows() {
		if err != nil {
			return nil, err
		}
		layer := t.Str("layer")
		if layer == "" {
			return nil, t.Errorf("column layer is empty")
		}
		x, err := t.key(axis)
		if err != nil {
			return nil, err
		}
		y, err := t.timeUs("time_us")
		if err != nil {
			return nil, err
		}
		raw[layer] = append(raw[layer], point{x: x, y: y * usToNs, line: t.Line()})
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
