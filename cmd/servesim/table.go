package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/servesim/servesim/internal/tableview"
	"github.com/spf13/cobra"
)

type tableFlags struct {
	pivot  string
	cols   string
	where  []string
	sort   string
	limit  int
	format string
	list   bool
}

func newTableCmd() *cobra.Command {
	var f tableFlags
	cmd := &cobra.Command{
		Use:   "table FILE.csv [--cols SPEC,...] [--where COL=VALUE] [--sort [-]COL] [--limit N] [--pivot COL] [--format text|markdown|csv]",
		Short: "Show chosen columns of a sweep's CSV as a table (terminal or Markdown)",
		Long: `Show a results CSV (sweep or merge output; any CSV with a header; "-" reads
stdin) as an aligned table. Without --cols a sweep's CSV shows the point,
its grid values, finished requests, throughput, TTFT and TPOT means and
p99s, and, when some point has them, SLO attainment, goodput, whether the
percentile targets were met, and the error column. --list prints the
column names.

--cols is a comma-separated list of EXPR[:FORMAT][=LABEL]:

  EXPR    a column name, or A*B or A/B of two columns
          (instances[0].tp*instances[0].count: the GPUs of a layout)
  FORMAT  .Nf   N decimals, thousands separated (.0f: 1,121,452)
          .N%   a fraction as a percentage with N decimals (0.95 -> 95.0 %)
          .Nk   in thousands with N decimals (ms as s: .1k)
          .NM   in millions with N decimals (bytes as MB: .1M)
          .NG   in billions with N decimals (bytes as GB: 76300000000 -> .2G 76.30)
          yesno true/false as yes/no
  LABEL   the column's header (default EXPR)

--where COL=VALUE keeps the rows whose COL is exactly VALUE, COL!=VALUE
the others (repeatable);
--sort EXPR orders rows by it (numbers as numbers; -EXPR descending;
ties keep file order) and --limit N keeps the first N. The fewest GPUs
meeting a sweep's percentile targets, for example:

  servesim table h100.csv --where slo_targets_met=true --sort gpus --limit 1

(a sweep's gpus column is the layout's GPU count; kv_blocks each group's
KV blocks per instance).

--pivot COL[=LABEL;LABEL;...] spreads the values of COL across columns:
the first --cols column keys the rows and every other one is repeated for
each value of COL (in order of appearance), labelled "LABEL, VALUE" or
with the labels given, e.g. TPOT per concurrency for each setting of a
grid's engine.speculative axis:

  servesim table spec.csv --cols 'workload.max_concurrency=clients,tpot_ms_mean:.2f=TPOT (ms)' \
    --pivot 'engine.speculative=off;EAGLE;EAGLE, poor'

--format markdown writes a Markdown table (the docs' tables are made so).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runTable(cmd, args[0], &f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.cols, "cols", "", "columns to show: EXPR[:FORMAT][=LABEL],... (default: a sweep's grid values and main metrics)")
	fs.StringArrayVar(&f.where, "where", nil, "keep rows whose column equals a value, COL=VALUE, or differs, COL!=VALUE (repeatable)")
	fs.StringVar(&f.sort, "sort", "", "sort rows by a column or A*B, A/B; a leading - sorts descending")
	fs.IntVar(&f.limit, "limit", 0, "show only the first N rows (after sorting)")
	fs.StringVar(&f.format, "format", "text", "text (aligned), markdown or csv")
	fs.BoolVar(&f.list, "list", false, "list the file's column names and exit")
	fs.StringVar(&f.pivot, "pivot", "", "spread a column's values across columns: COL[=LABEL;LABEL;...] (the first --cols column keys the rows)")
	return cmd
}

func runTable(cmd *cobra.Command, path string, f *tableFlags) error {
	var r io.Reader = cmd.InOrStdin()
	name := "stdin"
	if path != "-" {
		file, err := os.Open(path)
		if err != nil {
			return badInput(fmt.Errorf("table: %w", err))
		}
		defer file.Close()
		r, name = file, path
	}
	d, err := tableview.Read(name, r)
	if err != nil {
		return badInput(fmt.Errorf("table: %w", err))
	}
	out := cmd.OutOrStdout()
	if f.list {
		_, err := fmt.Fprintln(out, strings.Join(d.Header, "\n"))
		return err
	}
	v := tableview.View{Sort: f.sort, Limit: f.limit}
	if f.limit < 0 {
		return badInput(fmt.Errorf("--limit: must be >= 0 (got %d; 0 shows every row)", f.limit))
	}
	if f.cols == "" {
		v.Columns = d.DefaultColumns()
	} else if v.Columns, err = tableview.ParseColumns(f.cols); err != nil {
		return badInput(fmt.Errorf("--cols: %w", err))
	}
	for _, w := range f.where {
		flt, err := tableview.ParseFilter(w)
		if err != nil {
			return badInput(fmt.Errorf("--where %w", err))
		}
		v.Where = append(v.Where, flt)
	}
	if f.pivot != "" {
		if v.Pivot, err = tableview.ParsePivot(f.pivot); err != nil {
			return badInput(fmt.Errorf("--pivot %w", err))
		}
	}
	t, err := d.Apply(v)
	if err != nil {
		return badInput(fmt.Errorf("table: %w", err))
	}
	switch f.format {
	case "text":
		return t.Text(out)
	case "markdown", "md":
		return t.Markdown(out)
	case "csv":
		return t.CSV(out)
	}
	return badInput(fmt.Errorf("--format %q: want text, markdown or csv", f.format))
}
