package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "servesim",
		Short: "Discrete-event simulator of LLM serving clusters",
		Long: `servesim predicts how an LLM serving cluster (vLLM-style engines) behaves on a
workload: TTFT, TPOT, end-to-end latency, throughput and KV-cache memory,
from measured step-latency profiles, in seconds on a laptop.

  servesim run                        run the embedded default scenario
  servesim run -c scenario.yaml       run a scenario file (--report FILE.html for charts)
  servesim compare -c a.yaml -c b.yaml variants side by side (or every handoff policy of one P/D scenario)
  servesim validate --measured DIR    compare against a measured vLLM run
  servesim sweep / search / merge     capacity planning
  servesim calibrate / catalog        roofline calibration, known hardware and models
  servesim perfdb                     the per-op kernel database: systems, cross-checks, collectives
  servesim serve -c scenario.yaml     the cluster in real time behind an OpenAI-compatible API

Exit codes: 0 success; 1 internal error (a bug); 2 usage error or bad input;
3 stopped by the eager handoff policy; 130 interrupted (SIGINT/SIGTERM).
See docs/cli.md.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newRunCmd(), newValidateCmd(), newCompareCmd(), newCalibrateCmd(), newConvertCmd(), newCatalogCmd())
	root.AddCommand(newSweepCmd(), newMergeCmd(), newTableCmd(), newSearchCmd(), newPerfDBCmd(), newServeCmd())
	// An unknown command reaches the root as an argument.
	root.Args = func(_ *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageError{fmt.Errorf("unknown command %q for \"servesim\"; run 'servesim --help' for the commands", args[0])}
		}
		return nil
	}
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	typeArgErrors(root)
	return root
}

// typeArgErrors marks the argument-count errors of every command as usage
// errors (exit 2).
func typeArgErrors(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		typeArgErrors(sub)
	}
}

// version is the module version servesim was built from ("devel" for a
// build from a clone), with the VCS revision when the build recorded one.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v + " (" + info.GoVersion + ")"
}
