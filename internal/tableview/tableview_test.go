package tableview

import (
	"strings"
	"testing"
)

const sweepCSV = `point,num_points,sweep_id,instances[0].tp,instances[0].count,requests_total,finished,ttft_ms_p99,slo_attainment,goodput_rps,slo_targets_met,error
0,4,ab,2,1,10,10,2.080899072e+06,,,false,
1,4,ab,2,2,10,10,1324.544,,,true,
2,4,ab,4,1,10,10,773.888,,,true,
3,4,ab,8,1,10,0,,,,,"does not fit, at all"
`

func read(t *testing.T) *Data {
	t.Helper()
	d, err := Read("s.csv", strings.NewReader(sweepCSV))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestApply: columns by name and as a product, formats, filters, sorting
// (numbers as numbers, descending, empty cells last) and limits, against
// hand-made expectations.
func TestApply(t *testing.T) {
	d := read(t)
	for _, c := range []struct {
		name  string
		cols  string
		view  View
		want  [][]string
		label []string
	}{
		{"formats", "instances[0].tp*instances[0].count=GPUs,ttft_ms_p99:.0f=p99,slo_targets_met:yesno", View{},
			[][]string{{"2", "2,080,899", "no"}, {"4", "1,325", "yes"}, {"4", "774", "yes"}, {"8", "", ""}}, []string{"GPUs", "p99", "slo_targets_met"}},
		{"plain number out of exponent form", "ttft_ms_p99", View{Limit: 1}, [][]string{{"2080899.072"}}, []string{"ttft_ms_p99"}},
		{"fewest GPUs meeting the targets", "point", View{Where: []Filter{{"slo_targets_met", "true", false}}, Sort: "instances[0].tp*instances[0].count", Limit: 1},
			[][]string{{"1"}}, nil},
		{"descending, empty last", "point", View{Sort: "-ttft_ms_p99"}, [][]string{{"0"}, {"1"}, {"2"}, {"3"}}, nil},
		{"ascending, empty last", "point", View{Sort: "ttft_ms_p99"}, [][]string{{"2"}, {"1"}, {"0"}, {"3"}}, nil},
		{"quotient and percentage", "finished/requests_total:.1%", View{}, [][]string{{"100.0 %"}, {"100.0 %"}, {"100.0 %"}, {"0.0 %"}}, nil},
		{"millions and billions", "ttft_ms_p99:.1k,ttft_ms_p99:.3M,ttft_ms_p99:.2G", View{Limit: 2}, [][]string{{"2,080.9", "2.081", "0.00"}, {"1.3", "0.001", "0.00"}}, nil},
		{"quoted text", "error", View{Where: []Filter{{"point", "3", false}}}, [][]string{{"does not fit, at all"}}, nil},
		{"not equal", "point", View{Where: []Filter{{"slo_targets_met", "true", true}}}, [][]string{{"0"}, {"3"}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			cols, err := ParseColumns(c.cols)
			if err != nil {
				t.Fatal(err)
			}
			c.view.Columns = cols
			tb, err := d.Apply(c.view)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(flat(tb.Cells), "|") != strings.Join(flat(c.want), "|") || len(tb.Cells) != len(c.want) {
				t.Errorf("cells %q, want %q", tb.Cells, c.want)
			}
			if c.label != nil && strings.Join(tb.Labels, "|") != strings.Join(c.label, "|") {
				t.Errorf("labels %q, want %q", tb.Labels, c.label)
			}
		})
	}
}

func flat(rows [][]string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, strings.Join(r, ";"))
	}
	return out
}

// TestErrors: an unknown column names the closest ones; bad formats and
// specs say what is wanted.
func TestErrors(t *testing.T) {
	d := read(t)
	cols, err := ParseColumns("ttft_p99")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Apply(View{Columns: cols}); err == nil || !strings.Contains(err.Error(), `s.csv has no column "ttft_p99"; the closest are ttft_ms_p99`) {
		t.Errorf("unknown column: %v", err)
	}
	for spec, want := range map[string]string{
		"a:.xf":  `format ".xf": want .Nf`,
		":.1f=x": "no column name",
		"":       "no columns given",
	} {
		if _, err := ParseColumns(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", spec, err, want)
		}
	}
	if _, err := ParseFilter("nothing"); err == nil {
		t.Error("a filter without = accepted")
	}
	if f, err := ParseFilter("a != b"); err != nil || f != (Filter{"a", "b", true}) {
		t.Errorf("a != b: %+v %v", f, err)
	}
}

// TestRender: Markdown escapes pipes; text aligns; the default columns of
// a sweep CSV are its grid values, the metrics it has, the targets'
// verdict and the error column (some row has them), not the empty SLO
// attainment.
func TestRender(t *testing.T) {
	tb := &Table{Labels: []string{"a", "b"}, Cells: [][]string{{"x|y", "1,000"}}}
	var md strings.Builder
	if err := tb.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if want := "| a | b |\n|---|---|\n| x\\|y | 1,000 |\n"; md.String() != want {
		t.Errorf("markdown %q, want %q", md.String(), want)
	}
	var txt strings.Builder
	if err := tb.Text(&txt); err != nil {
		t.Fatal(err)
	}
	if want := "    a      b\n  x|y  1,000\n"; txt.String() != want {
		t.Errorf("text %q, want %q", txt.String(), want)
	}
	var names []string
	for _, c := range read(t).DefaultColumns() {
		names = append(names, c.Expr)
	}
	if got, want := strings.Join(names, ","), "point,instances[0].tp,instances[0].count,finished,ttft_ms_p99,slo_targets_met,error"; got != want {
		t.Errorf("default columns %s, want %s", got, want)
	}
	for _, c := range []struct{ in, want string }{{"1234567.5", "1,234,567.5"}, {"-1000", "-1,000"}, {"999", "999"}, {"12", "12"}} {
		if got := Thousands(c.in); got != c.want {
			t.Errorf("Thousands(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestPivot: the first column keys the rows, each other column is spread
// over the pivot column's values in order of appearance, labelled with
// the given labels; a missing combination is empty; the limit counts
// pivoted rows; a label count that does not match is an error.
func TestPivot(t *testing.T) {
	d, err := Read("p.csv", strings.NewReader("c,mode,tpot\n1,off,10\n1,on,5\n8,off,12\n8,on,7\n32,off,16\n"))
	if err != nil {
		t.Fatal(err)
	}
	cols, err := ParseColumns("c=clients,tpot:.1f=TPOT")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePivot("mode=speculation off;on")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := d.Apply(View{Columns: cols, Pivot: p, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(tb.Labels, "|"), "clients|TPOT, speculation off|TPOT, on"; got != want {
		t.Errorf("labels %s, want %s", got, want)
	}
	if got, want := strings.Join(flat(tb.Cells), "|"), "1;10.0;5.0|8;12.0;7.0|32;16.0;"; got != want {
		t.Errorf("cells %s, want %s", got, want)
	}
	p.Labels = []string{"one"}
	if _, err := d.Apply(View{Columns: cols, Pivot: p}); err == nil || !strings.Contains(err.Error(), "1 labels for 2 values (off | on)") {
		t.Errorf("label count: %v", err)
	}
	if _, err := ParsePivot("=a;b"); err == nil {
		t.Error("a pivot without a column accepted")
	}
}
