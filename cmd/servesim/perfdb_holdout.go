package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/servesim/servesim/internal/dbcheck"
	"github.com/servesim/servesim/internal/perfdb"
	"github.com/spf13/cobra"
)

// perfdb gemm-holdout: the interpolation rules in m measured on the
// database's own GEMM rows.

// holdoutBy names the --by groupings.
var holdoutBy = map[string]dbcheck.HoldoutBy{"range": dbcheck.HoldoutByRange, "dtype": dbcheck.HoldoutByDtype, "system": dbcheck.HoldoutBySystem}

// holdoutAxis names the --axis choices.
var holdoutAxis = map[string]perfdb.GEMMAxis{"m": perfdb.AxisM, "n": perfdb.AxisN, "k": perfdb.AxisK}

func newPerfDBHoldoutCmd() *cobra.Command {
	var (
		dir, version, by, ax string
		systems              []string
		asJSON, wide         bool
	)
	cmd := &cobra.Command{
		Use:   "gemm-holdout [--system NAME,...] [--axis m|n|k] [--by range|dtype|system] [--wide] [--path DIR] [--json]",
		Short: "Compare rules for timing a GEMM between measured m by predicting the database's own GEMM rows without them",
		Long: `Predict every interior row of every GEMM curve (one gemm_dtype, n and k; m
the axis) of the database from the other rows of its curve, by each rule
a GEMM between two measured m can be read with, and print each rule's
error (predicted / measured - 1) per m range. A measured m >= 16 whose
m+1 is also measured is held out with it (the grid measures each tile
boundary from both sides: a point predicted from its partner one apart
would test nothing between grid points), every other m alone; the rest
of the curve is made non-decreasing from the right as the predictor makes
it, and each held-out m is read between the nearest remaining m on
either side. Rules (docs/perfdb.md):

  linear          linear in m
  log-log         power law in m
  hold-lower      the lower point's time up to the upper point
  upper           the upper point's time
  nearest         the nearer point's time
  tile-64         linear in m rounded up to a multiple of 64 (what the predictor reads)
  tile-128        linear in m rounded up to a multiple of 128
  monotone-cubic  Fritsch-Carlson monotone cubic

Columns: the median, 90th percentile and mean of |error|, the signed
median (bias), and how many rows the rule predicts closer to / farther
from the measurement than linear. --system limits the systems (default:
all); --by dtype or system splits every m range by gemm_dtype or system;
--axis n or k holds out each measured n (or k) at a measured m and the
other dimension instead, read from the curves made non-decreasing in m,
each n or k alone (the predictor is bilinear in n and k: the linear rule);
--wide prints one line per group with each rule's median |error|.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			grouping, ok := holdoutBy[by]
			if !ok {
				return badInput(fmt.Errorf("--by %q: want range, dtype or system", by))
			}
			axis, ok := holdoutAxis[ax]
			if !ok {
				return badInput(fmt.Errorf("--axis %q: want m, n or k", ax))
			}
			fsys, where, err := openPerfDB(dir)
			if err != nil {
				return err
			}
			names, err := perfdb.Systems(fsys)
			if err != nil {
				return badInput(fmt.Errorf("--path %s: %w", where, err))
			}
			if len(systems) == 0 {
				systems = names
			}
			var dbs []*perfdb.DB
			for _, s := range systems {
				if !slices.Contains(names, s) {
					return badInput(fmt.Errorf("--system %s: the %s database has no such system (it has %s)", s, where, strings.Join(names, ", ")))
				}
				db, err := perfdb.Open(fsys, s, "vllm", version)
				if err != nil {
					return badInput(fmt.Errorf("%s database: %w", where, err))
				}
				dbs = append(dbs, db)
			}
			groups := dbcheck.GEMMHoldout(dbs, grouping, axis)
			if asJSON {
				return printJSON(cmd.OutOrStdout(), groups)
			}
			if wide {
				return dbcheck.WriteHoldoutWide(cmd.OutOrStdout(), groups)
			}
			return dbcheck.WriteHoldout(cmd.OutOrStdout(), groups)
		},
	}
	cmd.Flags().StringSliceVar(&systems, "system", nil, "systems to hold out rows of (default: all)")
	cmd.Flags().StringVar(&ax, "axis", "m", "the axis held out: m, or n or k (every rule then reads across the measured n or k at a measured m, as the predictor blends its corners)")
	cmd.Flags().StringVar(&by, "by", "range", "split the m ranges by: range (none), dtype or system")
	cmd.Flags().StringVar(&dir, "path", "", "the database's systems folder (default: the embedded copy)")
	cmd.Flags().StringVar(&version, "version", "", "vLLM version of the tables (default "+perfdb.DefaultVersion+")")
	cmd.Flags().BoolVar(&wide, "wide", false, "one line per group: each rule's median |error|")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
