package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/servesim/servesim/internal/config"
	"github.com/servesim/servesim/internal/sweep"
	"github.com/spf13/pflag"
)

// scenarioFlags are the command-line overrides of scenario fields; a flag
// that is set wins over the scenario file.
type scenarioFlags struct {
	file       string
	seed       uint64
	model      string
	models     string
	accels     string
	profiles   string
	trace      string
	format     string
	limit      int
	timeScale  float64
	overheadUs float64
	invariants bool
	handoff    string
	placement  string
	maxSimTime float64
	maxEvents  int64
	predictor  string
	// groups are the flags that set every instance group.
	groups groupFlags
	sets   []string
	// handoffList makes --handoff a comma-separated list of policies
	// (compare) instead of a scenario override.
	handoffList bool
	// multiFile makes -c repeatable (compare); files holds them and load
	// reads file, the first unless the caller sets another.
	multiFile bool
	files     []string
	fs        *pflag.FlagSet
	// notes name the instance groups a flag moved off a value the
	// scenario gave them alone, or left on it; load appends, one per
	// flag that met such a group.
	notes []string
}

func (f *scenarioFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	if f.multiFile {
		fs.StringArrayVarP(&f.files, "config", "c", nil, "scenario YAML file (default: the embedded default scenario); repeat to compare several")
	} else {
		fs.StringVarP(&f.file, "config", "c", "", "scenario YAML file (default: the embedded default scenario)")
	}
	fs.Uint64Var(&f.seed, "seed", 0, "random seed (overrides seed)")
	fs.StringVar(&f.model, "model", "", "model id org/name (overrides model)")
	fs.StringVar(&f.models, "models", "", "directory of extra HuggingFace configs <org>/<name>.json (overrides models)")
	fs.StringVar(&f.accels, "accelerators", "", "YAML file of accelerators in the catalog's shape, added to the catalog (overrides accelerators_file)")
	f.groups.register(fs, "", true)
	fs.StringVar(&f.profiles, "profiles", "", "root of profile bundles <hw>/<org>/<model>/<dtype>/tp<N> (overrides predictor.profiles)")
	fs.StringVar(&f.trace, "workload", "", "JSONL trace file or builtin:NAME (overrides workload.trace)")
	fs.StringVar(&f.format, "workload-format", "", "jsonl or vllm-requests (overrides workload.format)")
	fs.IntVar(&f.limit, "limit", 0, "simulate only the first N requests (overrides workload.limit)")
	fs.Float64Var(&f.timeScale, "time-scale", 0, "multiply arrival times (overrides workload.time_scale)")
	fs.Float64Var(&f.overheadUs, "step-overhead-us", 0, "overrides predictor.step_overhead_us")
	if f.handoffList {
		fs.StringVar(&f.handoff, "handoff", "pull,reserve,reject,push,eager", "comma-separated handoff policies to compare")
	} else {
		fs.StringVar(&f.handoff, "handoff", "", "handoff policy pull|reserve|reject|push|eager (overrides handoff.policy)")
	}
	fs.StringVar(&f.placement, "placement", "", "decode placement round-robin|least-loaded|most-free-kv|retry (overrides handoff.placement)")
	fs.Float64Var(&f.maxSimTime, "max-sim-time", 0, "stop at this simulated time, seconds (overrides limits.max_sim_time_s; 0: no bound)")
	fs.Int64Var(&f.maxEvents, "max-events", 0, "stop after this many simulation events (overrides limits.max_events; 0: automatic budget)")
	fs.BoolVar(&f.invariants, "check-invariants", false, "verify KV-block conservation and scheduler limits after every step (walks over long queues are spread over several steps; docs/performance.md)")
	fs.StringVar(&f.predictor, "predictor", "", "step-latency predictor profile|roofline|perfdb (overrides predictor.kind)")
	fs.StringArrayVar(&f.sets, "set", nil, "override any scenario field, PATH=VALUE with the sweep grid's paths, e.g. --set instances[1].count=3 (repeatable; applied after the other flags; as in a scenario file, --set hardware=NAME moves only the groups that inherit the scenario's hardware)")
}

// cwdPath makes a path given on the command line absolute, so that it is
// read relative to the working directory rather than to the scenario file;
// builtin:NAME references are kept.
func cwdPath(p string) (string, error) {
	if p == "" || strings.HasPrefix(p, "builtin:") || filepath.IsAbs(p) {
		return p, nil
	}
	return filepath.Abs(p)
}

// load reads the scenario (or the default), applies the flags that were
// set and validates the result.
func (f *scenarioFlags) load() (*config.Scenario, config.Source, error) {
	var (
		s   *config.Scenario
		src config.Source
		err error
	)
	if f.multiFile && f.file == "" && len(f.files) == 1 {
		f.file = f.files[0]
	}
	if f.file != "" {
		s, src, err = config.Load(f.file)
		if err != nil {
			return nil, src, badInput(err)
		}
	} else {
		if s, err = config.LoadDefault(); err != nil {
			return nil, src, err
		}
	}
	set := f.fs.Changed
	if set("seed") {
		s.Seed = f.seed
	}
	if set("model") {
		s.Model = f.model
	}
	if set("models") {
		if s.Models, err = cwdPath(f.models); err != nil {
			return nil, src, badInput(fmt.Errorf("--models: %w", err))
		}
	}
	if set("accelerators") {
		if s.AcceleratorsFile, err = cwdPath(f.accels); err != nil {
			return nil, src, badInput(fmt.Errorf("--accelerators: %w", err))
		}
	}
	if err := f.groups.apply(s, set, f.note); err != nil {
		return nil, src, err
	}
	if set("profiles") {
		if s.Predictor.Profiles, err = cwdPath(f.profiles); err != nil {
			return nil, src, badInput(fmt.Errorf("--profiles: %w", err))
		}
	}
	if set("workload") {
		trace, err := cwdPath(f.trace)
		if err != nil {
			return nil, src, badInput(fmt.Errorf("--workload: %w", err))
		}
		s.Workload.Trace, s.Workload.Synthetic, s.Workload.Chat, s.Workload.SharedPrefix = trace, nil, nil, nil
	}
	if set("workload-format") {
		s.Workload.Format = config.TraceFormat(f.format)
	}
	if set("limit") {
		s.Workload.Limit = f.limit
	}
	if set("time-scale") {
		s.Workload.TimeScale = f.timeScale
	}
	if set("step-overhead-us") {
		s.Predictor.StepOverheadUs = f.overheadUs
	}
	if (set("handoff") && !f.handoffList) || set("placement") {
		if !s.PD() {
			return nil, src, badInput(fmt.Errorf("--handoff and --placement apply to disaggregated scenarios; this one has no prefill or decode instances (give instance groups role: prefill and role: decode)"))
		}
	}
	if set("handoff") && !f.handoffList {
		s.Handoff.Policy = config.HandoffPolicy(f.handoff)
	}
	if set("placement") {
		s.Handoff.Placement = config.HandoffPlacement(f.placement)
	}
	if set("predictor") {
		s.Predictor.Kind = config.PredictorKind(f.predictor)
	}
	if set("max-sim-time") {
		s.Limits.MaxSimTimeS = f.maxSimTime
	}
	if set("max-events") {
		s.Limits.MaxEvents = f.maxEvents
	}
	if set("check-invariants") {
		s.CheckInvariants = f.invariants
	}
	if err := s.Validate(); err != nil {
		return nil, src, badInput(err)
	}
	if len(f.sets) > 0 {
		var as []sweep.Assignment
		for _, kv := range f.sets {
			a, err := parseSet(kv)
			if err != nil {
				return nil, src, badInput(err)
			}
			as = append(as, a)
		}
		if s, err = sweep.Apply(s, as...); err != nil {
			return nil, src, badInput(fmt.Errorf("--set: %w", err))
		}
		f.noteSetHardware(s, as, "--set ")
		f.noteSetEngine(s, as, "--set ")
	}
	if !s.PD() && f.file != "" {
		sets, err := setsTopKey(f.file, "handoff")
		if err != nil {
			return nil, src, err
		}
		if sets {
			f.note("handoff: the scenario sets a handoff section, but no instance group has role prefill or decode: it applies to disaggregated serving only and is ignored")
		}
	}
	return s, src, nil
}

// setsTopKey reports whether the scenario file (already parsed) sets the
// top-level field key.
func setsTopKey(file, key string) (bool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return false, fmt.Errorf("read scenario: %w", err)
	}
	var top map[string]any
	if err := yaml.Unmarshal(data, &top); err != nil {
		return false, badInput(fmt.Errorf("%s: %w", file, err))
	}
	_, ok := top[key]
	return ok, nil
}

// The flags and --set treat instance groups differently, and say so
// whenever it matters. --hardware, --tp and the engine flags set every
// group, including a group the scenario gives a value of its own
// (groupFlags.apply notes the groups whose value they replaced); --set
// hardware=NAME changes the scenario's accelerator as editing the file
// would, moving only the groups that inherit it (a filled group on the
// scenario's accelerator), and --set engine.KEY=VALUE sets the engine
// section, which only the groups without a value of their own inherit;
// noteSetHardware and noteSetEngine name the groups they left on their
// own. So a group-level setting is never overridden, or kept,
// silently: the commands print the notes on stderr and run adds them to
// its summary.

// noteSetHardware notes the groups that keep an accelerator of their own
// after an assignment hardware=NAME among as (s is the scenario after
// them), given by the flag how ("--set ", or "--variant NAME: ").
func (f *scenarioFlags) noteSetHardware(s *config.Scenario, as []sweep.Assignment, how string) {
	for _, a := range as {
		if len(a.Path) != 1 || a.Path[0].Key != "hardware" {
			continue
		}
		var kept []string
		for _, g := range s.Instances {
			if g.Hardware != s.Hardware {
				kept = append(kept, fmt.Sprintf("%s (%s)", g.Name, g.Hardware))
			}
		}
		if len(kept) > 0 {
			f.note("%shardware=%s moved only the instance groups that inherit the scenario's accelerator; these keep their own: %s; --hardware %[2]s would move them too",
				how, s.Hardware, strings.Join(kept, ", "))
		}
		return
	}
}

// noteSetEngine notes, for each assignment among as of an engine field
// that a flag of groupFlags sets in every group, the groups that keep a
// different value of their own (s is the scenario after them; how as in
// noteSetHardware).
func (f *scenarioFlags) noteSetEngine(s *config.Scenario, as []sweep.Assignment, how string) {
	for _, a := range as {
		if len(a.Path) != 2 || a.Path[0].Key != "engine" {
			continue
		}
		for _, ef := range engineFlags {
			if ef.key != a.Path[1].Key {
				continue
			}
			v, ok := ef.own(&s.Engine)
			if !ok {
				break
			}
			var kept []string
			for i := range s.Instances {
				if e := s.Instances[i].Engine; e != nil {
					if o, ok := ef.own(e); ok && o != v {
						kept = append(kept, fmt.Sprintf("%s (%s)", groupName(s, i), o))
					}
				}
			}
			if len(kept) > 0 {
				f.note("%sengine.%s=%s set only the instance groups without a value of their own; these keep theirs: %s; %s would set them too",
					how, ef.key, v, strings.Join(kept, ", "), ef.typed(v))
			}
		}
	}
}

// note records a note, naming the scenario file when a command loads
// several.
func (f *scenarioFlags) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if f.multiFile && len(f.files) > 1 {
		msg = scenarioName(f.file) + ": " + msg
	}
	f.notes = append(f.notes, msg)
}

// printNotes writes the notes of the loads so far on w, one line each.
func (f *scenarioFlags) printNotes(w io.Writer) {
	for _, n := range f.notes {
		fmt.Fprintln(w, "servesim: note: "+n)
	}
}

// parseSet parses one --set PATH=VALUE; the value is read as YAML, so
// numbers, booleans, lists and mappings keep their types.
func parseSet(kv string) (sweep.Assignment, error) {
	path, val, ok := strings.Cut(kv, "=")
	if !ok || path == "" {
		return sweep.Assignment{}, fmt.Errorf("--set %q: want PATH=VALUE, e.g. --set engine.max_num_seqs=64", kv)
	}
	p, err := sweep.ParsePath(path)
	if err != nil {
		return sweep.Assignment{}, fmt.Errorf("--set %s: %w", path, err)
	}
	var v any
	if err := yaml.Unmarshal([]byte(val), &v); err != nil {
		return sweep.Assignment{}, fmt.Errorf("--set %s: value %q: %w", path, val, err)
	}
	return sweep.Assignment{Path: p, Value: v}, nil
}
