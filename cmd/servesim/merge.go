package main

import (
	"bytes"
	"fmt"

	"github.com/servesim/servesim/internal/sweep"
	"github.com/spf13/cobra"
)

func newMergeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "merge OUT SHARD... | merge OUT DIR | merge OUT 'shard-*.csv'",
		Short: "Join the shard outputs of a sweep into the single-process output",
		Long: `Join the outputs of "servesim sweep --shard i/n" (CSV or JSON) into OUT,
byte for byte the output one process running every point would have
written. A directory argument stands for the *.csv and *.json files in it, a
quoted pattern for its matches; OUT itself is skipped, and "-" writes to
stdout.

It is an error, and OUT is not written, if the shards come from different
sweeps (scenario, grid or flags differ), if two shards hold the same point,
or if a point is missing (a shard failed or was not run).`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := args[0]
			names, err := sweep.ExpandInputs(args[1:], out)
			if err != nil {
				return badInput(fmt.Errorf("merge: %w", err))
			}
			inputs, err := sweep.ReadInputs(names)
			if err != nil {
				return badInput(fmt.Errorf("merge: %w", err))
			}
			var buf bytes.Buffer
			if err := sweep.Merge(&buf, inputs); err != nil {
				return badInput(err)
			}
			if out == "-" {
				_, err := cmd.OutOrStdout().Write(buf.Bytes())
				return err
			}
			w, commit, abort, err := openOutput("merge", out, nil)
			if err != nil {
				return badInput(err)
			}
			defer abort()
			if _, err := w.Write(buf.Bytes()); err != nil {
				return fmt.Errorf("merge: write %s: %w", out, err)
			}
			if err := commit(); err != nil {
				return fmt.Errorf("merge: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "merged %d shard outputs into %s\n", len(names), out)
			return nil
		},
	}
}
