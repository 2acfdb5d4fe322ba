package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/config"
	_ "github.com/servesim/servesim/internal/testseed"
	"pgregory.net/rapid"
)

// ownEngines is a disaggregated scenario whose two instance groups set
// their own max_num_seqs, max_num_batched_tokens, num_gpu_blocks and
// enable_prefix_caching (on, over the scenario's off). Its workload is
// four requests over one shared 256-token context (16 blocks of 16
// tokens), one per second: the first computes the context, each later one
// finds it in the prefill instance's cache, so with prefix caching on the
// summary counts 3 x 256 = 768 input tokens from the prefix cache, and 0
// with it off.
const ownEngines = `name: own
hardware: H100
predictor: {kind: roofline}
engine: {enable_prefix_caching: false}
instances:
  - name: pre
    role: prefill
    engine: {max_num_seqs: 32, max_num_batched_tokens: 4096, num_gpu_blocks: 3000, enable_prefix_caching: true}
  - name: dec
    role: decode
    engine: {max_num_seqs: 256, max_num_batched_tokens: 8192, num_gpu_blocks: 5000, enable_prefix_caching: true}
workload:
  shared_prefix:
    requests: 4
    arrival: {kind: constant, rate: 1}
    prefixes: 1
    prefix: {kind: fixed, mean: 256}
    question: {kind: fixed, mean: 32}
    output: {kind: fixed, mean: 4}
`

// flatEngines is ownEngines with the engine values in the scenario's
// engine section only, none in the groups.
const flatEngines = `name: own
hardware: H100
predictor: {kind: roofline}
engine: {max_num_seqs: 64, max_num_batched_tokens: 2048, num_gpu_blocks: 4000, enable_prefix_caching: false}
instances:
  - {name: pre, role: prefill}
  - {name: dec, role: decode}
workload:
  shared_prefix:
    requests: 4
    arrival: {kind: constant, rate: 1}
    prefixes: 1
    prefix: {kind: fixed, mean: 256}
    question: {kind: fixed, mean: 32}
    output: {kind: fixed, mean: 4}
`

var (
	noteLine        = regexp.MustCompile(`(?m)^Note: .*$`)
	stderrNoteLine  = regexp.MustCompile(`(?m)^servesim: note: .*$`)
	prefixCacheLine = regexp.MustCompile(`(?m)^  from prefix cache: +(\d+)$`)
)

// TestEngineFlagsSetEveryGroup: --max-num-seqs, --max-num-batched-tokens,
// --num-gpu-blocks and --prefix-caching set every instance group, groups
// with values of their own included; the summary's group lines show the
// flag's value, and one note, in the summary and on stderr, names the
// groups whose own different value was replaced. A group already on the
// flag's value is not named, and a scenario whose groups inherit the
// engine section gets no note. --set engine.KEY=VALUE sets the engine
// section only, and names the groups that keep their own.
func TestEngineFlagsSetEveryGroup(t *testing.T) {
	dir := t.TempDir()
	own := write(t, dir, "own.yaml", ownEngines)
	// The groups switch prefix caching off, the scenario on.
	off := write(t, dir, "off.yaml", strings.ReplaceAll(strings.Replace(ownEngines,
		"engine: {enable_prefix_caching: false}", "engine: {enable_prefix_caching: true}", 1),
		"enable_prefix_caching: true}", "enable_prefix_caching: false}"))
	flat := write(t, dir, "flat.yaml", flatEngines)
	const (
		preLine = "Instances pre: 1 x prefill on H100 tp 1, "
		decLine = "Instances dec: 1 x decode on H100 tp 1, "
	)
	for _, tt := range []struct {
		name        string
		args        []string
		lines       []string // expected summary lines (substrings, in order)
		prefixCache string   // input tokens from the prefix cache
		note        string   // expected note ("" none)
	}{
		{"no flag keeps the groups' own values", []string{"-c", own},
			[]string{preLine + "3000 KV blocks", "max_num_seqs 32, max_num_batched_tokens 4096", decLine + "5000 KV blocks", "max_num_seqs 256, max_num_batched_tokens 8192"},
			"768", ""},
		{"--max-num-seqs", []string{"-c", own, "--max-num-seqs", "64"},
			[]string{preLine, "max_num_seqs 64, max_num_batched_tokens 4096", decLine, "max_num_seqs 64, max_num_batched_tokens 8192"},
			"768", "--max-num-seqs 64 replaced the max_num_seqs instance groups set on their own: pre (32), dec (256); --set instances[I].engine.max_num_seqs=N sets one group's"},
		{"--max-num-seqs equal to one group's", []string{"-c", own, "--max-num-seqs", "32"},
			[]string{preLine, "max_num_seqs 32, max_num_batched_tokens 4096", decLine, "max_num_seqs 32, max_num_batched_tokens 8192"},
			"768", "--max-num-seqs 32 replaced the max_num_seqs instance groups set on their own: dec (256); --set instances[I].engine.max_num_seqs=N sets one group's"},
		{"--max-num-batched-tokens", []string{"-c", own, "--max-num-batched-tokens", "2048"},
			[]string{preLine, "max_num_seqs 32, max_num_batched_tokens 2048", decLine, "max_num_seqs 256, max_num_batched_tokens 2048"},
			"768", "--max-num-batched-tokens 2048 replaced the max_num_batched_tokens instance groups set on their own: pre (4096), dec (8192); --set instances[I].engine.max_num_batched_tokens=N sets one group's"},
		{"--num-gpu-blocks", []string{"-c", own, "--num-gpu-blocks", "4000"},
			[]string{preLine + "4000 KV blocks x 16 tokens", decLine + "4000 KV blocks x 16 tokens"},
			"768", "--num-gpu-blocks 4000 replaced the num_gpu_blocks instance groups set on their own: pre (3000), dec (5000); --set instances[I].engine.num_gpu_blocks=N sets one group's"},
		{"--prefix-caching=false", []string{"-c", own, "--prefix-caching=false"},
			[]string{preLine + "3000 KV blocks", decLine + "5000 KV blocks"},
			"0", "--prefix-caching=false replaced the enable_prefix_caching instance groups set on their own: pre (true), dec (true); --set instances[I].engine.enable_prefix_caching=true|false sets one group's"},
		{"groups off, no flag", []string{"-c", off},
			[]string{preLine, decLine}, "0", ""},
		{"groups off, --prefix-caching=true", []string{"-c", off, "--prefix-caching=true"},
			[]string{preLine, decLine},
			"768", "--prefix-caching=true replaced the enable_prefix_caching instance groups set on their own: pre (false), dec (false); --set instances[I].engine.enable_prefix_caching=true|false sets one group's"},
		{"--set engine.max_num_seqs keeps the groups' own", []string{"-c", own, "--set", "engine.max_num_seqs=32"},
			[]string{preLine, "max_num_seqs 32, max_num_batched_tokens 4096", decLine, "max_num_seqs 256, max_num_batched_tokens 8192"},
			"768", "--set engine.max_num_seqs=32 set only the instance groups without a value of their own; these keep theirs: dec (256); --max-num-seqs 32 would set them too"},
		{"--set engine.enable_prefix_caching keeps the groups' own", []string{"-c", off, "--set", "engine.enable_prefix_caching=true"},
			[]string{preLine, decLine},
			"0", "--set engine.enable_prefix_caching=true set only the instance groups without a value of their own; these keep theirs: pre (false), dec (false); --prefix-caching=true would set them too"},
		{"--set one group's engine", []string{"-c", own, "--set", "instances[1].engine.max_num_seqs=64"},
			[]string{preLine, "max_num_seqs 32, max_num_batched_tokens 4096", decLine, "max_num_seqs 64, max_num_batched_tokens 8192"},
			"768", ""},
		{"no group values, every flag", []string{"-c", flat, "--max-num-seqs", "48", "--max-num-batched-tokens", "1024", "--num-gpu-blocks", "2500", "--prefix-caching=true"},
			[]string{preLine + "2500 KV blocks", "max_num_seqs 48, max_num_batched_tokens 1024", decLine + "2500 KV blocks", "max_num_seqs 48, max_num_batched_tokens 1024"},
			"768", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, append([]string{"run", "-q"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			rest := out
			for _, l := range tt.lines {
				i := strings.Index(rest, l)
				if i < 0 {
					t.Fatalf("summary lacks %q (in order):\n%s", l, out)
				}
				rest = rest[i+len(l):]
			}
			if m := prefixCacheLine.FindStringSubmatch(out); m == nil || m[1] != tt.prefixCache {
				t.Errorf("input tokens from the prefix cache %v, want %s:\n%s", m, tt.prefixCache, out)
			}
			notes, errNotes := noteLine.FindAllString(out, -1), stderrNoteLine.FindAllString(errOut, -1)
			switch {
			case tt.note == "" && (len(notes) > 0 || len(errNotes) > 0):
				t.Errorf("want no note, got %q and %q", notes, errNotes)
			case tt.note != "" && !slices.Equal(notes, []string{"Note: " + tt.note}):
				t.Errorf("summary notes %q, want %q", notes, "Note: "+tt.note)
			case tt.note != "" && !slices.Equal(errNotes, []string{"servesim: note: " + tt.note}):
				t.Errorf("stderr notes %q, want %q", errNotes, "servesim: note: "+tt.note)
			}
		})
	}
}

// TestEngineFlagsMatchTheFile: the flags on a scenario whose groups set
// their own engine values simulate exactly what a file giving those values
// to every group does: the summaries are byte-identical but for the notes,
// one per flag.
func TestEngineFlagsMatchTheFile(t *testing.T) {
	dir := t.TempDir()
	own, flat := write(t, dir, "own.yaml", ownEngines), write(t, dir, "flat.yaml", flatEngines)
	code, got, errOut := run(t, "run", "-q", "-c", own, "--max-num-seqs", "64", "--max-num-batched-tokens", "2048", "--num-gpu-blocks", "4000", "--prefix-caching=false")
	if code != 0 {
		t.Fatalf("flags: exit %d: %s", code, errOut)
	}
	if n := len(noteLine.FindAllString(got, -1)); n != 4 {
		t.Errorf("%d notes, want 4 (one per flag):\n%s", n, got)
	}
	code, want, errOut := run(t, "run", "-q", "-c", flat)
	if code != 0 {
		t.Fatalf("file: exit %d: %s", code, errOut)
	}
	var kept []string
	for _, l := range strings.SplitAfter(got, "\n") {
		if !strings.HasPrefix(l, "Note: ") {
			kept = append(kept, l)
		}
	}
	if got := strings.Join(kept, ""); got != want {
		t.Errorf("the flags' run differs from the file's\nflags:\n%s\nfile:\n%s", got, want)
	}
}

// TestEngineFlagNotesInEveryCommand: compare, sweep, search and validate
// --bench apply the engine flags to every group as run does and name the
// groups on stderr, once.
func TestEngineFlagNotesInEveryCommand(t *testing.T) {
	dir := t.TempDir()
	own := write(t, dir, "own.yaml", ownEngines)
	grid := write(t, dir, "grid.yaml", "seed: [1, 2]\n")
	// validate --bench replays its own requests on the scenario's
	// engines; this one has two colocated groups of their own.
	mixed := write(t, dir, "mixed.yaml", "name: mixed\nhardware: H100\npredictor: {kind: roofline}\ninstances:\n  - {name: a, engine: {max_num_seqs: 32}}\n  - {name: b, engine: {max_num_seqs: 256}}\n")
	mixed64 := write(t, dir, "mixed64.yaml", "name: mixed\nhardware: H100\npredictor: {kind: roofline}\nengine: {max_num_seqs: 64}\ninstances:\n  - {name: a}\n  - {name: b}\n")
	const bench = "../../internal/validate/testdata/bench-serve-llama-3.1-8b.json.gz"
	seqsNote := "servesim: note: --max-num-seqs 64 replaced the max_num_seqs instance groups set on their own: pre (32), dec (256); --set instances[I].engine.max_num_seqs=N sets one group's\n"
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"compare", []string{"compare", "-q", "-c", own, "--handoff", "pull,reserve", "--max-num-seqs", "64"}, seqsNote},
		{"compare files", []string{"compare", "-q", "-c", own, "-c", mixed, "--max-num-seqs", "64"},
			"servesim: note: " + own + ": --max-num-seqs 64 replaced the max_num_seqs instance groups set on their own: pre (32), dec (256); --set instances[I].engine.max_num_seqs=N sets one group's\n"},
		{"compare --variant", []string{"compare", "-q", "-c", own, "--variant", "a: engine.num_gpu_blocks=4000", "--variant", "b: engine.num_gpu_blocks=5000"},
			"servesim: note: --variant a: engine.num_gpu_blocks=4000 set only the instance groups without a value of their own; these keep theirs: pre (3000), dec (5000); --num-gpu-blocks 4000 would set them too\n"},
		{"sweep", []string{"sweep", "-q", "-c", own, "--grid", grid, "-o", dir + "/out.csv", "--max-num-seqs", "64"}, seqsNote},
		{"search pd-ratio", []string{"search", "pd-ratio", "-q", "-c", own, "--gpus", "2", "--max-num-seqs", "64"}, seqsNote},
		{"validate --bench", []string{"validate", "--bench", bench, "-c", mixed, "--max-num-seqs", "64"},
			"servesim: note: --max-num-seqs 64 replaced the max_num_seqs instance groups set on their own: a (32), b (256); instances[I].engine.max_num_seqs in the scenario file sets one group's\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, c.args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			if n := strings.Count(errOut, c.want); n != 1 {
				t.Errorf("stderr has the note %d times, want once:\n%s\nwant the line %q", n, errOut, c.want)
			}
		})
	}
	// validate --bench simulates with the flag's value in every group:
	// the same report as a file that gives all groups 64.
	_, got, _ := run(t, "validate", "--bench", bench, "-c", mixed, "--max-num-seqs", "64")
	_, want, _ := run(t, "validate", "--bench", bench, "-c", mixed64)
	if got != want || got == "" {
		t.Errorf("validate --bench --max-num-seqs 64 differs from the file's 64\nflag:\n%s\nfile:\n%s", got, want)
	}
	// A bad value is refused in one line, as by run.
	code, _, errOut := run(t, "validate", "--bench", bench, "-c", mixed, "--tp", "0")
	if code != 2 || errOut != "servesim: --tp: must be > 0 (got 0)\n" {
		t.Errorf("validate --bench --tp 0: exit %d, %q", code, errOut)
	}
}

// TestGroupFlagsApply checks groupFlags.apply on random scenarios: after
// it, every group's effective engine holds each set flag's value, the
// groups' values of flags not set are untouched, and each note names
// exactly the groups whose own value differed from the flag's.
func TestGroupFlagsApply(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := &config.Scenario{Engine: config.Engine{MaxNumSeqs: rapid.SampledFrom([]int{0, 64, 128}).Draw(t, "top")}}
		n := rapid.IntRange(1, 4).Draw(t, "groups")
		values := []int{0, 32, 64, 256}
		for i := range n {
			g := config.Group{Name: fmt.Sprintf("grp%d", i)}
			if rapid.Bool().Draw(t, "has engine") {
				e := &config.Engine{
					MaxNumSeqs:          rapid.SampledFrom(values).Draw(t, "seqs"),
					MaxNumBatchedTokens: rapid.SampledFrom([]int{0, 2048, 8192}).Draw(t, "tokens"),
					NumGPUBlocks:        rapid.SampledFrom([]int{0, 1000}).Draw(t, "blocks"),
				}
				if c := rapid.IntRange(0, 2).Draw(t, "caching"); c > 0 {
					on := c == 2
					e.PrefixCaching = &on
				}
				g.Engine = e
			}
			s.Instances = append(s.Instances, g)
		}
		before := make([]config.Engine, n)
		for i := range s.Instances {
			before[i] = s.Instances[i].Merged(s.Engine)
		}
		g := groupFlags{
			maxSeqs: rapid.SampledFrom(values[1:]).Draw(t, "flag seqs"),
			caching: rapid.Bool().Draw(t, "flag caching"),
		}
		setSeqs, setCaching := rapid.Bool().Draw(t, "set seqs"), rapid.Bool().Draw(t, "set caching")
		set := func(name string) bool {
			return name == "max-num-seqs" && setSeqs || name == "prefix-caching" && setCaching
		}
		var notes []string
		note := func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }
		wantSeqs, wantCaching := []string{}, []string{}
		for _, gr := range s.Instances {
			if e := gr.Engine; e != nil {
				if e.MaxNumSeqs != 0 && e.MaxNumSeqs != g.maxSeqs {
					wantSeqs = append(wantSeqs, fmt.Sprintf("%s (%d)", gr.Name, e.MaxNumSeqs))
				}
				if e.PrefixCaching != nil && *e.PrefixCaching != g.caching {
					wantCaching = append(wantCaching, fmt.Sprintf("%s (%t)", gr.Name, *e.PrefixCaching))
				}
			}
		}
		if err := g.apply(s, set, note); err != nil {
			t.Fatal(err)
		}
		for i := range s.Instances {
			m := s.Instances[i].Merged(s.Engine)
			if setSeqs && m.MaxNumSeqs != g.maxSeqs || !setSeqs && m.MaxNumSeqs != before[i].MaxNumSeqs {
				t.Fatalf("group %d: max_num_seqs %d (before %d, flag set %t %d)", i, m.MaxNumSeqs, before[i].MaxNumSeqs, setSeqs, g.maxSeqs)
			}
			if setCaching && (m.PrefixCaching == nil || *m.PrefixCaching != g.caching) || !setCaching && m.PrefixCaching != before[i].PrefixCaching {
				t.Fatalf("group %d: prefix caching %v (flag set %t %t)", i, m.PrefixCaching, setCaching, g.caching)
			}
			if m.MaxNumBatchedTokens != before[i].MaxNumBatchedTokens || m.NumGPUBlocks != before[i].NumGPUBlocks {
				t.Fatalf("group %d: a flag not given changed the engine: %+v, before %+v", i, m, before[i])
			}
		}
		var want []string
		if setSeqs && len(wantSeqs) > 0 {
			want = append(want, fmt.Sprintf("--max-num-seqs %d replaced the max_num_seqs instance groups set on their own: %s; instances[I].engine.max_num_seqs in the scenario file sets one group's", g.maxSeqs, strings.Join(wantSeqs, ", ")))
		}
		if setCaching && len(wantCaching) > 0 {
			want = append(want, fmt.Sprintf("--prefix-caching=%t replaced the enable_prefix_caching instance groups set on their own: %s; instances[I].engine.enable_prefix_caching in the scenario file sets one group's", g.caching, strings.Join(wantCaching, ", ")))
		}
		if !slices.Equal(notes, want) {
			t.Fatalf("notes %q, want %q", notes, want)
		}
	})
}
