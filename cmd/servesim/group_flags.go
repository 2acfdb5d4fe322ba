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
	for _, f := range engineFlags {
		if !set(f.flag) {
			continue
		}
		v := f.set(&s.Engine, g)
		var replaced []string
		for i := range s.Instances {
			e := s.Instances[i].Engine
			if e == nil {
				continue
			}
			if o, ok := f.own(e); ok && o != v {
				replaced = append(replaced, fmt.Sprintf("%s (%s)", groupName(s, i), o))
			}
			f.clear(e)
		}
		if len(replaced) > 0 {
			note("%s replaced the %s instance groups set on their own: %s; %s",
				f.typed(v), f.key, strings.Join(replaced, ", "), g.oneGroup("engine."+f.key, f.placeholder))
		}
	}
	return nil
}

// engineFlag is an engine flag of groupFlags: it sets the engine field
// key (the scenario's name) of the scenario and of every group.
type engineFlag struct {
	flag, key string
	// placeholder stands for a value in the notes: N, true|false.
	placeholder string
	// set sets e's field to the flag's value in g and returns it as text.
	set func(e *config.Engine, g *groupFlags) string
	// own returns e's field as text and whether e sets it (a group's
	// engine block sets the fields it gives a non-zero value).
	own func(e *config.Engine) (string, bool)
	// clear drops e's value, so that a group inherits the scenario's.
	clear func(e *config.Engine)
}

// typed renders the flag with value v as it is typed.
func (f engineFlag) typed(v string) string {
	if f.placeholder == "true|false" {
		return "--" + f.flag + "=" + v
	}
	return "--" + f.flag + " " + v
}

// intEngineFlag is an engine flag of an integer field.
func intEngineFlag(flag, key string, field func(*config.Engine) *int, value func(*groupFlags) int) engineFlag {
	return engineFlag{flag: flag, key: key, placeholder: "N",
		set: func(e *config.Engine, g *groupFlags) string {
			*field(e) = value(g)
			return strconv.Itoa(value(g))
		},
		own:   func(e *config.Engine) (string, bool) { v := *field(e); return strconv.Itoa(v), v != 0 },
		clear: func(e *config.Engine) { *field(e) = 0 },
	}
}

// engineFlags are the engine flags of groupFlags, in the order apply
// reads them.
var engineFlags = []engineFlag{
	intEngineFlag("max-num-seqs", "max_num_seqs",
		func(e *config.Engine) *int { return &e.MaxNumSeqs }, func(g *groupFlags) int { return g.maxSeqs }),
	intEngineFlag("max-num-batched-tokens", "max_num_batched_tokens",
		func(e *config.Engine) *int { return &e.MaxNumBatchedTokens }, func(g *groupFlags) int { return g.maxTokens }),
	intEngineFlag("num-gpu-blocks", "num_gpu_blocks",
		func(e *config.Engine) *int { return &e.NumGPUBlocks }, func(g *groupFlags) int { return g.numBlocks }),
	{flag: "prefix-caching", key: "enable_prefix_caching", placeholder: "true|false",
		set: func(e *config.Engine, g *groupFlags) string {
			on := g.caching
			e.PrefixCaching = &on
			return strconv.FormatBool(on)
		},
		own: func(e *config.Engine) (string, bool) {
			if e.PrefixCaching == nil {
				return "", false
			}
			return strconv.FormatBool(*e.PrefixCaching), true
		},
		clear: func(e *config.Engine) { e.PrefixCaching = nil },
	},
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
