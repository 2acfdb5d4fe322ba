package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTableCLI: servesim table shows a sweep's CSV; bad columns, filters,
// formats and files are input errors (exit 2) naming what is wrong.
func TestTableCLI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.csv")
	csv := "point,num_points,sweep_id,seed,requests_total,finished,throughput_rps,slo_attainment,goodput_rps\n0,2,x,1,10,10,2.5,0.9,2.25\n1,2,x,2,10,10,2.75,0.95,2.6125\n"
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"table", path}, 0, "  point  seed  finished  req/s  SLO attainment  goodput (req/s)\n      0     1        10  2.500          90.0 %            2.250\n      1     2        10  2.750          95.0 %            2.612\n"},
		{[]string{"table", path, "--cols", "seed,goodput_rps:.2f=goodput", "--sort", "-goodput_rps", "--format", "markdown"}, 0, "| seed | goodput |\n|---|---|\n| 2 | 2.61 |\n| 1 | 2.25 |\n"},
		{[]string{"table", path, "--cols", "point", "--where", "seed=2", "--format", "csv"}, 0, "point\n1\n"},
		{[]string{"table", path, "--list"}, 0, "point\nnum_points\nsweep_id\nseed\n"},
		{[]string{"table", path, "--cols", "goodput"}, 2, `has no column "goodput"; the closest are goodput_rps`},
		{[]string{"table", path, "--format", "html"}, 2, `--format "html": want text, markdown or csv`},
		{[]string{"table", path, "--where", "seed"}, 2, `want COLUMN=VALUE or COLUMN!=VALUE`},
		{[]string{"table", path + ".missing"}, 2, "no such file"},
	} {
		var stdout, stderr bytes.Buffer
		code := execute(c.args, &stdout, &stderr)
		got := stdout.String() + stderr.String()
		if code != c.code || !strings.Contains(got, c.want) {
			t.Errorf("%v: exit %d, output:\n%s\nwant exit %d and %q", c.args[2:], code, got, c.code, c.want)
		}
	}
}
