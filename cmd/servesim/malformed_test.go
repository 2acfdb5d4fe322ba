package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// The malformed-input corpus (TestMalformedCorpus): every leaf of the
// valid scenarios in testdata/malformed (and every field of every line of its trace) is
// mutated into a wrong type, a negative, fractional, huge, overflowing or
// non-finite number, a bad enum, and every map gets an unknown field;
// the files are also truncated at every line. Each mutant is run as
// `servesim run -c FILE` and must end with exit code 0 or 2, never a panic
// or an internal error; a refusal must name the file:line or the mutated
// field's path; and a mutant that is invalid by construction (wrong type,
// unknown field, bad enum, fraction for an integer, overflow, NaN or
// infinity, a truncated JSON line) must be refused. Negative and huge
// values may be valid for some fields: those accepted are listed in
// acceptedNegatives and acceptedHuge with the reason they are valid, and
// any other accepted one fails the test.

// mutant is one malformed input.
type mutant struct {
	name     string // what was changed, e.g. "engine.max_num_seqs = -1"
	path     string // the field's path as errors name it ("" for truncations)
	scenario []byte // the scenario file
	trace    []byte // the trace file (nil: the base trace)
	class    string // mustReject, mayAccept, negative, huge
}

const (
	mustReject = "must-reject"
	mayAccept  = "may-accept" // e.g. a truncated scenario that is still a valid prefix
	negative   = "negative"
	huge       = "huge"
)

// acceptedNegatives are the fields where a negative value is valid input,
// with why.
var acceptedNegatives = map[string]string{
	"links.latency_us":                "-1 means the catalog's latency (docs/scenario.md)",
	"workload.priorities[0].priority": "priorities are any int32 (smaller is served first)",
	"workload.priorities[1].priority": "priorities are any int32 (smaller is served first)",
}

// acceptedHuge are the fields where a huge value (1e300 for a float,
// 2^62 for an integer) is valid input, with why.
var acceptedHuge = map[string]string{
	"seed":                                 "any uint64 is a seed",
	"limits.max_events":                    "a bound on the run: a huge one bounds nothing more than the automatic budget",
	"handoff.max_reprefills":               "a bound on re-prefills: huge means unbounded",
	"workload.synthetic.arrival.rate":      "a rate: gaps round to 0 ns, a burst",
	"workload.synthetic.requests":          "a generated workload of any size: run limits and the automatic event budget bound the run (docs/limits.md)",
	"workload.priorities[0].weight":        "relative weights, any finite value",
	"workload.priorities[1].weight":        "relative weights, any finite value",
	"workload.synthetic.output.weights[0]": "relative weights, any finite value",
	"workload.synthetic.output.weights[1]": "relative weights, any finite value",
}

// yamlMutations are the replacement values of one scalar leaf, with their
// class (by the leaf's kind).
func yamlMutations(v any) []struct {
	val   string
	class string
} {
	type m = struct {
		val   string
		class string
	}
	switch v.(type) {
	case bool:
		return []m{{`"bogus"`, mustReject}, {"2", mustReject}, {"[1]", mustReject}}
	case string:
		return []m{{`"bogus-value"`, mustReject}, {"[1]", mustReject}, {"{a: 1}", mustReject}}
	case float64:
		return []m{{`"bogus"`, mustReject}, {"-1", negative}, {"1e300", huge}, {".nan", mustReject}, {".inf", mustReject}, {"-.inf", mustReject}, {"[1]", mustReject}}
	default: // integers
		return []m{{`"bogus"`, mustReject}, {"-1", negative}, {"1.5", mustReject}, {"4611686018427387904", huge}, {"18446744073709551617", mustReject}, {"1e300", mustReject}, {".nan", mustReject}, {"[1]", mustReject}}
	}
}

// freeText are the string leaves that take any text (no enum, no name to
// resolve), so "bogus-value" is valid there.
var freeText = map[string]bool{"instances[0].name": true, "instances[1].name": true}

// scenarioMutants mutates every leaf of the scenario base.
func scenarioMutants(t *testing.T, base []byte) []mutant {
	var doc yaml.MapSlice
	if err := yaml.UnmarshalWithOptions(base, &doc, yaml.UseOrderedMap()); err != nil {
		t.Fatal(err)
	}
	var out []mutant
	add := func(name, path, class string, mutated yaml.MapSlice) {
		b, err := yaml.Marshal(mutated)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, mutant{name: name, path: path, scenario: b, class: class})
	}
	// walk visits every node; set replaces the node at path in a copy
	// of the document.
	var walk func(node any, path string, set func(any) yaml.MapSlice)
	walk = func(node any, path string, set func(any) yaml.MapSlice) {
		switch n := node.(type) {
		case yaml.MapSlice:
			add(path+": unknown field", joinPath(path, "bogus_field"), mustReject, set(append(cloneMap(n), yaml.MapItem{Key: "bogus_field", Value: 1})))
			if path != "" {
				add(path+" = 3", path, mustReject, set(3))
			}
			for i, it := range n {
				key := fmt.Sprint(it.Key)
				i := i
				walk(it.Value, joinPath(path, key), func(v any) yaml.MapSlice {
					c := cloneMap(n)
					c[i].Value = v
					return set(c)
				})
			}
		case []any:
			add(path+" = 3", path, mustReject, set(3))
			for i, el := range n {
				i := i
				walk(el, fmt.Sprintf("%s[%d]", path, i), func(v any) yaml.MapSlice {
					c := append([]any(nil), n...)
					c[i] = v
					return set(c)
				})
			}
		default:
			for _, m := range yamlMutations(n) {
				class := m.class
				if freeText[path] && m.val == `"bogus-value"` {
					class = mayAccept
				}
				add(fmt.Sprintf("%s = %s", path, m.val), path, class, set(rawYAML(m.val)))
			}
		}
	}
	walk(doc, "", func(v any) yaml.MapSlice { return v.(yaml.MapSlice) })
	// Truncations at every line and in the middle of every line.
	lines := bytes.SplitAfter(base, []byte("\n"))
	n := 0
	for i, l := range lines {
		n += len(l)
		out = append(out, mutant{name: fmt.Sprintf("cut after line %d", i+1), scenario: base[:n], class: mayAccept})
		if len(l) > 4 {
			out = append(out, mutant{name: fmt.Sprintf("cut inside line %d", i+1), scenario: base[:n-len(l)/2], class: mayAccept})
		}
	}
	return out
}

// rawYAML is a value that marshals as the given YAML text.
type rawYAML string

// MarshalYAML implements yaml.BytesMarshaler.
func (r rawYAML) MarshalYAML() ([]byte, error) { return []byte(r), nil }

func cloneMap(m yaml.MapSlice) yaml.MapSlice { return append(yaml.MapSlice(nil), m...) }

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// traceMutants mutates every field of every line of the base trace, adds
// unknown and repeated fields, and truncates every line.
func traceMutants(base []byte) []mutant {
	var out []mutant
	lines := strings.Split(strings.TrimSuffix(string(base), "\n"), "\n")
	field := regexp.MustCompile(`"([a-z_]+)": (-?[0-9.]+|"[^"]*"|\[[^\]]*\])`)
	with := func(i int, line string) []byte {
		c := append([]string(nil), lines...)
		c[i] = line
		return []byte(strings.Join(c, "\n") + "\n")
	}
	for i, l := range lines {
		at := fmt.Sprintf("trace.jsonl:%d", i+1)
		for _, loc := range field.FindAllStringSubmatchIndex(l, -1) {
			name := l[loc[2]:loc[3]]
			for _, m := range []struct{ val, class string }{
				{`"bogus"`, mustReject}, {"-1", negative}, {"1.5", mustReject},
				{"1e30", mustReject}, {"9223372036854775808", mustReject}, {"{}", mustReject},
			} {
				class := m.class
				if name == "session_id" && m.val == `"bogus"` {
					class = mayAccept // any non-empty name
				}
				if name == "priority" && m.val == "-1" {
					class = mayAccept
				}
				mut := l[:loc[4]] + m.val + l[loc[5]:]
				out = append(out, mutant{name: fmt.Sprintf("%s %s = %s", at, name, m.val), path: at, trace: with(i, mut), class: class})
			}
		}
		out = append(out,
			mutant{name: at + " unknown field", path: at, trace: with(i, strings.Replace(l, "{", `{"bogus_field": 1, `, 1)), class: mustReject},
			mutant{name: at + " repeated field", path: at, trace: with(i, strings.Replace(l, "{", `{"arrival_time_ns": 0, `, 1)), class: mustReject},
			mutant{name: at + " cut", path: at, trace: with(i, l[:len(l)/2]), class: mustReject},
		)
	}
	return out
}

// fieldFirst matches an error that starts with a field path, e.g.
// "servesim: instances[0].hardware: ...".
var fieldFirst = regexp.MustCompile(`^servesim: [a-z_]+(\[\d+\])?(\.[a-z_]+(\[\d+\])?)*: `)

// namesPlace says whether an error names a file:line or the mutated
// field's path (any field path when the mutant is a truncation).
func namesPlace(stderr, file, path string) bool {
	if regexp.MustCompile(regexp.QuoteMeta(file) + `:\d+`).MatchString(stderr) {
		return true
	}
	if path == "" {
		return fieldFirst.MatchString(stderr)
	}
	return strings.Contains(stderr, path)
}

// TestMalformedCorpus runs the malformed-input corpus described above.
func TestMalformedCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "malformed")
	trace, err := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var all []mutant
	for _, base := range []string{"colocated", "pd", "moe"} {
		data, err := os.ReadFile(filepath.Join(dir, base+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range scenarioMutants(t, data) {
			m.name = base + ": " + m.name
			all = append(all, m)
		}
		if base == "pd" {
			for _, m := range traceMutants(trace) {
				m.name = base + ": " + m.name
				m.scenario = data
				all = append(all, m)
			}
		}
	}
	if d := os.Getenv("SERVESIM_MALFORMED_DUMP"); d != "" {
		// Triage: write every mutant out instead of running it.
		for k, m := range all {
			sub := filepath.Join(d, fmt.Sprintf("%04d", k))
			tr := m.trace
			if tr == nil {
				tr = trace
			}
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, "s.yaml"), m.scenario, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, "trace.jsonl"), tr, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, "name"), []byte(m.class+" | "+m.path+" | "+m.name+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Skipf("%d mutants written to %s", len(all), d)
	}
	// Every second mutant in the normal suite, every eighth under
	// -short, all of them with SERVESIM_MALFORMED_ALL=1 (the long run).
	stride := 2
	switch {
	case os.Getenv("SERVESIM_MALFORMED_ALL") != "":
		stride = 1
	case testing.Short():
		stride = 8
	}
	counts := map[string]int{}
	var accepted []string
	for k, m := range all {
		if k%stride != 0 {
			continue
		}
		tmp := t.TempDir()
		scen := filepath.Join(tmp, "s.yaml")
		tr := m.trace
		if tr == nil {
			tr = trace
		}
		if err := os.WriteFile(scen, m.scenario, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, "trace.jsonl"), tr, 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := execute([]string{"run", "-c", scen}, &stdout, &stderr)
		counts[fmt.Sprintf("exit %d", code)]++
		switch code {
		case 0:
			switch {
			case m.class == mustReject:
				t.Errorf("%s: accepted (exit 0), want a refusal", m.name)
			case m.class == negative && acceptedNegatives[m.path] == "":
				accepted = append(accepted, m.name)
			case m.class == huge && acceptedHuge[m.path] == "":
				accepted = append(accepted, m.name)
			}
		case exitBadInput:
			file := "s.yaml"
			if m.trace != nil {
				file = "trace.jsonl"
			}
			if msg := stderr.String(); !namesPlace(msg, file, m.path) {
				t.Errorf("%s: the error names neither %s:LINE nor %q: %s", m.name, file, m.path, msg)
			}
		default:
			t.Errorf("%s: exit %d, want 0 or 2: %s", m.name, code, stderr.String())
		}
	}
	sort.Strings(accepted)
	for _, a := range accepted {
		t.Errorf("%s: accepted (exit 0); refuse it, or list the field in acceptedNegatives/acceptedHuge with the reason it is valid", a)
	}
	t.Logf("%d mutants: %v", len(all), counts)
}

// TestMalformedRegressions runs the reproducers of bad input the corpus
// once accepted (testdata/malformed/regressions): each must be refused
// with exit code 2 and an error naming the field its first line gives
// ("# want: FIELD").
func TestMalformedRegressions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "malformed", "regressions", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no reproducers: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			want, ok := strings.CutPrefix(first, "# want: ")
			if !ok {
				t.Fatalf("first line %q lacks \"# want: FIELD\"", first)
			}
			var stdout, stderr bytes.Buffer
			code := execute([]string{"run", "-c", f}, &stdout, &stderr)
			if code != exitBadInput || !strings.Contains(stderr.String(), want) {
				t.Fatalf("exit %d, want %d naming %s: %s", code, exitBadInput, want, stderr.String())
			}
		})
	}
}
