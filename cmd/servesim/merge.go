package main

import (
	"bytes"
	"fmt"

	"github.com/servesim/servesim/internal/sweep"
	"github.com/spf13/cobra"
)

func newMergeCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "merge -o OUT SHARD... | merge OUT SHARD... (also DIR or 'shard-*.csv' for SHARD...)",
		Short: "Join the shard outputs of a sweep into the single-process output",
		Long: `Join the outputs of "servesim sweep --shard i/n" (CSV or JSON) into OUT
(-o/--output, as sweep names its output; or the first argument), byte for
byte the output one process running every point would have written. A
directory argument stands for the *.csv and *.json files in it, a quoted
pattern for its matches; OUT itself is skipped, and "-" writes to stdout.

It is an error, and OUT is not written, if the shards come from different
sweeps (scenario, grid or flags differ), if two shards hold the same point,
or if a point is missing (a shard failed or was not run).`,
		Args: func(_ *cobra.Command, args []string) error {
			if output != "" {
				if len(args) < 1 {
					return fmt.Errorf("merge -o %s: no shard outputs given; name them (files, a directory or a quoted pattern)", output)
				}
				return nil
			}
			if len(args) < 2 {
				return fmt.Errorf("merge: want OUT and at least one shard output (or -o OUT and the shards), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			out, shards := output, args
			if out == "" {
				out, shards = args[0], args[1:]
			}
			names, err := sweep.ExpandInputs(shards, out)
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
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the merged output to FILE (\"-\": stdout); without it the first argument is OUT")
	return cmd
}
