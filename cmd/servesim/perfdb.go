package main

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/servesim/servesim/internal/calibrate"
	"github.com/servesim/servesim/internal/dbcheck"
	"github.com/servesim/servesim/internal/hw"
	"github.com/servesim/servesim/internal/perf"
	"github.com/servesim/servesim/internal/perfdb"
	"github.com/spf13/cobra"
)

func newPerfDBCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "perfdb",
		Short: "Inspect the per-op kernel database and check it against profile bundles and the collective model",
		Long: `Inspect the per-op GPU kernel database that predictor.kind perfdb times steps
from (NVIDIA AIConfigurator's layout; servesim embeds its vLLM tables for
nine systems, and --path DIR reads a newer copy: the folder holding
<system>.yaml and data/). See docs/perfdb.md.

  servesim perfdb systems                      systems, versions and tables
  servesim perfdb crosscheck --profile BUNDLE  the database vs a profile bundle, op by op
  servesim perfdb collectives --system NAME    measured vs modelled all-reduce by message size
  servesim perfdb alltoall --hardware NAME     one MoE layer's all-to-all per backend and EP size
  servesim perfdb steps                        roofline vs perfdb step times per deployment and batch
  servesim perfdb gemm-holdout                 rules for a GEMM between measured m, on the database's own rows`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newPerfDBSystemsCmd(), newPerfDBCrosscheckCmd(), newPerfDBCollectivesCmd(), newPerfDBAlltoallCmd(), newPerfDBStepsCmd(), newPerfDBHoldoutCmd())
	return cmd
}

// openPerfDB returns the database at dir (the embedded copy when empty)
// and a name for it.
func openPerfDB(dir string) (fs.FS, string, error) {
	if dir == "" {
		return perfdb.Embedded(), "embedded", nil
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, "", badInput(fmt.Errorf("--path: %w", err))
	}
	if !st.IsDir() {
		return nil, "", badInput(fmt.Errorf("--path: %s is not a directory; give the database's systems folder (holding <system>.yaml and data/)", dir))
	}
	return os.DirFS(dir), filepath.ToSlash(dir), nil
}

// openSystem opens one system of the database at dir; it returns the
// database's file system too.
func openSystem(dir, system, version string) (*perfdb.DB, fs.FS, error) {
	fsys, where, err := openPerfDB(dir)
	if err != nil {
		return nil, nil, err
	}
	names, err := perfdb.Systems(fsys)
	if err != nil {
		return nil, nil, badInput(fmt.Errorf("--path %s: %w", where, err))
	}
	if !slices.Contains(names, system) {
		return nil, nil, badInput(fmt.Errorf("--system %s: the %s database has no such system (it has %s)", system, where, strings.Join(names, ", ")))
	}
	db, err := perfdb.Open(fsys, system, "vllm", version)
	if err != nil {
		return nil, nil, badInput(fmt.Errorf("%s database: %w", where, err))
	}
	return db, fsys, nil
}

func newPerfDBSystemsCmd() *cobra.Command {
	var dir, system, version string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "systems [--path DIR] [--system NAME] [--version V] [--json]",
		Short: "List the database's systems, the versions present and the tables a run reads, with row counts",
		Long: `List every system of the database (embedded, or --path DIR: the folder
holding <system>.yaml and data/), its GPU's specs, the version folders
present per op, and the tables a run at --version (default ` + perfdb.DefaultVersion + `) reads:
the version each was read at (the nearest measured one when --version has
none), its row count and the kernels its rows were measured with (the
kernel_source column).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fsys, where, err := openPerfDB(dir)
			if err != nil {
				return err
			}
			systems, err := dbcheck.Inventory(fsys, system, version)
			if err != nil {
				return badInput(fmt.Errorf("%s database: %w", where, err))
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), systems)
			}
			return dbcheck.WriteInventory(cmd.OutOrStdout(), where, systems)
		},
	}
	cmd.Flags().StringVar(&dir, "path", "", "the database's systems folder (default: the embedded copy)")
	cmd.Flags().StringVar(&system, "system", "", "list only this system")
	cmd.Flags().StringVar(&version, "version", "", "vLLM version of the tables (default "+perfdb.DefaultVersion+")")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newPerfDBCrosscheckCmd() *cobra.Command {
	var (
		bundles              []string
		dir, system, version string
		dist, rows           string
		asJSON, detail       bool
		onlyOps              []string
		onlyM                []int
	)
	cmd := &cobra.Command{
		Use:   "crosscheck --profile BUNDLE [--profile BUNDLE ...] [--system NAME] [--path DIR]",
		Short: "Compare a profile bundle's step tables with the kernel database, op by op",
		Long: `Compare the step tables of a profile bundle (LLMServingSim's format: a folder
holding meta.yaml and tp<N>/dense.csv, per_sequence.csv, attention.csv,
moe.csv; builtin:<hw>/<org>/<model>/<dtype> for an embedded one; a trailing
/tp<N> selects one degree, else every tp<N> folder is read) with the
database's tables for the same GPU, op by op, each database time composed
as predictor.kind perfdb composes it:

  qkv_proj, o_proj, gate_up_proj, down_proj  bf16 GEMM at m = the row's tokens, per-rank (n, k)
  lm_head                                    bf16 GEMM at m = the row's sequences
  attention                                  context attention of the prefill chunk + generation
                                             attention of the decodes
  moe                                        fused MoE block, rows whose activated experts match
                                             the routing distribution (--moe-distribution)

For each op: rows compared, rows outside the tables (where a run falls back
to the roofline), and the 10th, 50th and 90th percentiles of the signed
difference database / profile - 1 and the median and p90 of its absolute
value, in %. --detail splits every op by regime (token count; prefill,
decode, mixed); --rows FILE writes every row as CSV (--rows - prints them
instead of the summary); --op and --m select ops and token counts.

--system defaults to the bundle's accelerator's perfdb_system in the
catalog (servesim catalog).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(bundles) == 0 {
				return usageError{fmt.Errorf("--profile BUNDLE is required")}
			}
			var tables []*calibrate.Tables
			for _, b := range bundles {
				ts, err := bundleDegrees("--profile", b)
				if err != nil {
					return err
				}
				tables = append(tables, ts...)
			}
			type opened struct {
				db      *perfdb.DB
				kernels []string
			}
			dbs := map[string]*opened{}
			var reps []*dbcheck.Report
			for _, t := range tables {
				sys := system
				if sys == "" {
					acc, err := hw.Lookup(t.Accelerator)
					if err != nil {
						return badInput(fmt.Errorf("%s: %w", t.Source, err))
					}
					if sys = acc.PerfDBSystem; sys == "" {
						return badInput(fmt.Errorf("%s: accelerator %s has no perfdb_system in the catalog; give --system NAME (servesim perfdb systems lists them)", t.Source, acc.Name))
					}
				}
				o := dbs[sys]
				if o == nil {
					db, fsys, err := openSystem(dir, sys, version)
					if err != nil {
						return err
					}
					ks, err := dbcheck.AttentionKernels(fsys, db, "bfloat16")
					if err != nil {
						return badInput(err)
					}
					o = &opened{db, ks}
					dbs[sys] = o
				}
				rep, err := dbcheck.Crosscheck(o.db, dbcheck.Bundle{Source: t.Source, TP: t.TP, Model: t.Model, HW: t.HW, Points: t.Points},
					dbcheck.Options{MoEDistribution: dist})
				if err != nil {
					return badInput(err)
				}
				rep.AttentionKernels = o.kernels
				if len(onlyOps) > 0 || len(onlyM) > 0 {
					rep.Only(onlyOps, onlyM)
				}
				reps = append(reps, rep)
			}
			if rows == "-" {
				return dbcheck.WriteRowsCSV(cmd.OutOrStdout(), reps)
			}
			if rows != "" {
				if err := writeFileWith(rows, func(w io.Writer) error { return dbcheck.WriteRowsCSV(w, reps) }); err != nil {
					return badInput(fmt.Errorf("--rows: %w", err))
				}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), reps)
			}
			return dbcheck.WriteText(cmd.OutOrStdout(), reps, detail)
		},
	}
	cmd.Flags().StringArrayVar(&bundles, "profile", nil, "profile bundle folder (meta.yaml and tp<N>/), or builtin:<hw>/<org>/<model>/<dtype>; /tp<N> selects one degree (repeatable)")
	cmd.Flags().StringVar(&system, "system", "", "database system (default: the bundle accelerator's perfdb_system)")
	cmd.Flags().StringVar(&dir, "path", "", "the database's systems folder (default: the embedded copy)")
	cmd.Flags().StringVar(&version, "version", "", "vLLM version of the tables (default "+perfdb.DefaultVersion+")")
	cmd.Flags().StringVar(&dist, "moe-distribution", "balanced", "moe_perf routing distribution compared with moe.csv")
	cmd.Flags().BoolVar(&detail, "detail", false, "split every op by regime")
	cmd.Flags().StringVar(&rows, "rows", "", "write every compared row as CSV to FILE (- for stdout, instead of the summary)")
	cmd.Flags().StringSliceVar(&onlyOps, "op", nil, "compare only these ops (qkv_proj, o_proj, gate_up_proj, down_proj, lm_head, attention, attention parts, moe)")
	cmd.Flags().IntSliceVar(&onlyM, "m", nil, "compare only GEMM and MoE rows at these token counts (lm_head: sequences)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// bundleDegrees reads a bundle's tables: at the degree a trailing /tp<N>
// names, else at every tp<N> folder it holds.
func bundleDegrees(flag, ref string) ([]*calibrate.Tables, error) {
	if b, tp := calibrate.SplitTP(ref); tp > 0 {
		t, err := loadTables(flag, b, tp, true)
		if err != nil {
			return nil, err
		}
		return []*calibrate.Tables{t}, nil
	}
	fsys, name, err := openBundle(flag, ref)
	if err != nil {
		return nil, badInput(err)
	}
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, badInput(fmt.Errorf("%s %s: %w", flag, name, err))
	}
	var tps []int
	for _, e := range ents {
		if s, ok := strings.CutPrefix(e.Name(), "tp"); ok && e.IsDir() {
			if n, err := strconv.Atoi(s); err == nil && n >= 1 && strconv.Itoa(n) == s {
				tps = append(tps, n)
			}
		}
	}
	if len(tps) == 0 {
		return nil, badInput(fmt.Errorf("%s %s: no tp<N> folders (give a bundle folder holding meta.yaml and tp<N>/)", flag, name))
	}
	slices.Sort(tps)
	var out []*calibrate.Tables
	for _, tp := range tps {
		t, err := loadTables(flag, ref, tp, true)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func newPerfDBCollectivesCmd() *cobra.Command {
	var (
		dir, system, version, accName string
		gpus                          int
		asJSON                        bool
	)
	cmd := &cobra.Command{
		Use:   "collectives --system NAME | --hardware NAME [--gpus N] [--path DIR]",
		Short: "Measured all-reduce (vLLM custom all-reduce, CUDA graph and eager; NCCL) vs servesim's model, by message size",
		Long: `List the all-reduce of a tensor-parallel group of --gpus ranks at every message
size the database measured: vLLM's all-reduce through its own dispatch
(custom_allreduce_perf, CUDA-graph and eager rows; the graph rows are what
predictor.kind perfdb reads), NCCL's all_reduce (nccl_perf), and servesim's
modelled all-reduce (perf.AllReduce, docs/engine-time.md) on the catalog link
of the accelerator: vLLM's dispatch as a run resolves it, and NCCL alone.
Times in µs; the ratios are model / measurement.

--system names the database system (its accelerator is the catalog entry
with that perfdb_system); --hardware names the accelerator (its
perfdb_system is the system).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			acc, sys, err := resolveSystem(system, accName)
			if err != nil {
				return err
			}
			db, _, err := openSystem(dir, sys, version)
			if err != nil {
				return err
			}
			link := perf.Interconnect{NVLink: acc.Link.FullyConnected(), P2P: acc.Link.P2P, LinkBW: acc.Link.Bandwidth}
			var consts perf.CollectiveEff
			if file, err := calibrate.Builtin(); err != nil {
				return err
			} else if en, ok := file.Entry(acc.Name); ok {
				consts = en.Efficiency().Collective
			}
			t, err := dbcheck.Collectives(db, gpus, link, consts)
			if err != nil {
				return badInput(err)
			}
			if asJSON {
				return t.WriteJSON(cmd.OutOrStdout())
			}
			return t.WriteText(cmd.OutOrStdout(), acc.Name)
		},
	}
	cmd.Flags().StringVar(&system, "system", "", "database system (e.g. rtx_pro_6000_server)")
	cmd.Flags().StringVar(&accName, "hardware", "", "accelerator whose catalog link is modelled (default: the one whose perfdb_system is --system)")
	cmd.Flags().IntVar(&gpus, "gpus", 2, "GPUs in the group")
	cmd.Flags().StringVar(&dir, "path", "", "the database's systems folder (default: the embedded copy)")
	cmd.Flags().StringVar(&version, "version", "", "vLLM version of the tables (default "+perfdb.DefaultVersion+")")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// resolveSystem pairs a database system with a catalog accelerator from
// either name.
func resolveSystem(system, accName string) (hw.Accelerator, string, error) {
	if accName != "" {
		acc, err := hw.Lookup(accName)
		if err != nil {
			return hw.Accelerator{}, "", badInput(fmt.Errorf("--hardware: %w", err))
		}
		if system == "" {
			if acc.PerfDBSystem == "" {
				return hw.Accelerator{}, "", badInput(fmt.Errorf("--hardware %s has no perfdb_system in the catalog; give --system NAME", acc.Name))
			}
			system = acc.PerfDBSystem
		}
		return acc, system, nil
	}
	if system == "" {
		return hw.Accelerator{}, "", usageError{fmt.Errorf("give --system NAME or --hardware NAME")}
	}
	var have []string
	for _, n := range hw.Names() {
		acc, err := hw.Lookup(n)
		if err != nil {
			return hw.Accelerator{}, "", err
		}
		if acc.PerfDBSystem == system {
			return acc, system, nil
		}
		if acc.PerfDBSystem != "" {
			have = append(have, acc.PerfDBSystem)
		}
	}
	return hw.Accelerator{}, "", badInput(fmt.Errorf("--system %s: no catalog accelerator has this perfdb_system (known: %s); give --hardware NAME for the link to model", system, strings.Join(have, ", ")))
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeFileWith creates file and writes it with write.
func writeFileWith(file string, write func(io.Writer) error) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
