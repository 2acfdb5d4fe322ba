package main

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"
)

// usageError marks a command-line mistake reported by cobra.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

func isUsageError(err error) bool {
	var ue usageError
	return errors.As(err, &ue) ||
		strings.HasPrefix(err.Error(), "unknown command") ||
		strings.HasPrefix(err.Error(), "unknown flag") ||
		strings.HasPrefix(err.Error(), "unknown shorthand flag") ||
		strings.Contains(err.Error(), "flag needs an argument") ||
		strings.HasPrefix(err.Error(), "invalid argument") ||
		strings.HasPrefix(err.Error(), "accepts ")
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "servesim",
		Short: "Discrete-event simulator of LLM serving clusters",
		Long: `servesim predicts how an LLM serving cluster (vLLM-style engines) behaves on a
workload: TTFT, TPOT, end-to-end latency, throughput and KV-cache memory,
from measured step-latency profiles, in seconds on a laptop.

  servesim run                        run the embedded default scenario
  servesim run -c scenario.yaml       run a scenario file (--report FILE.html for charts)
  servesim compare -c pd.yaml         a prefill/decode scenario under every handoff policy
  servesim validate --measured DIR    compare against a measured vLLM run
  servesim sweep / search / merge     capacity planning
  servesim calibrate / catalog        roofline calibration, known hardware and models`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newRunCmd(), newValidateCmd(), newCompareCmd(), newCalibrateCmd(), newConvertCmd(), newCatalogCmd())
	root.AddCommand(newSweepCmd(), newMergeCmd(), newSearchCmd())
	return root
}
