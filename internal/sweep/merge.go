package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Input is one shard output to merge.
type Input struct {
	Name string // labels errors
	Data []byte
}

// Format is an output format of a sweep.
type Format int

// Output formats.
const (
	CSV Format = iota
	JSON
)

// DetectFormat tells a JSON output (it starts with '[') from a CSV one.
func DetectFormat(data []byte) Format {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		return JSON
	}
	return CSV
}

// shardRow is one row read from a shard.
type shardRow struct {
	point int
	csv   []string
	json  []byte
	from  string
}

// Merge combines shard outputs of one sweep (all CSV or all JSON, as
// written by Writer) into w, byte for byte the output a single process
// running every point would have written. It is an error if the inputs
// come from different sweeps (sweep_id, columns or num_points differ), if
// a point appears twice, or if a point is missing.
func Merge(w io.Writer, inputs []Input) error {
	if len(inputs) == 0 {
		return errors.New("merge: no inputs")
	}
	format := DetectFormat(inputs[0].Data)
	var (
		header              []string
		headerFrom          string
		numPoints           = -1
		sweepID, sweepIDSrc string
		rows                = map[int]shardRow{}
	)
	check := func(in string, point, n int, id string) error {
		if numPoints < 0 {
			numPoints, sweepID, sweepIDSrc = n, id, in
		}
		if n != numPoints {
			return fmt.Errorf("%s: point %d has num_points %d but %s has %d: the shards come from different grids", in, point, n, sweepIDSrc, numPoints)
		}
		if id != sweepID {
			return fmt.Errorf("%s: point %d has sweep_id %s but %s has %s: the shards come from different sweeps (scenario, grid or flags differ)", in, point, id, sweepIDSrc, sweepID)
		}
		if point < 0 || point >= n {
			return fmt.Errorf("%s: point %d is out of range [0, %d)", in, point, n)
		}
		if prev, dup := rows[point]; dup {
			return fmt.Errorf("%s: point %d is also in %s: the shards overlap (each shard must be run with a different --shard i/n and the same n)", in, point, prev.from)
		}
		return nil
	}
	for _, in := range inputs {
		if len(bytes.TrimSpace(in.Data)) == 0 {
			return fmt.Errorf("%s: empty file (did the shard finish?)", in.Name)
		}
		if f := DetectFormat(in.Data); f != format {
			return fmt.Errorf("%s: mixes CSV and JSON shard outputs (%s is %s)", in.Name, inputs[0].Name, formatName(format))
		}
		if format == JSON {
			var elems []json.RawMessage
			if err := json.Unmarshal(in.Data, &elems); err != nil {
				return fmt.Errorf("%s: not a sweep JSON output: %w", in.Name, err)
			}
			for k, e := range elems {
				var id struct {
					Point     *int   `json:"point"`
					NumPoints int    `json:"num_points"`
					SweepID   string `json:"sweep_id"`
				}
				if err := json.Unmarshal(e, &id); err != nil || id.Point == nil {
					return fmt.Errorf("%s: element %d is not a sweep row (no \"point\")", in.Name, k)
				}
				if err := check(in.Name, *id.Point, id.NumPoints, id.SweepID); err != nil {
					return err
				}
				var c bytes.Buffer
				if err := json.Compact(&c, e); err != nil {
					return fmt.Errorf("%s: element %d: %w", in.Name, k, err)
				}
				rows[*id.Point] = shardRow{point: *id.Point, json: c.Bytes(), from: in.Name}
			}
			continue
		}
		r := csv.NewReader(bytes.NewReader(in.Data))
		recs, err := r.ReadAll()
		if err != nil {
			return fmt.Errorf("%s: not a complete sweep CSV output (did the shard finish?): %w", in.Name, err)
		}
		h := recs[0]
		if len(h) < 3 || h[0] != ColPoint || h[1] != ColNumPoints || h[2] != ColSweepID {
			return fmt.Errorf("%s: not a sweep CSV output (the header must start with %s,%s,%s)", in.Name, ColPoint, ColNumPoints, ColSweepID)
		}
		if header == nil {
			header, headerFrom = h, in.Name
		} else if !equal(header, h) {
			return fmt.Errorf("%s: its columns differ from %s's: the shards come from different grids", in.Name, headerFrom)
		}
		for k, rec := range recs[1:] {
			p, err1 := strconv.Atoi(rec[0])
			n, err2 := strconv.Atoi(rec[1])
			if err1 != nil || err2 != nil {
				return fmt.Errorf("%s: row %d: point and num_points must be integers (got %q, %q)", in.Name, k+1, rec[0], rec[1])
			}
			if err := check(in.Name, p, n, rec[2]); err != nil {
				return err
			}
			rows[p] = shardRow{point: p, csv: rec, from: in.Name}
		}
	}
	if numPoints < 0 {
		return errors.New("merge: the inputs hold no rows")
	}
	if len(rows) != numPoints {
		var missing []string
		for i := 0; i < numPoints && len(missing) < 10; i++ {
			if _, ok := rows[i]; !ok {
				missing = append(missing, strconv.Itoa(i))
			}
		}
		more := ""
		if numPoints-len(rows) > len(missing) {
			more = ", ..."
		}
		return fmt.Errorf("merge: %d of %d points are missing (%s%s): a shard is missing or did not finish", numPoints-len(rows), numPoints, strings.Join(missing, ", "), more)
	}
	sorted := make([]shardRow, 0, len(rows))
	for _, r := range rows {
		sorted = append(sorted, r)
	}
	sort.Slice(sorted, func(a, b int) bool { return sorted[a].point < sorted[b].point })
	if format == JSON {
		for k, r := range sorted {
			sep := ",\n"
			if k == 0 {
				sep = "[\n"
			}
			if _, err := io.WriteString(w, sep+string(r.json)); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, "\n]\n")
		return err
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, r := range sorted {
		if err := cw.Write(r.csv); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func formatName(f Format) string {
	if f == JSON {
		return "JSON"
	}
	return "CSV"
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ExpandInputs turns merge arguments into files: a directory stands for the
// *.csv and *.json files in it, a pattern with * ? or [ for its matches
// (for shells that did not expand it), anything else for itself. exclude
// (the output file) is left out of directories and patterns, and is an
// error when named on its own. The result is sorted and free of
// duplicates; a directory or pattern that matches nothing is an error.
func ExpandInputs(args []string, exclude string) ([]string, error) {
	ex := ""
	if exclude != "" && exclude != "-" {
		var err error
		if ex, err = filepath.Abs(exclude); err != nil {
			return nil, fmt.Errorf("%s: %w", exclude, err)
		}
	}
	seen := map[string]bool{}
	var out []string
	add := func(p string) error {
		a, err := filepath.Abs(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if a == ex || seen[a] {
			return nil
		}
		seen[a] = true
		out = append(out, p)
		return nil
	}
	addAll := func(files []string) error {
		sort.Strings(files)
		for _, f := range files {
			if err := add(f); err != nil {
				return err
			}
		}
		return nil
	}
	for _, a := range args {
		if st, err := os.Stat(a); err == nil && st.IsDir() {
			var found []string
			for _, pat := range []string{"*.csv", "*.json"} {
				m, err := filepath.Glob(filepath.Join(a, pat))
				if err != nil {
					return nil, fmt.Errorf("%s: directory name is not usable as a pattern (%w); list its files instead", a, err)
				}
				found = append(found, m...)
			}
			n := len(out)
			if err := addAll(found); err != nil {
				return nil, err
			}
			if len(out) == n {
				return nil, fmt.Errorf("%s: no *.csv or *.json shard outputs in this directory", a)
			}
			continue
		}
		if strings.ContainsAny(a, "*?[") {
			m, err := filepath.Glob(a)
			if err != nil {
				return nil, fmt.Errorf("%s: bad pattern: %w", a, err)
			}
			if len(m) == 0 {
				return nil, fmt.Errorf("%s: matches no file", a)
			}
			if err := addAll(m); err != nil {
				return nil, err
			}
			continue
		}
		if ex != "" {
			// Named on its own (not through a directory or a pattern,
			// where the output is skipped): it would be read and
			// overwritten.
			if abs, err := filepath.Abs(a); err == nil && abs == ex {
				return nil, fmt.Errorf("%s is named both as the output and as a shard output to merge; write the merged output to another file", a)
			}
		}
		if err := add(a); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no shard outputs to merge")
	}
	return out, nil
}

// ReadInputs reads the named files.
func ReadInputs(names []string) ([]Input, error) {
	ins := make([]Input, len(names))
	for i, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("read shard output: %w", err)
		}
		ins[i] = Input{Name: n, Data: data}
	}
	return ins, nil
}
