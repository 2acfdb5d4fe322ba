package sweep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/servesim/servesim/internal/assemble"
	"github.com/servesim/servesim/internal/cluster"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/runner"
	"github.com/servesim/servesim/internal/workpool"
)

// Plan is a sweep ready to run: a base scenario, where it came from (for
// relative paths), and a grid whose every value has been checked against
// the scenario.
type Plan struct {
	Base   *config.Scenario
	Source config.Source
	Grid   *Grid
	// ID identifies the sweep (a hash of the resolved base scenario and
	// the grid); it is written on every row so that merge refuses shards
	// of different sweeps.
	ID string
}

// NewPlan checks every grid value on its own against base (as a scenario
// file would be checked: strict types, then validation) and returns the
// plan. Errors name the grid file, line and column of the value at fault.
// Combinations of values are checked by Check. It polls ctx at every value
// and returns its error when it is done.
func NewPlan(ctx context.Context, base *config.Scenario, src config.Source, g *Grid) (*Plan, error) {
	for _, a := range g.Axes {
		for k, v := range a.Values {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if _, err := Apply(base, Assignment{Path: a.Path, Value: v}); err != nil {
				pos := a.ValuePos[k]
				return nil, fmt.Errorf("%s:%d:%d: %s = %s: %w", g.File, pos.Line, pos.Col, a.Path, FormatValue(v), err)
			}
		}
	}
	id, err := sweepID(base, g)
	if err != nil {
		return nil, err
	}
	return &Plan{Base: base, Source: src, Grid: g, ID: id}, nil
}

func sweepID(base *config.Scenario, g *Grid) (string, error) {
	y, err := config.Marshal(base)
	if err != nil {
		return "", fmt.Errorf("encode scenario: %w", err)
	}
	h := sha256.New()
	h.Write(y)
	for _, a := range g.Axes {
		vs, err := json.Marshal(a.Values)
		if err != nil {
			return "", fmt.Errorf("%s: %w", a.Path, err)
		}
		fmt.Fprintf(h, "\x00%s\x00%s", a.Path, vs)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// Len is the number of points in the full grid.
func (p *Plan) Len() int { return p.Grid.Len() }

// Scenario returns the scenario of point i: the base with the point's
// values set, validated.
func (p *Plan) Scenario(i int) (*config.Scenario, error) {
	as := p.Grid.Assignments(i)
	s, err := Apply(p.Base, as...)
	if err != nil {
		return nil, fmt.Errorf("%s: point %d (%s): %w", p.Grid.File, i, describe(as), err)
	}
	return s, nil
}

// InvalidPointError reports a point whose combination of values is not a
// valid scenario (bad input, found before anything runs).
type InvalidPointError struct{ Err error }

func (e *InvalidPointError) Error() string { return e.Err.Error() }

// Unwrap returns the validation error.
func (e *InvalidPointError) Unwrap() error { return e.Err }

// Check validates the scenario of every point of the shard, so that a bad
// combination of values is reported before any simulation runs. The error
// is an *InvalidPointError naming the grid file, the point and its values,
// or ctx's error when ctx is done first (it is polled at every point, so
// a grid of a million points stops at once on an interrupt).
func (p *Plan) Check(ctx context.Context, sh Shard) error {
	for i := range sh.Points(p.Len()) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := p.Scenario(i); err != nil {
			return &InvalidPointError{err}
		}
	}
	return nil
}

// RunPoint simulates point i and returns its row. A scenario that cannot be
// built or run gives a row with Err set (the sweep goes on); the eager
// policy's stop is a result (Result.Stopped), not an error.
func (p *Plan) RunPoint(i int) Row { return p.runPoint(context.Background(), i) }

// emptyRow is point i's row without results.
func (p *Plan) emptyRow(i int) Row {
	as := p.Grid.Assignments(i)
	row := Row{Point: i, Values: make([]any, len(as))}
	for k, a := range as {
		row.Values[k] = a.Value
	}
	return row
}

// runPoint simulates point i; the simulation stops early when ctx is done.
func (p *Plan) runPoint(ctx context.Context, i int) Row {
	row := p.emptyRow(i)
	s, err := p.Scenario(i)
	if err != nil {
		row.Err = err.Error()
		return row
	}
	built, err := assemble.Build(s, p.Source)
	if err != nil {
		row.Err = oneLine(err.Error())
		return row
	}
	res, err := runner.Run(built, runner.Options{Interrupt: workpool.Interrupt(ctx)})
	var stop *cluster.StopReport
	if err != nil && !errors.As(err, &stop) {
		row.Err = oneLine(err.Error())
		return row
	}
	row.Result = res
	return row
}

func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}

// Shard selects the points a process runs: those with index % Count ==
// Index. The zero Shard selects every point.
type Shard struct {
	Index, Count int
}

// MaxShards bounds n in a shard i/n: far more than any job array.
const MaxShards = 1 << 20

// ParseShard parses "i/n" with 0 <= i < n. Shard indices count from 0, as
// $SLURM_ARRAY_TASK_ID of an array submitted with --array=0-(n-1) and
// Kubernetes' $JOB_COMPLETION_INDEX do.
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want i/n, e.g. 0/4 (i counts from 0)", s)
	}
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: i and n must be integers, e.g. 0/4 (is $SLURM_ARRAY_TASK_ID or $JOB_COMPLETION_INDEX set?)", s)
	}
	if n < 1 || n > MaxShards {
		return Shard{}, fmt.Errorf("shard %q: n must be in [1, %d]", s, MaxShards)
	}
	if i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: i must be in [0, %d]; shard indices count from 0 (submit Slurm arrays with --array=0-%d)", s, n-1, n-1)
	}
	return Shard{Index: i, Count: n}, nil
}

// String renders the shard as "i/n" ("all" for the zero shard).
func (sh Shard) String() string {
	if sh.Count <= 1 {
		return "all"
	}
	return fmt.Sprintf("%d/%d", sh.Index, sh.Count)
}

// Points yields the indices of the shard's points among total, ascending.
func (sh Shard) Points(total int) iter.Seq[int] {
	start, step := sh.Index, sh.Count
	if step <= 1 {
		start, step = 0, 1
	}
	return func(yield func(int) bool) {
		for i := start; i < total; i += step {
			if !yield(i) || i > total-step {
				return // the last point (and no int overflow on i += step)
			}
		}
	}
}

// Size is the number of the shard's points among total.
func (sh Shard) Size(total int) int {
	if sh.Count <= 1 {
		return total
	}
	if sh.Index >= total {
		return 0
	}
	return (total-sh.Index-1)/sh.Count + 1
}

// Options control Plan.Run.
type Options struct {
	// Workers is the number of points simulated at once (each simulation
	// is single-threaded); <= 0 means GOMAXPROCS.
	Workers int
	// Shard selects the points to run (zero: all).
	Shard Shard
	// Progress, if set, is called after each point with the number of
	// points done and the shard's total, from one goroutine.
	Progress func(done, total int)
	// point replaces the simulation of a point (tests).
	point func(ctx context.Context, i int) Row
}

// Run simulates the shard's points on a pool of workers (see
// internal/workpool) and calls emit with each row in ascending point order,
// from one goroutine, so the output does not depend on the number of
// workers. It first checks every point (see Check; the error is then an
// *InvalidPointError). A point whose simulation fails or panics becomes a
// row with Err set; the other points complete. It stops at the first error
// of emit, or when ctx is done: running simulations stop within a few
// thousand events and Run returns ctx.Err().
func (p *Plan) Run(ctx context.Context, opts Options, emit func(Row) error) error {
	if err := p.Check(ctx, opts.Shard); err != nil {
		return err
	}
	total := opts.Shard.Size(p.Len())
	point := opts.point
	if point == nil {
		point = p.runPoint
	}
	done := 0
	err := workpool.Run(ctx, opts.Workers, opts.Shard.Points(p.Len()),
		func(ctx context.Context, i int) (Row, error) { return point(ctx, i), nil },
		func(i int, r Row, err error) error {
			if err != nil { // a panic
				r = p.emptyRow(i)
				r.Err, r.Internal = oneLine(err.Error()), true
			}
			if err := emit(r); err != nil {
				return err
			}
			done++
			if opts.Progress != nil {
				opts.Progress(done, total)
			}
			return nil
		})
	if err != nil {
		return err
	}
	if done != total {
		return fmt.Errorf("sweep: %d of %d points done", done, total)
	}
	return nil
}
