package sweep

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servesim/servesim/internal/config"
)

func loadPD(t *testing.T) (*config.Scenario, config.Source) {
	t.Helper()
	s, src, err := config.Load("../../examples/pd-2p2d.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s, src
}

func mustPath(t *testing.T, s string) Path {
	t.Helper()
	p, err := ParsePath(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParsePath(t *testing.T) {
	for _, ok := range []string{"seed", "workload.time_scale", "instances[1].count", "slo.percentiles[0].max_ms", "instances[0][1]"} {
		p, err := ParsePath(ok)
		if err != nil {
			t.Errorf("ParsePath(%q): %v", ok, err)
			continue
		}
		if p.String() != ok {
			t.Errorf("ParsePath(%q).String() = %q", ok, p.String())
		}
	}
	for _, bad := range []string{"", ".seed", "seed.", "instances[x].count", "instances[1.count", "instances[-1]", "a b", "instances[1]x"} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q): want an error", bad)
		}
	}
}

func TestCheckPath(t *testing.T) {
	for _, ok := range []string{"seed", "engine.max_num_seqs", "instances[3].engine.max_num_seqs", "workload.synthetic.arrival.rate", "slo.percentiles[0].max_ms", "instances", "handoff"} {
		if err := CheckPath(mustPath(t, ok)); err != nil {
			t.Errorf("CheckPath(%q): %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"engine.max_num_seqz":     `unknown field "max_num_seqz" in engine (valid: async_scheduling,`,
		"instances.count":         "instances is a list; select an element with [i]",
		"seed[0]":                 "seed is not a list",
		"seed.x":                  `has no field "x"`,
		"nope":                    `unknown field "nope" in the scenario`,
		"workload.synthetic.rate": `unknown field "rate" in workload.synthetic`,
	} {
		err := CheckPath(mustPath(t, bad))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckPath(%q) = %v, want it to mention %q", bad, err, want)
		}
	}
}

// TestApplyRoundTrip: applying nothing reproduces the scenario exactly, and
// applying a path changes that field and nothing else.
func TestApplyRoundTrip(t *testing.T) {
	base, _ := loadPD(t)
	def, err := config.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*config.Scenario{base, def, config.Default()} {
		if s.Instances == nil {
			s.FillGroups()
		}
		got, err := Apply(s)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := config.Marshal(s)
		b, _ := config.Marshal(got)
		if !bytes.Equal(a, b) {
			t.Fatalf("round trip changed the scenario:\n%s\nvs\n%s", a, b)
		}
	}
	got, err := Apply(base,
		Assignment{mustPath(t, "instances[1].count"), uint64(3)},
		Assignment{mustPath(t, "handoff.policy"), "reserve"},
		Assignment{mustPath(t, "workload.time_scale"), 0.5},
		Assignment{mustPath(t, "instances[0].engine.max_num_seqs"), 64},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := *base
	want.Instances = append([]config.Group(nil), base.Instances...)
	three := 3
	want.Instances[1].Count = &three
	want.Instances[0].Engine = &config.Engine{MaxNumSeqs: 64}
	want.Handoff.Policy = "reserve"
	want.Workload.TimeScale = 0.5
	a, _ := config.Marshal(&want)
	b, _ := config.Marshal(got)
	if !bytes.Equal(a, b) {
		t.Fatalf("Apply:\n%s\nwant\n%s", b, a)
	}
	if *base.Instances[1].Count != 2 || base.Handoff.Policy != "pull" {
		t.Fatal("Apply modified its base")
	}
}

func TestApplyErrors(t *testing.T) {
	base, _ := loadPD(t)
	for _, tc := range []struct {
		path string
		val  any
		want string
	}{
		{"engine.max_num_seqs", -1, "engine.max_num_seqs: must be > 0 (got -1)"},
		{"engine.max_num_seqs", "abc", "max_num_seqs: wrong type: want an integer, got abc"},
		{"handoff.policy", "bogus", "handoff.policy: must be pull, reserve"},
		{"instances[2].count", 1, "index [2] is out of range: the list has 2 element(s)"},
		{"instances[0].role", "decode", "a disaggregated cluster needs at least one prefill"},
	} {
		_, err := Apply(base, Assignment{mustPath(t, tc.path), tc.val})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Apply(%s=%v) = %v, want %q", tc.path, tc.val, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "\x00") {
			t.Errorf("error leaks the internal document name: %q", err)
		}
	}
}

func TestParseGrid(t *testing.T) {
	g, err := ParseGrid([]byte("# comment\nhandoff.policy: [pull, reserve]\ninstances[1].count:\n  - 1\n  - 2\n  - 3\nseed: 7\n"), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(g.Header(), " "); got != "handoff.policy instances[1].count seed" {
		t.Fatalf("header %q", got)
	}
	if g.Len() != 6 {
		t.Fatalf("Len = %d, want 6", g.Len())
	}
	if g.Axes[1].Line != 3 || g.Axes[1].ValuePos[2] != (Pos{6, 5}) {
		t.Fatalf("positions: axis line %d, value %v", g.Axes[1].Line, g.Axes[1].ValuePos[2])
	}
	// The first axis varies slowest.
	var got []string
	for i := range g.Len() {
		got = append(got, describe(g.Assignments(i)))
	}
	want := []string{
		"handoff.policy=pull, instances[1].count=1, seed=7",
		"handoff.policy=pull, instances[1].count=2, seed=7",
		"handoff.policy=pull, instances[1].count=3, seed=7",
		"handoff.policy=reserve, instances[1].count=1, seed=7",
		"handoff.policy=reserve, instances[1].count=2, seed=7",
		"handoff.policy=reserve, instances[1].count=3, seed=7",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("points:\n%s", strings.Join(got, "\n"))
	}
	for src, want := range map[string]string{
		"":                                 "g.yaml: empty grid",
		"- a\n":                            "g.yaml:1:1: a grid is a mapping",
		"seed: []\n":                       "g.yaml:1:1: seed has no values",
		"seed: [1]\nseed: [2]\n":           "g.yaml:2:1:",
		"seed: [1]\nengine.bogus: [2]\n":   `g.yaml:2:1: field path "engine.bogus": unknown field "bogus"`,
		"seed: [1]\ninstance[0].tp: [2]\n": `g.yaml:2:1: field path "instance[0].tp": unknown field "instance"`,
		"seed: [1\n":                       "g.yaml:1:",
	} {
		_, err := ParseGrid([]byte(src), "g.yaml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseGrid(%q) = %v, want %q", src, err, want)
		}
	}
}

// TestNewPlanNamesTheGridLine: a bad value is reported at its line and
// column in the grid file.
func TestNewPlanNamesTheGridLine(t *testing.T) {
	base, src := loadPD(t)
	g, err := ParseGrid([]byte("seed: [1, 2]\nengine.max_num_seqs: [64,\n  -1]\n"), "grid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewPlan(context.Background(), base, src, g)
	if err == nil || !strings.HasPrefix(err.Error(), "grid.yaml:3:3: engine.max_num_seqs = -1: engine.max_num_seqs: must be > 0") {
		t.Fatalf("got %v", err)
	}
	if g, err = ParseGrid([]byte("instances[0].role: [prefill, decode]\n"), "grid.yaml"); err != nil {
		t.Fatal(err)
	}
	_, err = NewPlan(context.Background(), base, src, g)
	if err == nil || !strings.Contains(err.Error(), "grid.yaml:1:30: instances[0].role = decode:") {
		t.Fatalf("got %v", err)
	}
}

func TestShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{{"0/4", ""}, {"3/4", ""}, {"0/1", ""}, {"4/4", "i must be in [0, 3]"}, {"-1/4", "i must be in"}, {"1/0", "n must be in [1, 1048576]"}, {"1/9223372036854775807", "n must be in [1, 1048576]"}, {"/4", "integers"}, {"2", "want i/n"}} {
		_, err := ParseShard(tc.in)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseShard(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
	for total := range 12 {
		for n := 1; n <= 5; n++ {
			seen := make([]int, total)
			for i := range n {
				sh := Shard{i, n}
				k := 0
				for p := range sh.Points(total) {
					if p%n != i {
						t.Fatalf("shard %v yields %d", sh, p)
					}
					seen[p]++
					k++
				}
				if k != sh.Size(total) {
					t.Fatalf("shard %v of %d: Size %d, yields %d", sh, total, sh.Size(total), k)
				}
			}
			for p, c := range seen {
				if c != 1 {
					t.Fatalf("n=%d total=%d: point %d in %d shards", n, total, p, c)
				}
			}
		}
	}
}

// runSweep runs the plan's shard into a CSV or JSON buffer.
func runSweep(t *testing.T, p *Plan, workers int, sh Shard, asJSON bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewCSVWriter(&buf, p)
	if asJSON {
		w = NewJSONWriter(&buf, p)
	}
	last := -1
	err := p.Run(context.Background(), Options{Workers: workers, Shard: sh}, func(r Row) error {
		if r.Point <= last {
			t.Fatalf("row %d emitted after %d", r.Point, last)
		}
		last = r.Point
		if r.Err != "" {
			t.Fatalf("point %d: %s", r.Point, r.Err)
		}
		return w.Write(r)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSweepIsDeterministic is the acceptance test of the sweep: the
// 16-point grid of examples/grid-pd.yaml on examples/pd-2p2d.yaml gives
// byte-identical output with one worker, with all workers and with more
// workers than cores, and when run as 4 shards that are merged (CSV and
// JSON).
func TestSweepIsDeterministic(t *testing.T) {
	base, src := loadPD(t)
	g, err := LoadGrid("../../examples/grid-pd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(context.Background(), base, src, g)
	if err != nil {
		t.Fatal(err)
	}
	if p.Len() != 16 {
		t.Fatalf("grid has %d points, want 16", p.Len())
	}
	one := runSweep(t, p, 1, Shard{}, false)
	if lines := strings.Count(string(one), "\n"); lines != 17 {
		t.Fatalf("CSV has %d lines, want a header and 16 rows", lines)
	}
	for _, w := range []int{0, 5} {
		if got := runSweep(t, p, w, Shard{}, false); !bytes.Equal(got, one) {
			t.Fatalf("workers=%d output differs from workers=1:\n%s\nvs\n%s", w, got, one)
		}
	}
	var shards []Input
	for i := range 4 {
		shards = append(shards, Input{Name: "shard-" + string(rune('0'+i)) + ".csv", Data: runSweep(t, p, 0, Shard{i, 4}, false)})
	}
	// Merge in a scrambled order: the result must not depend on it.
	var merged bytes.Buffer
	if err := Merge(&merged, []Input{shards[2], shards[0], shards[3], shards[1]}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(merged.Bytes(), one) {
		t.Fatalf("merged shards differ from the single-process output:\n%s\nvs\n%s", merged.Bytes(), one)
	}

	oneJSON := runSweep(t, p, 1, Shard{}, true)
	var js []Input
	for i := range 4 {
		js = append(js, Input{Name: "s.json", Data: runSweep(t, p, 0, Shard{i, 4}, true)})
	}
	merged.Reset()
	if err := Merge(&merged, js); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(merged.Bytes(), oneJSON) {
		t.Fatalf("merged JSON shards differ:\n%s\nvs\n%s", merged.Bytes(), oneJSON)
	}

	// Merge refuses missing, overlapping and foreign shards.
	for name, tc := range map[string]struct {
		in   []Input
		want string
	}{
		"missing":  {[]Input{shards[0], shards[1], shards[3]}, "4 of 16 points are missing (2, 6, 10, 14)"},
		"overlap":  {[]Input{shards[0], shards[1], shards[2], shards[3], {"again.csv", shards[1].Data}}, "point 1 is also in shard-1.csv"},
		"mixed":    {[]Input{shards[0], js[1]}, "mixes CSV and JSON"},
		"empty":    {[]Input{shards[0], {"e.csv", nil}}, "e.csv: empty file"},
		"no input": {nil, "no inputs"},
	} {
		err := Merge(&bytes.Buffer{}, tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Merge = %v, want %q", name, err, tc.want)
		}
	}
	other := *base
	other.Seed = 7
	p2, err := NewPlan(context.Background(), &other, src, g)
	if err != nil {
		t.Fatal(err)
	}
	foreign := runSweep(t, p2, 0, Shard{1, 4}, false)
	err = Merge(&bytes.Buffer{}, []Input{shards[0], {"foreign.csv", foreign}, shards[2], shards[3]})
	if err == nil || !strings.Contains(err.Error(), "different sweeps") {
		t.Errorf("foreign shard: Merge = %v", err)
	}
}

func TestRowErrorsDoNotStopTheSweep(t *testing.T) {
	base, src := loadPD(t)
	// 10 GB cannot hold Llama-3.1-8B's weights with its KV cache: that
	// point is reported, the other runs.
	g, err := ParseGrid([]byte("workload.limit: 20\ninstances[0].memory_gb: [0, 10]\n"), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(context.Background(), base, src, g)
	if err != nil {
		t.Fatal(err)
	}
	var rows []Row
	if err := p.Run(context.Background(), Options{}, func(r Row) error { rows = append(rows, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Err != "" || rows[0].Result.Finished != 20 || !strings.Contains(rows[1].Err, "exceed the usable memory") {
		t.Fatalf("rows: %+v", rows)
	}
	var buf bytes.Buffer
	w := NewCSVWriter(&buf, p)
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if !strings.Contains(buf.String(), "exceed the usable memory") {
		t.Fatalf("error column missing:\n%s", buf.String())
	}
}

func TestExpandInputs(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"shard-1.csv", "shard-0.csv", "notes.txt", "merged.csv"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ExpandInputs([]string{dir}, filepath.Join(dir, "merged.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "shard-0.csv") + " " + filepath.Join(dir, "shard-1.csv"); strings.Join(got, " ") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
	got, err = ExpandInputs([]string{filepath.Join(dir, "shard-*.csv"), filepath.Join(dir, "shard-0.csv")}, "-")
	if err != nil || len(got) != 2 {
		t.Fatalf("pattern: %v %v", got, err)
	}
	if _, err := ExpandInputs([]string{filepath.Join(dir, "nope-*.csv")}, ""); err == nil || !strings.Contains(err.Error(), "matches no file") {
		t.Fatalf("empty pattern: %v", err)
	}
	// The output named on its own as an input would be overwritten.
	out := filepath.Join(dir, "shard-0.csv")
	if _, err := ExpandInputs([]string{out, filepath.Join(dir, "shard-1.csv")}, out); err == nil || !strings.Contains(err.Error(), "both as the output and as a shard output") {
		t.Fatalf("output among the inputs: %v", err)
	}
	// Through a pattern it is skipped.
	if got, err := ExpandInputs([]string{filepath.Join(dir, "shard-*.csv")}, out); err != nil || len(got) != 1 {
		t.Fatalf("output matched by a pattern: %v %v", got, err)
	}
}

// TestCheckReportsThePoint: a point that is not a valid scenario is an
// *InvalidPointError naming the grid file, the point and its values, and
// Run reports it before simulating anything.
func TestCheckReportsThePoint(t *testing.T) {
	base, src := loadPD(t)
	g, err := ParseGrid([]byte("seed: [1, 2]\nengine.block_size: [16, 0]\n"), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := &Plan{Base: base, Source: src, Grid: g} // bypasses NewPlan's per-value check
	err = p.Run(context.Background(), Options{}, func(Row) error {
		t.Fatal("a point ran")
		return nil
	})
	var ip *InvalidPointError
	if !errors.As(err, &ip) || !strings.Contains(err.Error(), "g.yaml: point 1 (seed=1, engine.block_size=0): engine.block_size: must be > 0") {
		t.Fatalf("got %v", err)
	}
}

// TestShardHugeCount: a shard whose n is near the int range yields its one
// point and stops, with no overflow of the index.
func TestShardHugeCount(t *testing.T) {
	sh := Shard{Index: 1, Count: math.MaxInt}
	var got []int
	for p := range sh.Points(5) {
		got = append(got, p)
		if len(got) > 5 {
			break
		}
	}
	if len(got) != 1 || got[0] != 1 || sh.Size(5) != 1 {
		t.Fatalf("points %v, size %d; want [1], 1", got, sh.Size(5))
	}
}

// TestPanickingPointIsRecorded: a point whose simulation panics becomes a
// row with its error, marked internal; the other points complete.
func TestPanickingPointIsRecorded(t *testing.T) {
	base, src := loadPD(t)
	g, err := ParseGrid([]byte("workload.limit: 10\nhandoff.policy: [pull, reserve, push]\n"), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(context.Background(), base, src, g)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Workers: 2, point: func(ctx context.Context, i int) Row {
		if i == 1 {
			var m map[string]int
			//lint:ignore SA5000 a deliberate runtime panic, as a simulator bug would raise
			m["boom"]++
		}
		return p.runPoint(ctx, i)
	}}
	var rows []Row
	if err := p.Run(context.Background(), opts, func(r Row) error { rows = append(rows, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].Err != "" || rows[2].Err != "" || rows[0].Result.Finished != 10 || rows[2].Result.Finished != 10 {
		t.Fatalf("the other points did not complete: %+v", rows)
	}
	if !rows[1].Internal || !strings.Contains(rows[1].Err, "assignment to entry in nil map") || strings.Contains(rows[1].Err, "\n") {
		t.Fatalf("panicking point: internal %v, error %q", rows[1].Internal, rows[1].Err)
	}
}

// TestCancelStopsARunningPoint: cancelling the context stops a point whose
// simulation is running (the check reaches the event loop) and Run returns
// context.Canceled without emitting it.
func TestCancelStopsARunningPoint(t *testing.T) {
	base, src := loadPD(t)
	// 20,000 requests: far longer than the test waits.
	g, err := ParseGrid([]byte("workload.synthetic: {requests: 20000, arrival: {kind: poisson, rate: 50}, input: {kind: fixed, mean: 500}, output: {kind: fixed, mean: 200}}\nseed: [1, 2]\n"), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(context.Background(), base, src, g)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{}, 2)
	var stopped []Row // rows of points cut short (one worker: no race)
	opts := Options{Workers: 1, point: func(ctx context.Context, i int) Row {
		started <- struct{}{}
		r := p.runPoint(ctx, i)
		stopped = append(stopped, r)
		return r
	}}
	go func() { <-started; cancel() }()
	emitted := 0
	err = p.Run(ctx, opts, func(Row) error { emitted++; return nil })
	if !errors.Is(err, context.Canceled) || emitted != 0 {
		t.Fatalf("err %v, %d rows emitted; want context.Canceled and none", err, emitted)
	}
	// The running simulation itself stopped part-way, not after 20,000
	// requests.
	if len(stopped) != 1 || !strings.Contains(stopped[0].Err, "interrupted") {
		t.Fatalf("points run: %+v", stopped)
	}
}

// FuzzParseShard: any --shard text parses to a shard within the bounds or
// gives an error, and the shard's points are exactly Size of them.
func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"0/4", "3/4", "1/9223372036854775807", "-1/2", "1/0", "5", "/", "2/3/4", " 1/2 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sh, err := ParseShard(s)
		if err != nil {
			return
		}
		if sh.Index < 0 || sh.Index >= sh.Count || sh.Count > MaxShards {
			t.Fatalf("%q parsed to %+v", s, sh)
		}
		for _, total := range []int{0, 1, 7, 1000} {
			n := 0
			for p := range sh.Points(total) {
				if p < 0 || p >= total || p%sh.Count != sh.Index {
					t.Fatalf("%q: point %d of %d", s, p, total)
				}
				n++
			}
			if n != sh.Size(total) {
				t.Fatalf("%q: %d points of %d, Size %d", s, n, total, sh.Size(total))
			}
		}
	})
}

// FuzzParseGrid: any grid text parses or gives an error, never a panic,
// and a parsed grid's points all have one assignment per axis.
func FuzzParseGrid(f *testing.F) {
	for _, s := range []string{
		"engine.max_num_seqs: [64, 128]\n", "seed: [1, 2]\nworkload.time_scale: [1, 0.5]\n", "engine.max_num_seqs: 1.5\n",
		"a: [\n", "instances[0].count: [1, 9223372036854775807]\n", "x: []\n", "- 1\n", "engine: {max_num_seqs: [1, 2]}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ParseGrid(data, "g.yaml")
		if err != nil {
			return
		}
		for i := range min(g.Len(), 64) {
			g.Assignments(i)
		}
	})
}

// TestApplyHardwareReachesInheritingGroups: every instance group gets the
// scenario's accelerator when it names none, so a sweep axis or --set on
// the top-level hardware must move those groups too (it was silently
// ignored: a grid over three accelerators gave three identical rows). A
// group on another accelerator keeps it.
func TestApplyHardwareReachesInheritingGroups(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		sets       []Assignment
		want       []string // each group's hardware
	}{
		{"one inheriting group", "predictor: {kind: roofline}\n",
			[]Assignment{{Path{{Key: "hardware"}}, "H100"}}, []string{"H100"}},
		{"heterogeneous cluster", "predictor: {kind: roofline}\nhardware: A100\ninstances:\n  - {name: a, role: prefill}\n  - {name: b, role: decode, hardware: L40S}\n",
			[]Assignment{{Path{{Key: "hardware"}}, "H100"}}, []string{"H100", "L40S"}},
		{"group set after the scenario", "predictor: {kind: roofline}\ninstances: [{name: a}, {name: b}]\n",
			[]Assignment{{Path{{Key: "hardware"}}, "H100"}, {mustPath(t, "instances[1].hardware"), "A100"}}, []string{"H100", "A100"}},
		{"group set before the scenario", "predictor: {kind: roofline}\ninstances: [{name: a}, {name: b}]\n",
			[]Assignment{{mustPath(t, "instances[1].hardware"), "A100"}, {Path{{Key: "hardware"}}, "H100"}}, []string{"H100", "A100"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := config.Parse([]byte(tc.yaml), "s.yaml")
			if err != nil {
				t.Fatal(err)
			}
			got, err := Apply(base, tc.sets...)
			if err != nil {
				t.Fatal(err)
			}
			var hw []string
			for _, g := range got.Instances {
				hw = append(hw, g.Hardware)
			}
			if strings.Join(hw, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("groups on %v, want %v", hw, tc.want)
			}
		})
	}
}

// TestCancelStopsTheCheck: the up-front check of every point polls the
// context, so an interrupt stops a sweep of 10,000 points before it has
// validated them all (about 2.6 ms each) rather than after.
func TestCancelStopsTheCheck(t *testing.T) {
	base, src := loadPD(t)
	var grid strings.Builder
	grid.WriteString("seed: [")
	for i := range 100 {
		fmt.Fprintf(&grid, "%d, ", i+1)
	}
	grid.WriteString("1000]\nengine.max_num_seqs: [")
	for i := range 100 {
		fmt.Fprintf(&grid, "%d, ", i+1)
	}
	grid.WriteString("128]\n")
	g, err := ParseGrid([]byte(grid.String()), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(context.Background(), base, src, g)
	if err != nil {
		t.Fatal(err)
	}
	if p.Len() != 101*101 {
		t.Fatalf("%d points", p.Len())
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- p.Run(ctx, Options{Workers: 1}, func(Row) error { return errors.New("a point ran") })
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
		t.Logf("stopped %v after the start (cancelled at 50ms)", time.Since(start))
	case <-time.After(10 * time.Second):
		t.Fatal("the check of 10,201 points did not stop within 10 s of the cancellation")
	}
}

// TestGPUsAndKVBlocksColumns: each row says how many GPUs its layout uses
// (count x tp x pp x dp summed over the groups: 2 prefill + 2 or 3 decode
// instances of tp 1) and each group's KV blocks per instance.
func TestGPUsAndKVBlocksColumns(t *testing.T) {
	base, src := loadPD(t)
	g, err := ParseGrid([]byte("workload.limit: 10\nengine.num_gpu_blocks: 3000\ninstances[1].count: [2, 3]\n"), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(context.Background(), base, src, g)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(runSweep(t, p, 1, Shard{}, false))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := func(name string) int {
		i := slices.Index(rows[0], name)
		if i < 0 {
			t.Fatalf("no column %s in %v", name, rows[0])
		}
		return i
	}
	gpus, kv := col("gpus"), col("kv_blocks")
	for i, want := range []string{"4", "5"} {
		if r := rows[i+1]; r[gpus] != want || r[kv] != "prefill=3000; decode=3000" {
			t.Errorf("row %d: gpus %q, kv_blocks %q; want %s and prefill=3000; decode=3000", i, r[gpus], r[kv], want)
		}
	}
}
