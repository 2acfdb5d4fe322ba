// Package tableview renders chosen columns of a results CSV (a sweep's or
// merge's output, or any CSV with a header) as an aligned terminal table
// or a Markdown table: columns by name or as the product or quotient of
// two columns, each with an optional number format and label; rows
// filtered by exact values, sorted and limited. The docs' tables are made
// with it, so they are regenerated rather than typed.
package tableview

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/servesim/servesim/internal/csvtable"
	"github.com/servesim/servesim/internal/nearest"
)

// Data is a CSV read whole: its header and rows, with the line of each row
// for messages.
type Data struct {
	Name   string
	Header []string
	Rows   [][]string
	Lines  []int
	col    map[string]int
}

// Read reads a CSV with a header from r, named name in messages.
func Read(name string, r io.Reader) (*Data, error) {
	t, err := csvtable.New(name, r)
	if err != nil {
		return nil, err
	}
	d := &Data{Name: name, Header: t.Header(), col: map[string]int{}}
	for i, h := range d.Header {
		d.col[h] = i
	}
	for err := range t.Rows() {
		if err != nil {
			return nil, err
		}
		row := make([]string, len(d.Header))
		for i, h := range d.Header {
			row[i] = t.Str(h)
		}
		d.Rows = append(d.Rows, row)
		d.Lines = append(d.Lines, t.Line())
	}
	return d, nil
}

// Column is one output column: Expr is a column name, or two names joined
// by '*' or '/'; Format how numbers are shown (see ParseColumns); Label
// the header shown (Expr when empty).
type Column struct {
	Expr, Format, Label string
}

// ParseColumns parses a --cols list: comma-separated specs
// EXPR[:FORMAT][=LABEL]. FORMAT is
//
//	.Nf    N decimals, thousands separated by commas (.0f: 1,121,452)
//	.N%    the value times 100 with N decimals and " %" (an attainment)
//	.Nk    the value in thousands with N decimals (ms as s)
//	.NM    the value in millions with N decimals (bytes as MB)
//	.NG    the value in billions with N decimals (bytes as GB)
//	yesno  true/false as yes/no
//
// and without one a cell is shown as in the file (a number in exponent
// form written out).
func ParseColumns(spec string) ([]Column, error) {
	var out []Column
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		var c Column
		part, c.Label, _ = strings.Cut(part, "=")
		c.Expr, c.Format, _ = strings.Cut(part, ":")
		c.Expr, c.Label = strings.TrimSpace(c.Expr), strings.TrimSpace(c.Label)
		if c.Expr == "" {
			return nil, fmt.Errorf("column %q: no column name before the format or label", part)
		}
		if _, err := formatter(c.Format); err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Expr, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no columns given")
	}
	return out, nil
}

// Filter keeps rows whose column Col holds exactly Value (or, with Not,
// anything else).
type Filter struct {
	Col, Value string
	Not        bool
}

// ParseFilter parses COL=VALUE or COL!=VALUE.
func ParseFilter(s string) (Filter, error) {
	col, val, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(strings.TrimSuffix(col, "!")) == "" {
		return Filter{}, fmt.Errorf("%q: want COLUMN=VALUE or COLUMN!=VALUE", s)
	}
	col, not := strings.CutSuffix(col, "!")
	return Filter{strings.TrimSpace(col), strings.TrimSpace(val), not}, nil
}

// View selects what is shown. Sort is an expression (a leading '-' sorts
// descending; numbers compare as numbers, empty cells last); Limit > 0
// keeps the first rows after sorting.
type View struct {
	Columns []Column
	Where   []Filter
	Sort    string
	Limit   int
	Pivot   *Pivot
}

// Pivot spreads the values of column Col across columns: the first of
// View.Columns keys the rows (one row per distinct value, in order of
// appearance) and each other column is repeated once per distinct value
// of Col, labelled "LABEL, VALUE" with Labels[i] for the i-th value (in
// order of appearance) when given. A cell with no row is empty.
type Pivot struct {
	Col    string
	Labels []string
}

// ParsePivot parses COL[=LABEL;LABEL;...].
func ParsePivot(s string) (*Pivot, error) {
	col, labels, hasLabels := strings.Cut(s, "=")
	p := &Pivot{Col: strings.TrimSpace(col)}
	if p.Col == "" {
		return nil, fmt.Errorf("%q: want COLUMN[=LABEL;LABEL;...]", s)
	}
	if hasLabels {
		for l := range strings.SplitSeq(labels, ";") {
			p.Labels = append(p.Labels, strings.TrimSpace(l))
		}
	}
	return p, nil
}

// Table is the rendered content: labels and formatted cells.
type Table struct {
	Labels []string
	Cells  [][]string
}

// Apply selects, sorts and formats d's rows by v.
func (d *Data) Apply(v View) (*Table, error) {
	type colFn struct {
		val func(row []string) (string, float64, bool)
		fmt func(raw string, x float64, num bool) string
	}
	fns := make([]colFn, len(v.Columns))
	t := &Table{}
	for i, c := range v.Columns {
		val, err := d.expr(c.Expr)
		if err != nil {
			return nil, err
		}
		f, err := formatter(c.Format)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Expr, err)
		}
		fns[i] = colFn{val, f}
		label := c.Label
		if label == "" {
			label = c.Expr
		}
		t.Labels = append(t.Labels, label)
	}
	var keep []int
	for i, row := range d.Rows {
		ok := true
		for _, f := range v.Where {
			k, err := d.index(f.Col)
			if err != nil {
				return nil, fmt.Errorf("--where: %w", err)
			}
			if (row[k] == f.Value) == f.Not {
				ok = false
				break
			}
		}
		if ok {
			keep = append(keep, i)
		}
	}
	if v.Sort != "" {
		expr, desc := strings.CutPrefix(v.Sort, "-")
		val, err := d.expr(expr)
		if err != nil {
			return nil, fmt.Errorf("--sort: %w", err)
		}
		slices.SortStableFunc(keep, func(a, b int) int {
			return compareCells(val, d.Rows[a], d.Rows[b], desc)
		})
	}
	for _, i := range keep {
		cells := make([]string, len(fns))
		for k, fn := range fns {
			raw, x, num := fn.val(d.Rows[i])
			cells[k] = fn.fmt(raw, x, num)
		}
		t.Cells = append(t.Cells, cells)
	}
	if v.Pivot != nil {
		k, err := d.index(v.Pivot.Col)
		if err != nil {
			return nil, fmt.Errorf("--pivot: %w", err)
		}
		pv := make([]string, len(keep))
		for j, i := range keep {
			pv[j] = d.Rows[i][k]
		}
		if t, err = t.pivot(pv, v.Pivot.Labels); err != nil {
			return nil, err
		}
	}
	if v.Limit > 0 && len(t.Cells) > v.Limit {
		t.Cells = t.Cells[:v.Limit]
	}
	return t, nil
}

// pivot spreads t by the pivot values pv of its rows (see Pivot): the
// first column keys the rows.
func (t *Table) pivot(pv []string, labels []string) (*Table, error) {
	if len(t.Labels) < 2 {
		return nil, errors.New("--pivot: give a key column and at least one value column in --cols")
	}
	var values, keys []string
	vi, ki := map[string]int{}, map[string]int{}
	for j, r := range t.Cells {
		if _, ok := vi[pv[j]]; !ok {
			vi[pv[j]] = len(values)
			values = append(values, pv[j])
		}
		if _, ok := ki[r[0]]; !ok {
			ki[r[0]] = len(keys)
			keys = append(keys, r[0])
		}
	}
	if len(labels) > 0 && len(labels) != len(values) {
		return nil, fmt.Errorf("--pivot: %d labels for %d values (%s)", len(labels), len(values), strings.Join(values, " | "))
	}
	if len(labels) == 0 {
		labels = values
	}
	nv := len(t.Labels) - 1
	out := &Table{Labels: []string{t.Labels[0]}}
	for c := 1; c <= nv; c++ {
		for _, l := range labels {
			out.Labels = append(out.Labels, t.Labels[c]+", "+l)
		}
	}
	out.Cells = make([][]string, len(keys))
	for i, k := range keys {
		out.Cells[i] = make([]string, 1+nv*len(values))
		out.Cells[i][0] = k
	}
	filled := make(map[[2]int]bool)
	for j, r := range t.Cells {
		row, col := ki[r[0]], vi[pv[j]]
		if filled[[2]int{row, col}] {
			continue // the first row of a key and value wins
		}
		filled[[2]int{row, col}] = true
		for c := 1; c <= nv; c++ {
			out.Cells[row][1+(c-1)*len(values)+col] = r[c]
		}
	}
	return out, nil
}

// compareCells orders two rows by val: numbers before text, empty cells
// last whatever the direction.
func compareCells(val func([]string) (string, float64, bool), a, b []string, desc bool) int {
	ra, xa, na := val(a)
	rb, xb, nb := val(b)
	switch {
	case ra == "" || rb == "":
		return boolCmp(ra == "", rb == "")
	case na && nb:
		c := cmpFloat(xa, xb)
		if desc {
			c = -c
		}
		return c
	case na != nb:
		return boolCmp(!na, !nb)
	}
	c := strings.Compare(ra, rb)
	if desc {
		c = -c
	}
	return c
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// index finds a column by name, or says which names are near.
func (d *Data) index(name string) (int, error) {
	if k, ok := d.col[name]; ok {
		return k, nil
	}
	near := nearest.Closest(d.Header, func(c string) int { return nearest.Distance(c, name) }, 3)
	return 0, fmt.Errorf("%s has no column %q; the closest are %s (servesim table %[1]s --list lists them all)",
		d.Name, name, strings.Join(near, ", "))
}

// expr compiles a column expression: a name, or A*B or A/B of two names.
// It returns the raw text (the product's or quotient's when computed) and
// the number with whether the cell is one.
func (d *Data) expr(e string) (func(row []string) (string, float64, bool), error) {
	for _, op := range []string{"*", "/"} {
		a, b, ok := strings.Cut(e, op)
		if !ok {
			continue
		}
		ka, err := d.index(strings.TrimSpace(a))
		if err != nil {
			return nil, err
		}
		kb, err := d.index(strings.TrimSpace(b))
		if err != nil {
			return nil, err
		}
		return func(row []string) (string, float64, bool) {
			x, errA := strconv.ParseFloat(row[ka], 64)
			y, errB := strconv.ParseFloat(row[kb], 64)
			if errA != nil || errB != nil || (op == "/" && y == 0) {
				return "", 0, false
			}
			v := x * y
			if op == "/" {
				v = x / y
			}
			return strconv.FormatFloat(v, 'f', -1, 64), v, true
		}, nil
	}
	k, err := d.index(e)
	if err != nil {
		return nil, err
	}
	return func(row []string) (string, float64, bool) {
		x, err := strconv.ParseFloat(row[k], 64)
		return row[k], x, err == nil && !math.IsNaN(x)
	}, nil
}

// formatter returns the cell formatter of a FORMAT (see ParseColumns).
func formatter(f string) (func(raw string, x float64, num bool) string, error) {
	plain := func(raw string, x float64, num bool) string {
		if num && strings.ContainsAny(raw, "eE") {
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
		return raw
	}
	switch {
	case f == "":
		return plain, nil
	case f == "yesno":
		return func(raw string, _ float64, _ bool) string {
			switch raw {
			case "true":
				return "yes"
			case "false":
				return "no"
			}
			return raw
		}, nil
	case strings.HasPrefix(f, ".") && strings.ContainsAny(f[len(f)-1:], "f%kMG"):
		n, err := strconv.Atoi(f[1 : len(f)-1])
		if err != nil || n < 0 || n > 12 {
			break
		}
		scale, unit := map[byte]float64{'f': 1, '%': 100, 'k': 1e-3, 'M': 1e-6, 'G': 1e-9}[f[len(f)-1]], ""
		if f[len(f)-1] == '%' {
			unit = " %"
		}
		return func(raw string, x float64, num bool) string {
			if !num {
				return raw
			}
			return Thousands(strconv.FormatFloat(scale*x, 'f', n, 64)) + unit
		}, nil
	}
	return nil, fmt.Errorf("format %q: want .Nf (N decimals), .N%% (a fraction as a percentage), .Nk, .NM or .NG (thousands, millions or billions: ms as s, bytes as MB or GB) or yesno", f)
}

// Thousands separates the thousands of a decimal number with commas.
func Thousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if hasFrac {
		return sign + b.String() + "." + frac
	}
	return sign + b.String()
}

// Markdown writes t as a Markdown table.
func (t *Table) Markdown(w io.Writer) error {
	var b strings.Builder
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + esc(c) + " |")
		}
		b.WriteString("\n")
	}
	line(t.Labels)
	b.WriteString(strings.Repeat("|---", len(t.Labels)) + "|\n")
	for _, r := range t.Cells {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Text writes t as right-aligned columns for a terminal.
func (t *Table) Text(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	write := func(cells []string) {
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	write(t.Labels)
	for _, r := range t.Cells {
		write(r)
	}
	return tw.Flush()
}

// CSV writes t as CSV.
func (t *Table) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(t.Labels); err != nil {
		return err
	}
	for _, r := range t.Cells {
		if err := cw.Write(r); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// DefaultColumns are the columns shown of a sweep's CSV when none are
// chosen: the point, its grid values (the columns between sweep_id and
// requests_total), throughput and the main latencies, SLO attainment,
// goodput and the percentile targets' verdict when some row has them, and
// the error column when some point failed. For another CSV, every column.
func (d *Data) DefaultColumns() []Column {
	start, end := slices.Index(d.Header, "sweep_id"), slices.Index(d.Header, "requests_total")
	if start < 0 || end < start {
		cols := make([]Column, len(d.Header))
		for i, h := range d.Header {
			cols[i] = Column{Expr: h}
		}
		return cols
	}
	cols := []Column{{Expr: "point"}}
	for _, h := range d.Header[start+1 : end] {
		cols = append(cols, Column{Expr: h})
	}
	for _, c := range []Column{
		{Expr: "finished"},
		{Expr: "throughput_rps", Format: ".3f", Label: "req/s"},
		{Expr: "output_tok_s", Format: ".0f", Label: "out tok/s"},
		{Expr: "ttft_ms_mean", Format: ".1f", Label: "TTFT mean"},
		{Expr: "ttft_ms_p99", Format: ".1f", Label: "TTFT p99"},
		{Expr: "tpot_ms_mean", Format: ".2f", Label: "TPOT mean"},
		{Expr: "tpot_ms_p99", Format: ".2f", Label: "TPOT p99"},
	} {
		if _, ok := d.col[c.Expr]; ok {
			cols = append(cols, c)
		}
	}
	for _, c := range []Column{
		{Expr: "slo_attainment", Format: ".1%", Label: "SLO attainment"},
		{Expr: "goodput_rps", Format: ".3f", Label: "goodput (req/s)"},
		{Expr: "slo_targets_met", Format: "yesno", Label: "targets met"},
		{Expr: "error"},
	} {
		if d.anyValue(c.Expr) {
			cols = append(cols, c)
		}
	}
	return cols
}

// anyValue reports whether column c exists and some row has a value in it.
func (d *Data) anyValue(c string) bool {
	k, ok := d.col[c]
	if !ok {
		return false
	}
	for _, r := range d.Rows {
		if r[k] != "" {
			return true
		}
	}
	return false
}
