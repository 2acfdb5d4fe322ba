package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/servesim/servesim/internal/config"
	"github.com/spf13/pflag"
)

// groupFlags are the flags that give every instance group one value:
// --hardware, --tp and the engine flags --max-num-seqs,
// --max-num-batched-tokens, --num-gpu-blocks and --prefix-caching. Each
// sets the scenario's value and every group's, a group that sets its own
// included, and apply notes the groups whose own different value it
// replaced (docs/commands.md, "Overriding scenario fields"). Every command
// that takes these flags applies them through apply.
type groupFlags struct {
	hardware  string
	tp        int
	maxSeqs   int
	maxTokens int
	numBlocks int
	caching   bool
	// withSet says the command takes --set, which the notes then name as
	// the way to give one group a value; register sets it.
	withSet bool
}

// groupFlagNames are the flags of groupFlags, in the order apply reads them.
var groupFlagNames = []string{"hardware", "tp", "max-num-seqs", "max-num-batched-tokens", "num-gpu-blocks", "prefix-caching"}

// register adds the named flags (every one when names is empty) to fs,
// their help prefixed by prefix; withSet adds how --set gives one group a
// value of its own, for the commands that take --set.
func (g *groupFlags) register(fs *pflag.FlagSet, prefix string, withSet bool, names ...string) {
	g.withSet = withSet
	if len(names) == 0 {
		names = groupFlagNames
	}
	help := func(what, field, set string) string {
		h := prefix + what + " of every instance group, including groups that set their own"
		var also []string
		if field != "" {
			also = append(also, "overrides "+field)
		}
		if withSet {
			also = append(also, set)
		}
		if len(also) > 0 {
			h += " (" + strings.Join(also, "; ") + ")"
		}
		return h
	}
	for _, n := range names {
		switch n {
		case "hardware":
			fs.StringVar(&g.hardware, n, "", help("accelerator", "hardware", "--set hardware=NAME moves only the groups that inherit it"))
		case "tp":
			fs.IntVar(&g.tp, n, 0, help("tensor-parallel degree", "", "--set instances[I].tp=N sets one group's"))
		case "max-num-seqs":
			fs.IntVar(&g.maxSeqs, n, 0, help("max_num_seqs", "engine.max_num_seqs", "--set instances[I].engine.max_num_seqs=N sets one group's"))
		case "max-num-batched-tokens":
			fs.IntVar(&g.maxTokens, n, 0, help("max_num_batched_tokens", "engine.max_num_batched_tokens", "--set instances[I].engine.max_num_batched_tokens=N sets one group's"))
		case "num-gpu-blocks":
			fs.IntVar(&g.numBlocks, n, 0, help("KV capacity per instance, in blocks,", "engine.num_gpu_blocks", "--set instances[I].engine.num_gpu_blocks=N sets one group's"))
		case "prefix-caching":
			fs.BoolVar(&g.caching, n, true, help("prefix caching on or off, e.g. --prefix-caching=false,", "engine.enable_prefix_caching", "--set instances[I].engine.enable_prefix_caching=B sets one group's"))
		default:
			panic("groupFlags.register: unknown flag " + n)
		}
	}
}

// apply sets the flags among them that were set (set reports whether a
// flag was given) on s and on every instance group of s, calling note
// once per flag that replaced a value some group gave itself.
func (g *groupFlags) apply(s *config.Scenario, set func(name string) bool, note func(format string, args ...any)) error {
	if set("tp") && g.tp <= 0 {
		return badInput(errorf("--tp: must be > 0 (got %d)", g.tp))
	}
	if set("num-gpu-blocks") && g.numBlocks <= 0 {
		return badInput(errorf("--num-gpu-blocks: must be > 0 (got %d)", g.numBlocks))
	}
	if set("hardware") {
		g.noteHardware(s, note)
		s.Hardware = g.hardware
		for i := range s.Instances {
			s.Instances[i].Hardware = g.hardware
		}
	}
	if set("tp") {
		s.FillGroups()
		g.noteTP(s, note)
		for i := range s.Instances {
			tp := g.tp
			s.Instances[i].TP = &tp
		}
	}
	ints := []struct {
		flag, key string
		v         int
		field     func(*config.Engine) *int
	}{
		{"max-num-seqs", "max_num_seqs", g.maxSeqs, func(e *config.Engine) *int { return &e.MaxNumSeqs }},
		{"max-num-batched-tokens", "max_num_batched_tokens", g.maxTokens, func(e *config.Engine) *int { return &e.MaxNumBatchedTokens }},
		{"num-gpu-blocks", "num_gpu_blocks", g.numBlocks, func(e *config.Engine) *int { return &e.NumGPUBlocks }},
	}
	for _, f := range ints {
		if !set(f.flag) {
			continue
		}
		*f.field(&s.Engine) = f.v
		g.everyEngine(s, "--"+f.flag+" "+strconv.Itoa(f.v), f.key, strconv.Itoa(f.v), "N", note,
			func(e *config.Engine) (string, bool) { v := *f.field(e); return strconv.Itoa(v), v != 0 },
			func(e *config.Engine) { *f.field(e) = 0 })
	}
	if set("prefix-caching") {
		on := g.caching
		s.Engine.PrefixCaching = &on
		g.everyEngine(s, "--prefix-caching="+strconv.FormatBool(on), "enable_prefix_caching", strconv.FormatBool(on), "true|false", note,
			func(e *config.Engine) (string, bool) {
				if e.PrefixCaching == nil {
					return "", false
				}
				return strconv.FormatBool(*e.PrefixCaching), true
			},
			func(e *config.Engine) { e.PrefixCaching = nil })
	}
	return nil
}

// everyEngine makes every instance group of s inherit the scenario's
// engine field key, which the flag (as typed, e.g. "--max-num-seqs 64")
// has set to v: clear drops a group's own value, and own reports it (as
// text) and whether the group sets one. The groups whose own value
// differed from v are noted, with how --set would give one group a value
// (placeholder stands for it: N, true|false).
func (g *groupFlags) everyEngine(s *config.Scenario, flag, key, v, placeholder string, note func(string, ...any),
	own func(*config.Engine) (string, bool), clear func(*config.Engine)) {
	var replaced []string
	for i := range s.Instances {
		e := s.Instances[i].Engine
		if e == nil {
			continue
		}
		if o, ok := own(e); ok && o != v {
			replaced = append(replaced, fmt.Sprintf("%s (%s)", groupName(s, i), o))
		}
		clear(e)
	}
	if len(replaced) > 0 {
		note("%s replaced the %s instance groups set on their own: %s; %s",
			flag, key, strings.Join(replaced, ", "), g.oneGroup("engine."+key, placeholder))
	}
}

// groupName is the name of group i of s, the default name when the
// scenario gives none.
func groupName(s *config.Scenario, i int) string {
	if n := s.Instances[i].Name; n != "" {
		return n
	}
	return fmt.Sprintf("g%d", i)
}

// noteHardware notes the groups --hardware moves off an accelerator of
// their own (s is the scenario before the flag).
func (g *groupFlags) noteHardware(s *config.Scenario, note func(string, ...any)) {
	var own []string
	for i, gr := range s.Instances {
		if gr.Hardware != "" && gr.Hardware != s.Hardware && gr.Hardware != g.hardware {
			own = append(own, fmt.Sprintf("%s (%s)", groupName(s, i), gr.Hardware))
		}
	}
	if len(own) > 0 {
		keep := "hardware: " + g.hardware + " in the scenario file would keep them"
		if g.withSet {
			keep = "--set hardware=" + g.hardware + " would keep them"
		}
		note("--hardware %s also moved the instance groups on an accelerator of their own: %s; %s",
			g.hardware, strings.Join(own, ", "), keep)
	}
}

// noteTP notes, when the scenario's groups have different tp, the groups
// --tp changes (s is the filled scenario before the flag).
func (g *groupFlags) noteTP(s *config.Scenario, note func(string, ...any)) {
	var changed []string
	differ := false
	for _, gr := range s.Instances {
		differ = differ || *gr.TP != *s.Instances[0].TP
		if *gr.TP != g.tp {
			changed = append(changed, fmt.Sprintf("%s (tp %d)", gr.Name, *gr.TP))
		}
	}
	if differ && len(changed) > 0 {
		note("--tp %d replaced the different tp the scenario gives its instance groups: %s; %s",
			g.tp, strings.Join(changed, ", "), g.oneGroup("tp", "N"))
	}
}

// oneGroup says how to give one instance group its own value of the
// group field path (placeholder stands for the value): --set where the
// command takes it, else the scenario file.
func (g *groupFlags) oneGroup(path, placeholder string) string {
	if g.withSet {
		return "--set instances[I]." + path + "=" + placeholder + " sets one group's"
	}
	return "instances[I]." + path + " in the scenario file sets one group's"
}
