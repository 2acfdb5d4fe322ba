package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/servesim/servesim/internal/sweep"
	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

type sweepFlags struct {
	scenario scenarioFlags
	grid     string
	out      string
	asJSON   bool
	workers  int
	shard    string
	list     bool
	quiet    bool
}

func newSweepCmd() *cobra.Command {
	var f sweepFlags
	cmd := &cobra.Command{
		Use:   "sweep -c SCENARIO --grid GRID.yaml [-o results.csv | --json] [--workers N] [--shard i/n]",
		Short: "Run a scenario over a grid of field values, in parallel, into one CSV or JSON",
		Long: `Run a scenario once per point of a grid and write one row per point: the
point index, each grid field's value and every summary metric (counts,
throughput, TTFT/TPOT/ITL/E2E/queue-delay statistics, SLO attainment and
goodput when the scenario sets an slo section).

The grid file maps scenario field paths to lists of values:

  workload.time_scale: [1, 0.5]
  instances[1].count: [1, 2, 3]
  handoff.policy: [pull, reserve]
  engine.max_num_seqs: [64, 128]
  seed: [1, 2, 3]

Every point is the base scenario with those fields set, decoded and
validated as a scenario file is (an unknown path or a bad value is an error
naming the grid file's line). Points are the cartesian product in a fixed
order: the first field varies slowest, the last fastest, like nested loops.

Points run in parallel (--workers, default all cores; each simulation is
single-threaded and deterministic) and rows are written in point order, so
the output is identical for any number of workers. A point that cannot be
simulated (e.g. the model does not fit its memory) gets a row with an
error and the sweep goes on; a point that fails with an internal error (a
bug) is recorded the same way and the sweep exits 1 once the results are
written. SIGINT or SIGTERM stops the running points within milliseconds,
writes nothing (no partial or temporary file) and exits 130 (docs/cli.md).

--shard i/n runs only the points with index % n == i (i counts from 0, as
$SLURM_ARRAY_TASK_ID of an array submitted with --array=0-(n-1) and
Kubernetes' $JOB_COMPLETION_INDEX do); "servesim merge" joins the shard
outputs into exactly the output of one process. See examples/slurm and
examples/k8s.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSweep(cmd, &f) },
	}
	fs := cmd.Flags()
	f.scenario.register(fs)
	fs.StringVar(&f.grid, "grid", "", "grid YAML file: field path -> list of values (required)")
	fs.StringVarP(&f.out, "output", "o", "", "write the results to FILE (default stdout); a .json name implies --json")
	fs.BoolVar(&f.asJSON, "json", false, "write a JSON array, one object per point, instead of CSV")
	fs.IntVar(&f.workers, "workers", 0, "points simulated at once (default: all cores)")
	fs.StringVar(&f.shard, "shard", "", "run only shard i of n: the points with index % n == i (i from 0)")
	fs.BoolVar(&f.list, "list", false, "print the points (index and values) of the shard and exit")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "no progress bar")
	return cmd
}

func runSweep(cmd *cobra.Command, f *sweepFlags) error {
	if f.grid == "" {
		return badInput(fmt.Errorf("--grid: required; give a YAML file mapping scenario field paths to lists of values"))
	}
	if f.workers < 0 {
		return badInput(fmt.Errorf("--workers: must be >= 0 (got %d; 0 uses all cores)", f.workers))
	}
	var sh sweep.Shard
	if f.shard != "" {
		var err error
		if sh, err = sweep.ParseShard(f.shard); err != nil {
			return badInput(fmt.Errorf("--shard: %w", err))
		}
	}
	// Signals are caught from here on, before the output exists (so an
	// interrupt always removes the temporary file) and before the grid is
	// checked (which polls them too).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	base, src, err := f.scenario.load()
	if err != nil {
		return err
	}
	f.scenario.printNotes(cmd.ErrOrStderr())
	// The scenario as written is built for its warnings only: the grid
	// may set what it lacks (a model too large for its tp, fixed by a tp
	// axis), so a failure here is not the sweep's; every point is built
	// on its own and one that cannot be is a row with its error.
	if _, err := buildWarn(cmd.ErrOrStderr(), nil, base, src); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "servesim: note: the scenario as written cannot be built (%v); each grid point is built on its own\n", err)
	}
	grid, err := sweep.LoadGrid(f.grid)
	if err != nil {
		return badInput(err)
	}
	plan, err := sweep.NewPlan(ctx, base, src, grid)
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("sweep: interrupted, no results written: %w", err)
	}
	if err != nil {
		return badInput(err)
	}
	if f.list {
		return listPoints(cmd.OutOrStdout(), plan, sh)
	}
	asJSON := f.asJSON || strings.HasSuffix(strings.ToLower(f.out), ".json")
	out, commit, abort, err := openOutput("-o", f.out, cmd.OutOrStdout())
	if err != nil {
		return badInput(err)
	}
	defer abort()
	var w *sweep.Writer
	if asJSON {
		w = sweep.NewJSONWriter(out, plan)
	} else {
		w = sweep.NewCSVWriter(out, plan)
	}

	total := sh.Size(plan.Len())
	bar := newSweepBar(cmd.ErrOrStderr(), f.quiet, total)
	var failed []string
	nFailed, nInternal := 0, 0
	err = plan.Run(ctx, sweep.Options{Workers: f.workers, Shard: sh, Progress: bar.set}, func(r sweep.Row) error {
		if r.Internal {
			nInternal++
		}
		if r.Err != "" {
			nFailed++
			if len(failed) < 3 {
				failed = append(failed, fmt.Sprintf("point %d: %s", r.Point, r.Err))
			}
		}
		return w.Write(r)
	})
	bar.finish()
	var invalid *sweep.InvalidPointError
	switch {
	case errors.As(err, &invalid):
		return badInput(err)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("sweep: interrupted, no results written: %w", err)
	case err != nil:
		return fmt.Errorf("sweep: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("sweep: write results: %w", err)
	}
	if err := commit(); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if nInternal > 0 {
		return fmt.Errorf("sweep: results written, but %d of %d points failed with an internal error (see the error column): %s",
			nInternal, total, strings.Join(failed, "; "))
	}
	if nFailed > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "servesim: warning: %d of %d points could not be simulated (see the error column): %s\n",
			nFailed, total, strings.Join(failed, "; "))
	}
	return nil
}

// openOutput opens the results destination: stdout for "" or "-",
// otherwise a temporary file next to path that commit renames into place,
// so an interrupted shard never leaves a partial file for merge to find.
// abort removes the temporary file unless commit ran.
func openOutput(label, path string, stdout io.Writer) (w io.Writer, commit func() error, abort func(), err error) {
	if path == "" || path == "-" {
		return stdout, func() error { return nil }, func() {}, nil
	}
	if err := checkOutputFile(label, path); err != nil {
		return nil, nil, nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, nil, nil, badInput(fmt.Errorf("%s: %w", label, err))
	}
	done := false
	commit = func() error {
		// CreateTemp makes the file private; results are ordinary files.
		if err := tmp.Chmod(0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		if err := tmp.Close(); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		done = true
		return nil
	}
	abort = func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}
	return tmp, commit, abort, nil
}

// listPoints prints the shard's points as a table.
func listPoints(w io.Writer, plan *sweep.Plan, sh sweep.Shard) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "point\t%s\n", strings.Join(plan.Grid.Header(), "\t"))
	for i := range sh.Points(plan.Len()) {
		vals := make([]string, 0, len(plan.Grid.Axes))
		for _, a := range plan.Grid.Assignments(i) {
			vals = append(vals, sweep.FormatValue(a.Value))
		}
		fmt.Fprintf(tw, "%d\t%s\n", i, strings.Join(vals, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d of %d points (shard %s, sweep %s)\n", sh.Size(plan.Len()), plan.Len(), sh, plan.ID)
	return err
}

// sweepBar is a progress bar of points done, drawn on stderr when it is a
// terminal.
type sweepBar struct {
	p   *mpb.Progress
	bar *mpb.Bar
}

func newSweepBar(w io.Writer, quiet bool, total int) *sweepBar {
	f, ok := w.(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) {
		return &sweepBar{}
	}
	p := mpb.New(mpb.WithOutput(w), mpb.WithWidth(40))
	bar := p.AddBar(int64(total),
		mpb.PrependDecorators(decor.Name("sweep "), decor.CountersNoUnit("%d/%d points", decor.WCSyncSpace)),
		mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace), decor.Name(" eta "), decor.AverageETA(decor.ET_STYLE_GO)))
	return &sweepBar{p: p, bar: bar}
}

func (b *sweepBar) set(done, _ int) {
	if b.bar != nil {
		b.bar.SetCurrent(int64(done))
	}
}

func (b *sweepBar) finish() {
	if b.bar == nil {
		return
	}
	b.bar.Abort(false)
	b.p.Wait()
}
