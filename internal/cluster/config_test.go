package cluster

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/engine"
	"github.com/servesim/servesim/internal/link"
)

// TestConfigValidate: New refuses every inconsistent Config with an error
// naming the problem, and builds a consistent one.
func TestConfigValidate(t *testing.T) {
	base := engine.Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 256, BlockSize: 16, NumBlocks: 64, ChunkedPrefill: true}
	mk := func(roles ...engine.Role) []*engine.Engine {
		var es []*engine.Engine
		for i, r := range roles {
			cfg := base
			cfg.Role = r
			e, err := engine.New(i, cfg, linear{base: 1e6, perTok: 1000})
			if err != nil {
				t.Fatal(err)
			}
			es = append(es, e)
		}
		return es
	}
	pdSetup := func(n int) *PDSetup {
		net := link.New()
		nodes := make([]Node, n)
		for i := range nodes {
			nodes[i] = Node{Endpoints: []link.EndpointID{must(net.AddEndpoint(1e10, 1000))}, KVBytesPerToken: 1000, Layers: 32}
		}
		return &PDSetup{Config: PDConfig{Policy: Pull, MaxReprefills: 3}, Nodes: nodes, Net: net}
	}
	group := func(ranks ...int) []DPGroup {
		return []DPGroup{{Ranks: ranks, Pred: linear{base: 1e6}, MoE: moePerTok(10), Graph: testGraph}}
	}
	for _, tc := range []struct {
		name string
		cfg  func() Config
		want string // "" for a valid config
	}{
		{"valid colocated", func() Config { return Config{Engines: mk(engine.Mixed), Source: &sliceSrc{}} }, ""},
		{"valid P/D", func() Config {
			return Config{Engines: mk(engine.Prefill, engine.Decode), Source: &sliceSrc{}, PD: pdSetup(2)}
		}, ""},
		{"valid DP group", func() Config {
			return Config{Engines: mk(engine.Mixed, engine.Mixed), Source: &sliceSrc{}, DPGroups: group(0, 1)}
		}, ""},
		{"no engines", func() Config { return Config{Source: &sliceSrc{}} }, "at least one instance"},
		{"nil engine", func() Config { return Config{Engines: []*engine.Engine{nil}, Source: &sliceSrc{}} }, "engine 0 is nil"},
		{"no source", func() Config { return Config{Engines: mk(engine.Mixed)} }, "workload source"},
		{"negative concurrency", func() Config {
			return Config{Engines: mk(engine.Mixed), Source: &sliceSrc{}, MaxConcurrency: -1}
		}, "max concurrency"},
		{"negative warm-up", func() Config { return Config{Engines: mk(engine.Mixed), Source: &sliceSrc{}, Warmup: -2} }, "warm-up"},
		{"negative limit", func() Config {
			return Config{Engines: mk(engine.Mixed), Source: &sliceSrc{}, Limits: Limits{MaxEvents: -1}}
		}, "limits must be >= 0"},
		{"DP rank out of range", func() Config {
			return Config{Engines: mk(engine.Mixed), Source: &sliceSrc{}, DPGroups: group(0, 1)}
		}, "engine 1 is out of range"},
		{"DP rank twice", func() Config {
			return Config{Engines: mk(engine.Mixed, engine.Mixed), Source: &sliceSrc{}, DPGroups: group(0, 0)}
		}, "already in a group"},
		{"DP ranks of two roles", func() Config {
			return Config{Engines: mk(engine.Mixed, engine.Decode), Source: &sliceSrc{}, DPGroups: group(0, 1)}
		}, "share one role"},
		{"DP group without predictor", func() Config {
			return Config{Engines: mk(engine.Mixed), Source: &sliceSrc{}, DPGroups: []DPGroup{{Ranks: []int{0}, Graph: testGraph}}}
		}, "needs ranks, a predictor"},
		{"P/D nodes short", func() Config {
			return Config{Engines: mk(engine.Prefill, engine.Decode), Source: &sliceSrc{}, PD: pdSetup(1)}
		}, "1 network nodes for 2 instances"},
		{"P/D without decode", func() Config {
			return Config{Engines: mk(engine.Prefill, engine.Mixed), Source: &sliceSrc{}, PD: pdSetup(2)}
		}, "at least one decode instance"},
		{"P/D without prefill", func() Config {
			return Config{Engines: mk(engine.Decode), Source: &sliceSrc{}, PD: pdSetup(1)}
		}, "at least one prefill instance"},
		{"endpoint off the network", func() Config {
			c := Config{Engines: mk(engine.Prefill, engine.Decode), Source: &sliceSrc{}, PD: pdSetup(2)}
			c.PD.Nodes[1].Endpoints = []link.EndpointID{9}
			return c
		}, "endpoint 9 is not on the network"},
		{"unknown policy", func() Config {
			c := Config{Engines: mk(engine.Prefill, engine.Decode), Source: &sliceSrc{}, PD: pdSetup(2)}
			c.PD.Config.Policy = Eager + 1
			return c
		}, "unknown handoff policy"},
		{"negative re-prefills", func() Config {
			c := Config{Engines: mk(engine.Prefill, engine.Decode), Source: &sliceSrc{}, PD: pdSetup(2)}
			c.PD.Config.MaxReprefills = -1
			return c
		}, "max_reprefills"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg()
			verr := cfg.Validate()
			sim, err := New(cfg)
			switch {
			case tc.want == "" && (err != nil || verr != nil || sim == nil):
				t.Fatalf("valid config refused: New %v, Validate %v", err, verr)
			case tc.want != "" && (err == nil || verr == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("New: %v, Validate: %v; want an error containing %q", err, verr, tc.want)
			}
		})
	}
}

// must returns v, panicking on err (a call the test expects to succeed).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
